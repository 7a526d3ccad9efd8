"""The workload: writer threads with a realistic mix, and one feed follower per node.

Each logical operation gets an op id and an "op" line in the history saying what it meant
(pet, quantity, idempotency key, the value a stock set wrote and the level it replaced, how a
read was sent...); each HTTP attempt of it is a "call" line. Writes are retried on any answer
that is not definite (no answer, 5xx, 429, 408, 409 idempotency_key_in_use) until one is, or
until the op's retry budget runs out; orders, checkouts and creates retry with the SAME
Idempotency-Key and body. Checkouts, price changes and stock adjustments are in sales.py;
holds, their releases and checkouts in holding.py.
"""

import random
import threading
import time

# Each order's shipDate is unique to its op (markers.py): an order found in the database or
# the feed names the op (and so the idempotency key) that made it.
from holding import Holding
from markers import op_of_ship_date, ship_date_marker  # noqa: F401
from sales import Sales


class Shop:
    """What the clients know of the shop, shared by all writer threads."""

    def __init__(self, category_id, pets):
        self.lock = threading.Lock()
        self.category_id = category_id
        self.pets = list(pets)
        self.seeded = 0  # the first pets, stocked and priced at setup: the contended ones
        self.open_orders = {}  # order id -> (writer index, pet id)
        # The latest moment a hold placed so far may expire (holding.py): the run reads the
        # final state only once it and the sweepers' bound have passed.
        self.hold_horizon = 0.0

    def pet(self, rng):
        with self.lock:
            # Half the time one of the seeded pets: pets created during the run would
            # otherwise spread the load thin, and races for the last unit need a crowd.
            if self.seeded and rng.random() < 0.5:
                return rng.choice(self.pets[:self.seeded])
            return rng.choice(self.pets)

    def popular(self):
        """The pets seeded at setup: the only ones with a price, so the only ones a
        checkout can sell."""
        with self.lock:
            return list(self.pets[:self.seeded])

    def add_pet(self, pet_id):
        with self.lock:
            self.pets.append(pet_id)

    def add_order(self, order_id, writer, pet_id):
        with self.lock:
            self.open_orders[order_id] = (writer, pet_id)

    def close_order(self, order_id):
        with self.lock:
            self.open_orders.pop(order_id, None)

    def extend_hold_horizon(self, moment):
        with self.lock:
            self.hold_horizon = max(self.hold_horizon, moment)

    def some_open_order(self, rng, writer=None):
        with self.lock:
            ids = [oid for oid, (owner, _) in self.open_orders.items()
                   if writer is None or owner == writer]
            return rng.choice(ids) if ids else None


MIX = [  # (operation, weight); checkout, set_price and adjust are in sales.py, place_hold
    # in holding.py (whose follow-ups, a release or a checkout, come on their own time)
    ("place_order", 24), ("checkout", 14), ("cancel_order", 8), ("complete_order", 8),
    ("set_stock", 10), ("adjust", 6), ("set_price", 5), ("create_pet", 3),
    ("create_category", 1), ("read_point", 20), ("read_page", 18), ("place_hold", 6),
]


# How a read is sent on a shop with read standbys (docs/api.md): plain (the default: it sees
# every write acknowledged before it was sent), with the Consistency-Token of this client's
# last write (it sees that write, and what committed before it), or with Max-Staleness: N (it
# sees every write acknowledged N s before it was sent). The checker judges each by its own.
READ_MODES = ("plain", "token", "staleness")


