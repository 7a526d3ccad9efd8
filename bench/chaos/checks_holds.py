"""Checks of holds (docs/domain.md, "Holds"; issue #67), on each shop, from the history's
hold ops (holding.py), the final feed, the final state (every hold the feed placed, read by
its id at the end, and each pet's held units) and the stock ledger:

- placing: each hold acknowledged is in the feed with the lines it asked for and the life
  (`ttlSeconds`) it asked; a hold of the feed that no acknowledged placing was answered with
  is one a placing of unknown outcome may have made (same lines, created while it was
  tried), else no op made it (event-without-change; answered-failed-happened when a refused
  one asked for those lines then: a 503 `upgrade_unfinished` or a 409 that held anyway); one
  hold per key (one-effect-per-key); one hold.placed per hold (one-event-per-change);
- exactly one ending per hold: one hold.released, hold.expired or hold.consumed, the hold
  read at the end ended that way (naming the same order), and its ledger rows as that ending
  writes them (hold-ending, final-state);
- once the clients stopped and every hold's life and the sweepers' bound passed (run.py
  waits for it before reading the final state), no unit is held and no hold is active
  (hold-units-left);
- a consumed hold's order is in the feed with the hold's lines, numbered as the hold's
  (hold-order); its shipDate marker names a checkout of that hold (event-without-change);
- the ledger: per line of each hold, one `held` row (its pet and units, naming the hold) and
  one ending row of the ending's kind (`hold_released`, `hold_expired`, or `hold_committed`
  naming the order and the line), none more; no hold row names a hold the feed never placed,
  and none names no hold (ledger-hold). The balances themselves (held among them) are
  checks_ledger's;
- the timing (checks_hold_times.py): no hold consumed or released after its expiry, none
  expired before it, each expired one ended within the stated bound (the sweep interval and
  a second, outside fault windows; inside one, by the fault's end and 2 s), and every
  answer to a release or checkout of a hold fits when it was sent.
The report gets the counts and the expiry lateness (p50, p99, max).
"""

from collections import Counter, defaultdict

from checks_hold_times import ENDINGS, SLACK_SECONDS, check_follow_ups, check_times
from holding import moment_of
from markers import op_of_ship_date
from model import answered_ids, order_lines

# The ledger row each ending writes per line.
ENDING_ROWS = {"released": "hold_released", "expired": "hold_expired",
               "consumed": "hold_committed"}
HOLD_ROWS = ("held", "hold_released", "hold_expired", "hold_committed")


class Seen:
    """What the feed and the final state say of the shop's holds."""

    def __init__(self, history, final):
        self.placed = defaultdict(list)   # hold id -> its hold.placed events
        self.endings = defaultdict(list)  # hold id -> its ending events, in feed order
        self.orders = {}                  # order id -> its order.placed data
        for event in final.events:
            kind, data = event.get("type"), event.get("data") or {}
            if kind == "hold.placed":
                self.placed[data.get("id")].append(event)
            elif kind in ENDINGS:
                self.endings[data.get("id")].append(event)
            elif kind == "order.placed":
                self.orders.setdefault(data.get("id"), data)
        self.holds = {hold: events[0]["data"] for hold, events in self.placed.items()}
        self.kept = None if final.holds is None else {h.get("id"): h for h in final.holds}
        settings = history.meta.get("settings") or {}
        self.sweep_seconds = settings.get("hold_sweep_ms", 1000) / 1000

    def ending(self, hold_id):
        """(how, the ending's data.ended) of the hold's first ending, or (None, {})."""
        events = self.endings.get(hold_id) or []
        if not events:
            return None, {}
        first = events[0]
        return ENDINGS[first["type"]], first["data"].get("ended") or {}

    def expires(self, hold_id):
        return moment_of((self.holds.get(hold_id) or {}).get("expiresAt"))


def held_lines(hold):
    return [(line.get("petId"), line.get("quantity"))
            for line in sorted(hold.get("lines") or [], key=lambda l: l.get("lineNo", 0))]


def check_holds(history, final, anomalies):
    """Every hold check; returns the report's summary of the shop's holds."""
    seen = Seen(history, final)
    _check_placing(history, seen, anomalies)
    _check_endings(seen, final, anomalies)
    _check_orders(history, seen, anomalies)
    _check_ledger(seen, final, anomalies)
    lateness = check_times(history, seen, anomalies)
    refused_late = check_follow_ups(history, seen, anomalies)
    ended = Counter(ENDINGS[events[0]["type"]] for events in seen.endings.values() if events)
    return {"placed": len(seen.holds), **{how: ended.get(how, 0) for how in ENDING_ROWS},
            "refused_after_expiry": refused_late, **lateness}


