"""Synthetic histories for the checker's unit tests: a tiny model of the service that
writes a history, a feed and a final state the way a correct service would; tests then
break one of them."""

import copy
import datetime

from checker import check
from clients import ship_date_marker
from sales import reason_of

# The kinds of op a writer sends with its staff key; the others with its customer key.
STAFF_KINDS = {"complete_order", "set_stock", "create_pet", "create_category", "read_for_set",
               "set_price", "adjust"}
CURRENCY = "EUR"


class Shop:
    """A tiny model of the service that writes a history, a feed and a final state the way
    a correct service would; tests then break one of them."""

    def __init__(self):
        self.records = [{"t": "meta", "run_id": "s1", "settings": {"seed": 1}}]
        self.events, self.orders, self.stock, self.pets = [], {}, {}, []
        self.prices = {}  # pet -> its amount, once priced
        # Each pet's stock ledger, as a correct service writes it with each change, and its
        # held and committed balances.
        self.movements, self.committed, self.held = {}, {}, {}
        self.clock, self.next_op, self.next_order = 1000.0, 0, 0
        # Each client's keys, as the run makes them (key 1 is the admin's): a customer key
        # and a staff key for w0 and w1.
        self.keys = {}
        for client in ("w0", "w1"):
            for role in ("customer", "staff"):
                self.add_key(client, role)

    def add_key(self, client, role):
        key = {"t": "key", "id": len(self.keys) + 2, "name": f"chaos pg {role} {client}",
               "role": role, "client": client}
        self.keys[(client, role)] = key
        self.records.append(key)
        return key

    def key(self, kind, client="w0"):
        """The key `client` sends an op of `kind` with."""
        return self.keys.get((client, "staff" if kind in STAFF_KINDS else "customer"))

    def event(self, kind, data, by=None):
        """An event of the feed, recorded at the clock's time; `by`: the key whose request
        made it (its actor), None for an event without one."""
        moment = datetime.datetime.fromtimestamp(self.clock, datetime.timezone.utc)
        event = {"id": str(len(self.events) + 1), "type": kind, "data": data,
                 "time": moment.isoformat().replace("+00:00", "Z")}
        if by is not None:
            event.update(actorkind="key", actorid=str(by["id"]), actorname=by["name"],
                         actorrole=by["role"], actordoor="api")
        self.events.append(event)
        return event

    def op(self, kind, client="w0", **meta):
        self.next_op += 1
        self.records.append({"t": "op", "op": self.next_op, "kind": kind, "client": client,
                             "meta": meta})
        return self.next_op

    def call(self, op, kind, status, resp=None, code=None, error=None, node=0, took=0.01,
             path="/v1/x", method="POST", headers=None, token=None, client="w0"):
        self.clock += 0.1
        record = {"t": "call", "op": op, "kind": kind, "client": client, "node": node,
                  "sent": self.clock, "answered": self.clock + took,
                  "method": method, "path": path, "status": status, "code": code,
                  "error": error, "resp": resp}
        key = self.key(kind, client)
        if key is not None and kind != "feed":
            record["keyId"] = key["id"]
        if headers:
            record["headers"] = headers
        if token:
            record["token"] = token
        self.records.append(record)
        return record

    def read(self, path, status=200, resp=None, headers=None, kind="read_point", client="w0",
             took=0.01, node=0):
        """One read (GET) and the answer it got; the call's record."""
        op = self.op(kind, client=client, path=path)
        return self.call(op, kind, status, resp, node=node, took=took, path=path,
                         method="GET", headers=headers, client=client)

    def move(self, pet, kind, quantity, available, committed, order=None, line=None,
             reason=None, held=0, hold=None):
        """A movement of `pet`'s ledger, after the change has been applied to the model."""
        ledger = self.movements.setdefault(pet, [])
        self.committed[pet] = self.committed.get(pet, 0) + committed
        self.held[pet] = self.held.get(pet, 0) + held
        ledger.append({"id": sum(len(m) for m in self.movements.values()) + 1, "petId": pet,
                       "kind": kind, "quantity": quantity, "availableChange": available,
                       "heldChange": held, "committedChange": committed,
                       "availableAfter": self.stock[pet], "heldAfter": self.held[pet],
                       "committedAfter": self.committed[pet], "orderId": order,
                       "lineNo": line, "holdId": hold, "reason": reason})

    def line(self, number, pet, quantity):
        """An order's line, at the pet's price of the moment if it has one."""
        line = {"lineNo": number, "petId": pet, "quantity": quantity}
        if pet in self.prices:
            line.update(unitAmount=self.prices[pet], amount=self.prices[pet] * quantity)
        return line

    def order(self, lines, op):
        """A new order of `lines` (pet, quantity), as a correct service makes it."""
        self.next_order += 1
        lines = [self.line(n, pet, q) for n, (pet, q) in enumerate(lines, 1)]
        order = {"id": self.next_order, "petId": lines[0]["petId"],
                 "quantity": lines[0]["quantity"], "shipDate": ship_date_marker(op),
                 "complete": False, "lines": lines}
        if all("unitAmount" in line for line in lines):
            order.update(currency=CURRENCY, totalAmount=sum(l["amount"] for l in lines))
        return order

    def take(self, order, by):
        """The order's placing: its event, and each line's units taken, in line order."""
        self.orders[order["id"]] = order
        self.event("order.placed", copy.deepcopy(order), by=by)
        for line in order["lines"]:
            pet, quantity = line["petId"], line["quantity"]
            self.stock[pet] -= quantity
            self.event("inventory.updated", {"petId": pet, "quantity": self.stock[pet]}, by=by)
            self.move(pet, "committed", quantity, -quantity, quantity, order["id"],
                      line["lineNo"])

    def tokened(self, token):
        """The last write's answer carried this Consistency-Token."""
        self.records[-1]["token"] = token

    def pet(self, stock):
        op = self.op("create_pet", name=f"s1-pet-{self.next_op + 1}", categoryId=1)
        pet_id = len(self.pets) + 1
        pet = {"id": pet_id, "name": f"s1-pet-{op}", "categoryId": 1, "status": "available"}
        self.pets.append(pet)
        self.event("pet.created", pet, by=self.key("create_pet"))
        self.call(op, "create_pet", 201, pet)
        self.stock[pet_id] = 0
        self.set_stock(pet_id, stock)
        return pet_id

    def set_stock(self, pet, value, answers=((200, None),), commit=True):
        op = self.op("set_stock", petId=pet, prior=self.stock[pet], value=value, etag='"e"')
        if commit:
            prior = self.stock[pet]
            self.stock[pet] = value
            self.event("inventory.updated", {"petId": pet, "quantity": value},
                       by=self.key("set_stock"))
            self.move(pet, "set", abs(value - prior), value - prior, 0)
        for status, code in answers:
            self.call(op, "set_stock", status, {"petId": pet, "quantity": value}, code=code)

    def place(self, pet, quantity, answers=((201, None),), commit=True, client="w0",
              node=0):
        op = self.op("place_order", client=client, petId=pet, quantity=quantity,
                     shipDate=ship_date_marker(self.next_op + 1), idempotencyKey="k")
        order = None
        if commit:
            order = self.order([(pet, quantity)], op)
            self.take(order, self.key("place_order", client))
        for status, code in answers:
            self.call(op, "place_order", status, order if status == 201 else {"code": code},
                      code=code, client=client, node=node)
        return order

    def cancel(self, order, answers=((204, None),)):
        op = self.op("cancel_order", orderId=order["id"])
        del self.orders[order["id"]]
        by = self.key("cancel_order")
        self.event("order.cancelled", copy.deepcopy(order), by=by)
        for line in order["lines"]:
            pet, quantity = line["petId"], line["quantity"]
            self.stock[pet] += quantity
            self.event("inventory.updated", {"petId": pet, "quantity": self.stock[pet]}, by=by)
            self.move(pet, "released", quantity, quantity, -quantity, order["id"],
                      line["lineNo"])
        for status, code in answers:
            self.call(op, "cancel_order", status, None, code=code)

    def complete(self, order, answers=((200, None),), commit=True):
        op = self.op("complete_order", orderId=order["id"])
        if commit:
            self.orders[order["id"]]["complete"] = True
            self.event("order.completed", copy.deepcopy(self.orders[order["id"]]),
                       by=self.key("complete_order"))
            for line in order["lines"]:
                self.move(line["petId"], "sold", line["quantity"], 0, -line["quantity"],
                          order["id"], line["lineNo"])
        for status, code in answers:
            self.call(op, "complete_order", status, None, code=code)

    def price(self, pet, amount, answers=((200, None),), commit=True):
        """A price change (`set_price`): its pet.updated carries the pet with its price."""
        op = self.op("set_price", petId=pet, prior=self.prices.get(pet), value=amount,
                     etag='"p"')
        if commit:
            self.prices[pet] = amount
            at = next(i for i, p in enumerate(self.pets) if p["id"] == pet)
            # A new dict: the pet.created event holds the old one.
            self.pets[at] = dict(self.pets[at], price={"amount": amount, "currency": CURRENCY})
            self.event("pet.updated", copy.deepcopy(self.pets[at]), by=self.key("set_price"))
        for status, code in answers:
            self.call(op, "set_price", status, {"petId": pet, "amount": amount}, code=code,
                      method="PUT")

    def checkout(self, lines, answers=((201, None),), commit=True, expected=None,
                 repeated=False, client="w0"):
        """A checkout of `lines` ((pet, quantity) each); the order, when `commit`."""
        body = {"lines": [{"petId": pet, "quantity": q} for pet, q in lines],
                "shipDate": ship_date_marker(self.next_op + 1)}
        if expected is not None:
            body["expectedTotal"] = expected
        op = self.op("checkout", client=client, **body, idempotencyKey=f"c{self.next_op + 1}",
                     repeated=repeated)
        order = None
        if commit:
            order = self.order(lines, op)
            self.take(order, self.key("checkout", client))
        for status, code in answers:
            self.call(op, "checkout", status,
                      copy.deepcopy(order) if status == 201 else {"code": code}, code=code,
                      client=client)
        return order

    def adjust(self, pet, change, answers=((200, None),), commit=True):
        """An adjustment, guarded by the level it read: a movement with its reason."""
        prior = self.stock[pet]
        op = self.op("adjust", petId=pet, prior=prior, change=change, value=prior + change,
                     guard="both", etag='"e"')
        if commit:
            self.stock[pet] += change
            self.event("inventory.updated", {"petId": pet, "quantity": self.stock[pet]},
                       by=self.key("adjust"))
            self.move(pet, "adjusted", abs(change), change, 0, reason=reason_of(op))
        for status, code in answers:
            self.call(op, "adjust", status, {"petId": pet, "quantity": prior + change},
                      code=code)

    def feed_page(self, reader, after, ids, node=0):
        self.call(None, "feed", 200, {"ids": ids}, node=node,
                  path=f"/v1/events?after={after}&limit=100")
        self.records[-1]["client"] = reader

    def final(self):
        inventory = []
        for pet, level in self.stock.items():
            open_orders = any(line["petId"] == pet and not o["complete"]
                              for o in self.orders.values() for line in o["lines"])
            status = "available" if level or not open_orders else "pending"
            inventory.append({"petId": pet, "quantity": level, "status": status,
                              "held": self.held.get(pet, 0)})
        return {"events": self.events, "orders": list(self.orders.values()),
                "inventory": inventory, "pets": self.pets, "categories": [],
                "movements": {str(pet): list(m) for pet, m in self.movements.items()},
                "shop": {"currency": CURRENCY}, "check": {"rc": 0, "output": ""}}

    def check(self):
        return check(self.records, self.final(), deadline=10)


