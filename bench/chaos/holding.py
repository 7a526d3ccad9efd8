"""The holding side of the workload, a part of each writer (clients.Writer): holds with short
lives over the popular (priced) pets, and what becomes of each (docs/domain.md, "Holds").

A hold (`POST /v1/store/holds`, 1 to 3 lines, 2 to 6 s to live) is placed with an
Idempotency-Key and retried on any node until the answer is definite, as a checkout is; its
fate is drawn when it is placed and written in its op line:
- `release`: released (`DELETE /v1/store/holds/{id}`) while it lives;
- `abandon`: left alone, for the sweepers to end at its expiry;
- `checkout`: checked out (`POST /v1/store/holds/{id}/checkout`, keyed, with a shipDate
  marker naming its op as any order's) while it lives; one in five of those is then checked
  out again under another key, which must be refused (a hold becomes one order at most);
- `late_checkout`: checked out on purpose a moment after its `expiresAt` (before or after the
  sweeper came), which must be refused 409 `hold_expired`.
Some releases and checkouts are sent in the last half second of the life, to race the
sweepers. A follow-up waits in the writer's agenda while the writer does other work, so it
may come later than meant (a retry under a fault takes a while): the checker judges each
attempt by when it was sent against the hold's `expiresAt`, never by the fate alone.
A hold refused 503 `upgrade_unfinished` (a database the previous version made) or 404 (a node
of the previous version, which knows no hold) has no follow-up; a 404 sends the attempt to
another node first, as for a checkout.
"""

import datetime
import time

from markers import ship_date_marker
from sales import UNSERVED

HOLD_LIVES = (2, 6)  # ttlSeconds: short, so that hundreds expire within a run
HOLD_LINES = (1, 3)
HOLD_UNITS = (1, 2)
FATES = (("release", 25), ("abandon", 30), ("checkout", 30), ("late_checkout", 15))
EDGE_SHARE = 0.3       # releases and checkouts sent in the last EDGE_SECONDS of the life
EDGE_SECONDS = 0.5
LATE_SECONDS = (0.02, 0.8)  # how long after expiresAt a late checkout is sent
AGAIN_SHARE = 0.2      # holds checked out that are checked out again under another key
# After the clients stop, the final state is read only once every hold placed may have
# expired (Shop.hold_horizon) and this long has passed: the sweepers' bound (their 1 s
# interval and a second) with a second to spare (run.py).
SETTLE_SECONDS = 3.0


def moment_of(text):
    """A timestamp of the service (RFC 3339) as seconds since the epoch, or None."""
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (AttributeError, TypeError, ValueError):
        return None


class Holding:
    """Methods of clients.Writer (its rng, recorder, history, shop, keys, agenda)."""

    def place_hold(self):
        pets = self.shop.popular()
        if not pets:
            return None
        count = self.rng.randint(HOLD_LINES[0], min(HOLD_LINES[1], len(pets)))
        lines = [{"petId": pet, "quantity": self.rng.randint(*HOLD_UNITS)}
                 for pet in self.rng.sample(pets, count)]
        ttl = self.rng.randint(*HOLD_LIVES)
        names, weights = zip(*FATES)
        fate = self.rng.choices(names, weights)[0]
        op = self.history.next_op_id()
        key = f"{self.run_id}-hold-{op}"
        body = {"lines": lines, "ttlSeconds": ttl}
        self.history.write({"t": "op", "op": op, "kind": "place_hold", "client": self.name,
                            "at": round(time.time(), 4),
                            "meta": {**body, "idempotencyKey": key, "fate": fate}})
        answer = self._keyed(op, "place_hold", "/v1/store/holds", body, key)
        # Every attempt was answered by now, so no hold of this op expires later than this.
        self.shop.extend_hold_horizon(time.time() + ttl)
        if answer is None or answer.status != 201 or not isinstance(answer.body, dict):
            return answer
        hold = answer.body
        expires = moment_of(hold.get("expiresAt"))
        if expires is None or fate == "abandon":
            return answer
        if fate == "late_checkout":
            when = expires + self.rng.uniform(*LATE_SECONDS)
        elif self.rng.random() < EDGE_SHARE:
            when = expires - self.rng.uniform(0.0, EDGE_SECONDS)
        else:
            when = time.time() + self.rng.uniform(0.1, 0.6) * ttl
        self.agenda.append((when, fate, hold))
        return answer

    def follow_holds(self):
        """Runs the follow-ups whose time has come, earliest first; those still waiting when
        the clients stop are left to expire."""
        now = time.time()
        due = sorted((entry for entry in self.agenda if entry[0] <= now),
                     key=lambda entry: entry[0])
        if not due:
            return
        self.agenda = [entry for entry in self.agenda if entry[0] > now]
        for _, fate, hold in due:
            if self.stop.is_set():
                return
            if fate == "release":
                self.release_hold(hold, fate)
            else:
                self.check_out_hold(hold, fate)

    def release_hold(self, hold, fate):
        op = self._begin("release_hold", holdId=hold["id"], expiresAt=hold.get("expiresAt"),
                         fate=fate)
        return self._until_definite(lambda node: self._write(
            op, "release_hold", node, "DELETE", f"/v1/store/holds/{hold['id']}",
            key=self.customer_key), UNSERVED)

    def check_out_hold(self, hold, fate, again=False):
        """One checkout of `hold` (its order named by a shipDate marker of this op); a hold
        checked out in time is, now and then, checked out again under another key."""
        op = self.history.next_op_id()
        key = f"{self.run_id}-hold-checkout-{op}"
        body = {"shipDate": ship_date_marker(op)}
        lines = [{"petId": line["petId"], "quantity": line["quantity"]}
                 for line in sorted(hold.get("lines") or [], key=lambda l: l.get("lineNo", 0))]
        self.history.write({"t": "op", "op": op, "kind": "hold_checkout", "client": self.name,
                            "at": round(time.time(), 4),
                            "meta": {**body, "holdId": hold["id"], "lines": lines,
                                     "expiresAt": hold.get("expiresAt"),
                                     "idempotencyKey": key, "fate": fate, "again": again}})
        answer = self._keyed(op, "hold_checkout", f"/v1/store/holds/{hold['id']}/checkout",
                             body, key)
        if answer is not None and answer.status == 201 and isinstance(answer.body, dict):
            self.shop.add_order(answer.body["id"], self.index, lines[0]["petId"])
            if fate == "checkout" and not again and self.rng.random() < AGAIN_SHARE:
                self.check_out_hold(hold, fate, again=True)
        return answer