def _attempted(history, op):
    calls = history.calls.get(op["op"], [])
    return (calls[0]["sent"], calls[-1]["answered"]) if calls else None


def _may_have_made(history, op, hold):
    """True when `op` asked for `hold`'s lines and was being tried when it was created."""
    window = _attempted(history, op)
    created = moment_of(hold.get("createdAt"))
    return (window is not None and created is not None
            and held_lines(hold) == [(l["petId"], l["quantity"]) for l in op["meta"]["lines"]]
            and window[0] - SLACK_SECONDS <= created <= window[1] + SLACK_SECONDS)


def _check_placing(history, seen, anomalies):
    ops = history.ops_of("place_hold")
    answered = answered_ids(history, "place_hold")
    claimed = {}  # hold id -> the op that made it
    by_outcome = defaultdict(list)
    for op in ops:
        result, call = history.outcome(op)
        by_outcome[result].append(op)
        if result != "ok":
            continue
        ids = sorted(hold for hold, made in answered.items() if op in made)
        hold_id = call["resp"]["id"]
        if len(ids) > 1 or hold_id in claimed:
            anomalies.add("one-effect-per-key", f"place_hold op {op['op']} was answered with "
                          f"holds {ids}" + (f"; hold {hold_id} was op {claimed[hold_id]['op']}'s "
                                            "too" if hold_id in claimed else ""), op=op["op"])
        claimed[hold_id] = op
        hold, meta = seen.holds.get(hold_id), op["meta"]
        asked = [(line["petId"], line["quantity"]) for line in meta["lines"]]
        for where, copy in (("the feed's hold.placed", hold), ("its answer", call["resp"])):
            if copy is None:
                anomalies.add("acknowledged-write-lost", f"hold {hold_id} was acknowledged "
                              f"(op {op['op']}) but the feed has no hold.placed for it",
                              op=op["op"])
                continue
            created, expires = moment_of(copy.get("createdAt")), moment_of(copy.get("expiresAt"))
            life = None if created is None or expires is None else round(expires - created, 3)
            if held_lines(copy) != asked or life != meta["ttlSeconds"]:
                anomalies.add("acknowledged-write-lost", f"hold {hold_id}: {where} holds "
                              f"{held_lines(copy)} for {life} s; op {op['op']} asked "
                              f"{asked} for {meta['ttlSeconds']} s", op=op["op"])
    made_by_open = set()
    for hold_id, hold in sorted(seen.holds.items()):
        if hold_id in claimed:
            continue
        maker = next((op for op in by_outcome["unknown"] if op["op"] not in made_by_open
                      and _may_have_made(history, op, hold)), None)
        if maker is not None:
            made_by_open.add(maker["op"])
            continue
        twice = [op["op"] for op in by_outcome["ok"] if _may_have_made(history, op, hold)]
        refused = [op["op"] for op in by_outcome["failed"] if _may_have_made(history, op, hold)]
        check = ("one-effect-per-key" if twice else
                 "answered-failed-happened" if refused else "event-without-change")
        anomalies.add(check, f"hold {hold_id} ({held_lines(hold)}, created "
                      f"{hold.get('createdAt')}) was made by no placing that may have: "
                      + (f"op {twice} was answered with another hold" if twice else
                         f"op {refused} was refused" if refused else "none asked for it then"),
                      hold=hold_id)
    for hold_id, events in seen.placed.items():
        if len(events) > 1:
            anomalies.add("one-event-per-change", f"hold {hold_id} has {len(events)} "
                          "hold.placed events", ids=[e["id"] for e in events])