def anomalies(report):
    return sorted({a["check"] for a in report["anomalies"]})


def clean_shop():
    shop = Shop()
    pet = shop.pet(stock=10)
    shop.place(pet, 2)
    # A retry after an outcome_unknown replays the same order.
    shop.place(pet, 1, answers=((503, "outcome_unknown"), (201, None)))
    # Refused for good, and never made.
    shop.place(pet, 50, answers=((409, "insufficient_stock"),), commit=False)
    order = shop.place(pet, 3)
    shop.cancel(order)
    shop.set_stock(pet, 4, answers=((None, None), (412, "precondition_failed")))
    shop.feed_page("feed0", 0, [int(e["id"]) for e in shop.events[:5]])
    shop.feed_page("feed0", 5, [int(e["id"]) for e in shop.events[5:]])
    return shop


def selling_shop():
    """A clean shop that sells: priced pets, checkouts (one refused for want of stock, one
    for a stale total, one that names a pet twice), one cancelled and one completed, a price
    changed, stock adjusted."""
    shop = clean_shop()
    first, second = shop.pets[0]["id"], shop.pet(stock=8)
    shop.price(first, 1500)
    shop.price(second, 250)
    done = shop.checkout([(first, 1), (second, 2)], expected=2000)
    shop.complete(done)
    gone = shop.checkout([(second, 1), (first, 1)],
                         answers=((503, "outcome_unknown"), (201, None)))
    shop.cancel(gone)
    shop.checkout([(first, 1), (second, 99)], answers=((409, "insufficient_stock"),),
                  commit=False)
    shop.records[-1]["resp"]["errors"] = [{"field": "/lines/1/quantity",
                                           "code": "insufficient_stock"}]
    shop.checkout([(first, 1)], expected=1, answers=((409, "total_mismatch"),), commit=False)
    shop.checkout([(first, 1), (first, 2)], answers=((422, "pet_repeated"),), commit=False,
                  repeated=True)
    shop.price(first, 1700, answers=((None, None), (412, "precondition_failed")))
    shop.adjust(second, 3)
    shop.adjust(second, -1, answers=((None, None), (412, "precondition_failed")))
    shop.place(first, 1)
    return shop
