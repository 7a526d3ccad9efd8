"""The selling side of the workload, a part of each writer (clients.Writer): checkouts of
several lines at the prices of the moment, staff changing prices, staff adjusting stock.

Every op is an "op" line saying what it meant and every attempt a "call" line, as for the
other writes; each is retried on any node until an answer is definite:
- a checkout (`POST /v1/store/checkout`) of 1 to 5 lines over the popular pets (the priced
  ones), with an Idempotency-Key and a shipDate marker naming its op, as an order has; most
  carry the `expectedTotal` of the prices the client read just before (a "read_price" op),
  so a price changed meanwhile makes it 409 `total_mismatch`. About one in ten names a pet on
  two lines, which must be refused (422 `pet_repeated`) with nothing written;
- a price change (`PUT /v1/pets/{id}/price`) with the `If-Match` of the price it read;
- an adjustment (`POST /v1/inventory/{id}/adjustments`) with a reason naming its op, and
  always a guard from a fresh read of the stock (its `If-Match`, its level as
  `changeFromQuantity`, or both): a retry of an adjustment that was made but whose answer
  was lost is then refused (412) rather than made twice, and the level it was meant for is
  known, so the checker matches it to its inventory.updated as it does a stock set.
A 404 to any of these writes is a node of the previous version (`--previous-binary`), which
knows none of their routes: the soak deletes no pet, so a node of this version never answers
them 404. Another node is asked, as for an answer that is not definite.
"""

import time

from markers import ship_date_marker

# How many lines a checkout has, and how many units each.
CHECKOUT_LINES = (1, 5)
LINE_UNITS = (1, 2)
REPEATED_PET_SHARE = 0.1    # baskets naming a pet on two lines: refused, a negative control
EXPECTED_TOTAL_SHARE = 0.7  # checkouts sent with the total of the prices just read
# Prices in minor units: a range wide enough that a price never comes back to one a
# pending If-Match names (a retry of a change that was made must be refused, not redone).
PRICE_RANGE = (100, 999_999)
ADJUST_CHANGES = [change for change in range(-3, 7) if change]
UNSERVED = (404,)  # a node that does not know the route
# The keyed writes whose route a node of the previous version does not know (holding.py's
# too): a 404 sends them to another node.
UNSERVED_KINDS = ("checkout", "place_hold", "hold_checkout")
GUARDS = ("if-match", "change-from", "both")


def reason_of(op):
    """An adjustment's reason, naming its op: the ledger's row then names it too."""
    return f"chaos adjustment, op {op}"


class Sales:
    """Methods of clients.Writer (its rng, recorder, history, shop, keys, plant)."""

    def _keyed(self, op, kind, path, body, key):
        """Attempts with `key` as the Idempotency-Key until definite; under the plant
        `retry-drops-key`, every retry goes without it."""
        attempts = []

        def attempt(node):
            drop = self.plant == "retry-drops-key" and attempts
            attempts.append(node)
            return self._write(op, kind, node, "POST", path, key=self.customer_key,
                               body=body, headers=None if drop else {"Idempotency-Key": key})
        return self._until_definite(attempt, UNSERVED if kind in UNSERVED_KINDS else ())

    def _basket(self):
        """Lines over distinct popular pets; now and then one pet twice (`repeated`)."""
        pets = self.shop.popular()
        if not pets:
            return [], False
        count = self.rng.randint(CHECKOUT_LINES[0], min(CHECKOUT_LINES[1], len(pets)))
        lines = [{"petId": pet, "quantity": self.rng.randint(*LINE_UNITS)}
                 for pet in self.rng.sample(pets, count)]
        repeated = self.rng.random() < REPEATED_PET_SHARE
        if repeated:
            twin = {"petId": self.rng.choice(lines)["petId"],
                    "quantity": self.rng.randint(*LINE_UNITS)}
            lines.insert(self.rng.randint(0, len(lines)), twin)
        return lines, repeated

    def _basket_total(self, lines):
        """The total of `lines` at the prices read now (one GET per line), or None."""
        op = self._begin("read_price", petIds=[line["petId"] for line in lines])
        total = 0
        for line in lines:
            answer = self.rec.call(op, "read_price", self.name, self.rng.randrange(self.nodes),
                                   "GET", f"/v1/pets/{line['petId']}/price",
                                   key=self.customer_key)
            if answer.status != 200 or not isinstance(answer.body, dict):
                return None
            total += answer.body["amount"] * line["quantity"]
        return total

    def checkout(self):
        lines, repeated = self._basket()
        if not lines:
            return None
        expected = None
        if not repeated and self.rng.random() < EXPECTED_TOTAL_SHARE:
            expected = self._basket_total(lines)
        op = self.history.next_op_id()
        key = f"{self.run_id}-checkout-{op}"
        body = {"lines": lines, "shipDate": ship_date_marker(op)}
        if expected is not None:
            body["expectedTotal"] = expected
        self.history.write({"t": "op", "op": op, "kind": "checkout", "client": self.name,
                            "at": round(time.time(), 4),
                            "meta": {**body, "idempotencyKey": key, "repeated": repeated}})
        answer = self._keyed(op, "checkout", "/v1/store/checkout", body, key)
        if answer is not None and answer.status == 201:
            self.shop.add_order(answer.body["id"], self.index, lines[0]["petId"])
        return answer

    def set_price(self, pet=None, value=None):
        """GET the price and its ETag, then PUT another with If-Match (none at setup, when
        the pet has no price yet)."""
        pet = pet if pet is not None else self.rng.choice(self.shop.popular() or [None])
        if pet is None:
            return None
        read_op = self._begin("read_price", petIds=[pet])
        current = self.rec.call(read_op, "read_price", self.name,
                                self.rng.randrange(self.nodes), "GET", f"/v1/pets/{pet}/price",
                                key=self.staff_key)
        if current.status == 200 and "etag" in current.headers:
            prior, etag = current.body["amount"], current.headers["etag"]
        elif current.status == 404 and value is not None:
            prior, etag = None, None
        else:
            return None
        while value is None or value == prior:
            value = self.rng.randint(*PRICE_RANGE)
        op = self._begin("set_price", petId=pet, prior=prior, value=value, etag=etag)
        return self._until_definite(lambda node: self._write(
            op, "set_price", node, "PUT", f"/v1/pets/{pet}/price", key=self.staff_key,
            body={"amount": value}, headers={"If-Match": etag} if etag else None), UNSERVED)

    def adjust(self):
        """GET the level and its ETag, then POST an adjustment guarded by either or both."""
        pet = self.shop.pet(self.rng)
        read_op = self._begin("read_for_set", petId=pet)
        current = self.rec.call(read_op, "read_for_set", self.name,
                                self.rng.randrange(self.nodes), "GET", f"/v1/inventory/{pet}",
                                key=self.staff_key)
        if current.status != 200 or "etag" not in current.headers:
            return None
        prior, etag = current.body["quantity"], current.headers["etag"]
        change, guard = self.rng.choice(ADJUST_CHANGES), self.rng.choice(GUARDS)
        # `value` is the level it makes, as a stock set's: the checker matches both alike.
        op = self._begin("adjust", petId=pet, prior=prior, change=change,
                         value=prior + change, guard=guard, etag=etag)
        body = {"change": change, "reason": reason_of(op)}
        if guard != "if-match":
            body["changeFromQuantity"] = prior
        headers = {"If-Match": etag} if guard != "change-from" else None
        return self._until_definite(lambda node: self._write(
            op, "adjust", node, "POST", f"/v1/inventory/{pet}/adjustments",
            key=self.staff_key, body=body, headers=headers), UNSERVED)