def _check_endings(seen, final, anomalies):
    """One ending per hold, the final state agreeing; nothing held at the end."""
    for hold_id in sorted(seen.holds):
        events = seen.endings.get(hold_id, [])
        if len(events) != 1:
            anomalies.add("hold-ending", f"hold {hold_id} (expiring {seen.holds[hold_id].get('expiresAt')}) "
                          + (f"ended {len(events)} times: "
                             + ", ".join(f"{e['type']} (event {e['id']}, at "
                                         f"{(e['data'].get('ended') or {}).get('at')})"
                                         for e in events) if events else "never ended"),
                          hold=hold_id, events=[e["id"] for e in events])
        if seen.kept is None:
            continue
        kept = seen.kept.get(hold_id)
        how, ended = seen.ending(hold_id)
        if kept is None:
            anomalies.add("final-state", f"hold {hold_id} is in the feed but was not read at "
                          "the end", hold=hold_id)
        elif not kept.get("ended"):
            anomalies.add("hold-units-left", f"hold {hold_id} is still active at the end "
                          f"(it expired at {kept.get('expiresAt')}; the final state was read "
                          f"from {final.dumped_at})", hold=hold_id)
        elif (kept["ended"].get("how"), kept["ended"].get("orderId")) != \
                (how, ended.get("orderId")) or held_lines(kept) != held_lines(seen.holds[hold_id]):
            anomalies.add("final-state", f"hold {hold_id} reads {held_lines(kept)} ended "
                          f"{kept['ended']} at the end; the feed placed "
                          f"{held_lines(seen.holds[hold_id])} and ended it {how} {ended}",
                          hold=hold_id)
    for pet, item in sorted(final.inventory.items()):
        if item.get("held"):
            anomalies.add("hold-units-left", f"pet {pet} still has {item['held']} units held "
                          f"at the end (read from {final.dumped_at}), after every hold's life "
                          "and the sweepers' bound", pet=pet)


def _check_orders(history, seen, anomalies):
    """A consumed hold's order: in the feed, with the hold's lines and their numbers, placed
    by a checkout of that hold."""
    for hold_id, events in sorted(seen.endings.items()):
        for event in events:
            if event["type"] != "hold.consumed":
                continue
            order_id = (event["data"].get("ended") or {}).get("orderId")
            order = seen.orders.get(order_id)
            hold = seen.holds.get(hold_id) or event["data"]
            wanted = [(l.get("lineNo"), l.get("petId"), l.get("quantity"))
                      for l in sorted(hold.get("lines") or [], key=lambda l: l.get("lineNo", 0))]
            if order is None or [(l.get("lineNo"), l.get("petId"), l.get("quantity"))
                                 for l in order_lines(order)] != wanted:
                anomalies.add("hold-order", f"hold {hold_id} was consumed by order {order_id}, "
                              + ("which the feed never placed" if order is None else
                                 f"whose lines {order_lines(order)} are not the hold's {wanted}"),
                              hold=hold_id, order=order_id)
                continue
            op = history.ops.get(op_of_ship_date(order.get("shipDate")))
            if op is None or op["kind"] != "hold_checkout" or op["meta"].get("holdId") != hold_id:
                anomalies.add("event-without-change", f"hold {hold_id} was consumed by order "
                              f"{order_id}, which no checkout of the hold placed (its marker "
                              f"names {op and op['kind']} op {op and op['op']})",
                              hold=hold_id, order=order_id)


def _row(m):
    committed = m["kind"] == "hold_committed"
    return (m["kind"], m.get("petId"), m.get("quantity"),
            m.get("orderId") if committed else None, m.get("lineNo") if committed else None)


def _check_ledger(seen, final, anomalies):
    if final.movements is None or not final.ledger_begun:
        return  # no ledger yet: checks_ledger's ledger-gate says none may be written
    rows = defaultdict(list)  # hold id -> its movements
    for movements in final.movements.values():
        for m in movements:
            if m["kind"] in HOLD_ROWS or m.get("holdId") is not None:
                rows[m.get("holdId")].append(m)
    for hold_id, found in sorted(rows.items(), key=lambda item: str(item[0])):
        if hold_id is None or hold_id not in seen.holds:
            anomalies.add("ledger-hold", f"movements {[m['id'] for m in found]} name hold "
                          f"{hold_id}, which the feed never placed",
                          movements=[m["id"] for m in found])
    for hold_id, hold in sorted(seen.holds.items()):
        how, ended = seen.ending(hold_id)
        expected = []
        for line in sorted(hold.get("lines") or [], key=lambda l: l.get("lineNo", 0)):
            pet, units = line.get("petId"), line.get("quantity")
            expected.append(("held", pet, units, None, None))
            if how == "consumed":
                expected.append(("hold_committed", pet, units, ended.get("orderId"),
                                 line.get("lineNo")))
            elif how is not None:
                expected.append((ENDING_ROWS[how], pet, units, None, None))
        found = [_row(m) for m in rows.get(hold_id, [])]
        if sorted(found, key=str) != sorted(expected, key=str):
            anomalies.add("ledger-hold", f"hold {hold_id} ({how or 'never ended'}): expected "
                          f"rows {expected}, the ledger has {found}", hold=hold_id,
                          movements=[m["id"] for m in rows.get(hold_id, [])])