class Writer(Sales, Holding, threading.Thread):
    def __init__(self, index, recorder, history, shop, customer_key, staff_key, run_id,
                 seed, stop, budget, prefix="w", plant=None, read_modes=False):
        super().__init__(name=f"{prefix}{index}", daemon=True)
        self.plant = plant
        self.read_modes = read_modes
        self.token = None  # the Consistency-Token of this client's last acknowledged write
        self.index = index
        self.rec = recorder
        self.history = history
        self.shop = shop
        self.customer_key = customer_key
        self.staff_key = staff_key
        self.run_id = run_id
        self.rng = random.Random(seed)
        self.stop = stop
        self.budget = budget
        self.nodes = len(recorder.addresses)
        self.ops = 0
        self.agenda = []  # [(when, fate, hold)]: the follow-ups of this writer's holds

    def run(self):
        names, weights = zip(*MIX)
        while not self.stop.is_set():
            self.follow_holds()
            kind = self.rng.choices(names, weights)[0]
            getattr(self, kind)()
            self.ops += 1
            time.sleep(self.rng.uniform(0.01, 0.06))

    def _begin(self, kind, **meta):
        op = self.history.next_op_id()
        self.history.write({"t": "op", "op": op, "kind": kind, "client": self.name,
                            "at": round(time.time(), 4), "meta": meta})
        return op

    def _until_definite(self, send, unserved=()):
        """Attempts on random nodes until an answer is definite; None when the budget ran
        out first (the op's outcome stays unknown). A status in `unserved` says the node
        does not serve the route (sales.py): another one is asked, until every node's last
        answer said so. Then no node serves it (all run the previous version), and that
        answer is the op's: a writer that spun out its whole budget instead would take no
        other write while the shop is rolled back."""
        deadline = time.monotonic() + self.budget
        pause = 0.05
        unserving = set()
        while True:
            node = self.rng.randrange(self.nodes)
            answer = send(node)
            if answer.definite and answer.status in unserved:
                unserving.add(node)
                if len(unserving) == self.nodes:
                    return answer
            elif answer.definite:
                return answer
            else:
                unserving.discard(node)
            if time.monotonic() > deadline:
                return None
            time.sleep(pause + self.rng.uniform(0, pause))
            pause = min(pause * 2, 1.0)

    def _write(self, op, kind, node, method, path, key, body=None, headers=None):
        """One attempt of a write; keeps the Consistency-Token of an acknowledged one."""
        answer = self.rec.call(op, kind, self.name, node, method, path, key=key, body=body,
                               headers=headers)
        if answer.ok and answer.headers.get("consistency-token"):
            self.token = answer.headers["consistency-token"]
        return answer

    def _freshness(self):
        """How the next read is sent: (what the op line says of it, its headers or None).
        At random among READ_MODES where the shop has read standbys, plain elsewhere (and
        plain until this client has a token)."""
        if not self.read_modes:
            return {}, None
        mode = self.rng.choice(READ_MODES)
        if mode == "token" and self.token:
            return {"mode": "token", "token": self.token}, {"Consistency-Token": self.token}
        if mode == "staleness":
            seconds = self.rng.randint(1, 3)
            return ({"mode": "staleness", "maxStaleness": seconds},
                    {"Max-Staleness": str(seconds)})
        return {"mode": "plain"}, None

    def place_order(self):
        pet, quantity = self.shop.pet(self.rng), self.rng.randint(1, 3)
        op = self.history.next_op_id()
        key = f"{self.run_id}-order-{op}"
        body = {"petId": pet, "quantity": quantity, "shipDate": ship_date_marker(op)}
        self.history.write({"t": "op", "op": op, "kind": "place_order", "client": self.name,
                            "at": round(time.time(), 4),
                            "meta": {**body, "idempotencyKey": key}})
        answer = self._keyed(op, "place_order", "/v1/store/orders", body, key)
        if answer is not None and answer.status == 201:
            self.shop.add_order(answer.body["id"], self.index, pet)

    def cancel_order(self):
        order = self.shop.some_open_order(self.rng, writer=self.index)
        if order is None:
            return
        op = self._begin("cancel_order", orderId=order)
        answer = self._until_definite(lambda node: self._write(
            op, "cancel_order", node, "DELETE", f"/v1/store/orders/{order}",
            key=self.customer_key))
        if answer is not None:
            self.shop.close_order(order)

    def complete_order(self):
        order = self.shop.some_open_order(self.rng)
        if order is None:
            return
        op = self._begin("complete_order", orderId=order)
        answer = self._until_definite(lambda node: self._write(
            op, "complete_order", node, "PATCH", f"/v1/store/orders/{order}",
            key=self.staff_key, body={"complete": True}))
        if answer is not None:
            self.shop.close_order(order)

    def set_stock(self, pet=None, value=None):
        """GET the level and its ETag, then PATCH a new level with If-Match."""
        pet = pet if pet is not None else self.shop.pet(self.rng)
        read_op = self._begin("read_for_set", petId=pet)
        current = self.rec.call(read_op, "read_for_set", self.name,
                                self.rng.randrange(self.nodes), "GET", f"/v1/inventory/{pet}",
                                key=self.staff_key)
        if current.status != 200 or "etag" not in current.headers:
            return
        prior = current.body["quantity"]
        # Never the level it has: a set that changes nothing records no event, and the
        # checker matches every set to its event by (pet, level before, level after).
        if value is None or value == prior:
            value = self.rng.choice([n for n in range(0, 13) if n != prior])
        etag = current.headers["etag"]
        op = self._begin("set_stock", petId=pet, prior=prior, value=value, etag=etag)
        return self._until_definite(lambda node: self._write(
            op, "set_stock", node, "PATCH", f"/v1/inventory/{pet}",
            key=self.staff_key, body={"quantity": value}, headers={"If-Match": etag}))

    def _create(self, kind, path, body):
        op = self.history.next_op_id()
        key = f"{self.run_id}-{kind}-{op}"
        body = {name: (value.format(op=op) if isinstance(value, str) else value)
                for name, value in body.items()}
        self.history.write({"t": "op", "op": op, "kind": kind, "client": self.name,
                            "at": round(time.time(), 4),
                            "meta": {**body, "idempotencyKey": key}})
        return self._until_definite(lambda node: self._write(
            op, kind, node, "POST", path, key=self.staff_key, body=body,
            headers={"Idempotency-Key": key}))

    def create_pet(self):
        answer = self._create("create_pet", "/v1/pets", {
            "name": f"{self.run_id}-pet-{{op}}", "categoryId": self.shop.category_id})
        if answer is not None and answer.status == 201:
            self.shop.add_pet(answer.body["id"])
        return answer

    def create_category(self):
        return self._create("create_category", "/v1/categories",
                     {"name": f"{self.run_id}-category-{{op}}"})

    def read_point(self):
        pet = self.shop.pet(self.rng)
        order = self.shop.some_open_order(self.rng, writer=self.index)
        path = self.rng.choice(
            [f"/v1/inventory/{pet}", f"/v1/pets?id={pet}"]
            + ([f"/v1/store/orders/{order}"] if order else []))
        meta, headers = self._freshness()
        op = self._begin("read_point", path=path, **meta)
        self.rec.call(op, "read_point", self.name, self.rng.randrange(self.nodes), "GET",
                      path, key=self.customer_key, headers=headers)

    def read_page(self):
        path = self.rng.choice(["/v1/pets?limit=20", "/v1/inventory?limit=50",
                                "/v1/store/orders?limit=20", "/v1/categories?limit=20"])
        meta, headers = self._freshness()
        op = self._begin("read_page", path=path, **meta)
        self.rec.call(op, "read_page", self.name, self.rng.randrange(self.nodes), "GET",
                      path, key=self.customer_key, headers=headers)


class FeedReader(threading.Thread):
    """Follows the feed on one node with after=<last id seen>, as docs/events.md says a
    follower does; the checker replays its pages."""

    def __init__(self, node, recorder, history, staff_key, stop, prefix="feed"):
        super().__init__(name=f"{prefix}{node}", daemon=True)
        self.node = node
        self.rec = recorder
        self.history = history
        self.staff_key = staff_key
        self.stop = stop
        self.cursor = 0

    def run(self):
        while not self.stop.is_set():
            op = self.history.next_op_id()
            answer = self.rec.call(op, "feed", self.name, self.node, "GET",
                                   f"/v1/events?after={self.cursor}&limit=100",
                                   key=self.staff_key)
            if answer.status == 200 and isinstance(answer.body, list) and answer.body:
                self.cursor = int(answer.body[-1]["id"])
                if len(answer.body) == 100:
                    continue
            time.sleep(0.2)
