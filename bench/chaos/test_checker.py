"""Unit checks of the checker on synthetic histories: a clean one passes, and each planted
fault is caught by the check meant for it.

    python3 -m unittest bench/chaos/test_checker.py     (from the repository root)
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from checker import check  # noqa: E402
from clients import ship_date_marker  # noqa: E402


class Shop:
    """A tiny model of the service that writes a history, a feed and a final state the way
    a correct service would; tests then break one of them."""

    def __init__(self):
        self.records = [{"t": "meta", "run_id": "s1", "settings": {"seed": 1}}]
        self.events, self.orders, self.stock, self.pets = [], {}, {}, []
        self.clock, self.next_op, self.next_order = 1000.0, 0, 0

    def event(self, kind, data):
        self.events.append({"id": str(len(self.events) + 1), "type": kind, "data": data})

    def op(self, kind, **meta):
        self.next_op += 1
        self.records.append({"t": "op", "op": self.next_op, "kind": kind, "client": "w0",
                             "meta": meta})
        return self.next_op

    def call(self, op, kind, status, resp=None, code=None, error=None, node=0, took=0.01,
             path="/v1/x"):
        self.clock += 0.1
        self.records.append({"t": "call", "op": op, "kind": kind, "client": "w0", "node": node,
                             "sent": self.clock, "answered": self.clock + took,
                             "method": "POST", "path": path, "status": status, "code": code,
                             "error": error, "resp": resp})

    def pet(self, stock):
        op = self.op("create_pet", name=f"s1-pet-{self.next_op + 1}", categoryId=1)
        pet_id = len(self.pets) + 1
        pet = {"id": pet_id, "name": f"s1-pet-{op}", "categoryId": 1, "status": "available"}
        self.pets.append(pet)
        self.event("pet.created", pet)
        self.call(op, "create_pet", 201, pet)
        self.stock[pet_id] = 0
        self.set_stock(pet_id, stock)
        return pet_id

    def set_stock(self, pet, value, answers=((200, None),), commit=True):
        op = self.op("set_stock", petId=pet, prior=self.stock[pet], value=value, etag='"e"')
        if commit:
            self.stock[pet] = value
            self.event("inventory.updated", {"petId": pet, "quantity": value})
        for status, code in answers:
            self.call(op, "set_stock", status, {"petId": pet, "quantity": value}, code=code)

    def place(self, pet, quantity, answers=((201, None),), commit=True):
        op = self.op("place_order", petId=pet, quantity=quantity,
                     shipDate=ship_date_marker(self.next_op + 1), idempotencyKey="k")
        order = None
        if commit:
            self.next_order += 1
            order = {"id": self.next_order, "petId": pet, "quantity": quantity,
                     "shipDate": ship_date_marker(op), "complete": False}
            self.orders[order["id"]] = order
            self.event("order.placed", dict(order))
            self.stock[pet] -= quantity
            self.event("inventory.updated", {"petId": pet, "quantity": self.stock[pet]})
        for status, code in answers:
            self.call(op, "place_order", status, order if status == 201 else {"code": code},
                      code=code)
        return order

    def cancel(self, order, answers=((204, None),)):
        op = self.op("cancel_order", orderId=order["id"])
        del self.orders[order["id"]]
        self.event("order.cancelled", dict(order))
        self.stock[order["petId"]] += order["quantity"]
        self.event("inventory.updated", {"petId": order["petId"],
                                         "quantity": self.stock[order["petId"]]})
        for status, code in answers:
            self.call(op, "cancel_order", status, None, code=code)

    def complete(self, order, answers=((200, None),), commit=True):
        op = self.op("complete_order", orderId=order["id"])
        if commit:
            self.orders[order["id"]]["complete"] = True
            self.event("order.completed", dict(self.orders[order["id"]]))
        for status, code in answers:
            self.call(op, "complete_order", status, None, code=code)

    def feed_page(self, reader, after, ids, node=0):
        self.call(None, "feed", 200, {"ids": ids}, node=node,
                  path=f"/v1/events?after={after}&limit=100")
        self.records[-1]["client"] = reader

    def final(self):
        inventory = []
        for pet, level in self.stock.items():
            open_orders = any(o["petId"] == pet and not o["complete"]
                              for o in self.orders.values())
            status = "available" if level or not open_orders else "pending"
            inventory.append({"petId": pet, "quantity": level, "status": status})
        return {"events": self.events, "orders": list(self.orders.values()),
                "inventory": inventory, "pets": self.pets, "categories": [],
                "check": {"rc": 0, "output": ""}}

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


class CheckerTest(unittest.TestCase):
    def test_a_clean_history_has_no_anomaly(self):
        report = clean_shop().check()
        self.assertEqual(report["anomalies"], [])

    def test_a_write_that_never_got_a_definite_answer_is_flagged_alone(self):
        shop = clean_shop()
        # The client gave up: the order may exist or not, and neither is wrong; giving up
        # is the only anomaly.
        shop.place(shop.pets[0]["id"], 1, answers=((503, "outcome_unknown"),), commit=True)
        shop.place(shop.pets[0]["id"], 1, answers=((None, None),), commit=False)
        self.assertEqual(anomalies(shop.check()), ["write-gave-up"])
        self.assertEqual(len(shop.check()["anomalies"]), 2)

    def test_an_acknowledged_order_that_is_gone_is_caught(self):
        shop = clean_shop()
        lost = next(iter(shop.orders))
        del shop.orders[lost]
        self.assertIn("final-state", anomalies(shop.check()))
        self.assertIn("acknowledged-write-lost", anomalies(shop.check()))

    def test_two_orders_for_one_key_are_caught(self):
        shop = clean_shop()
        order = dict(next(iter(shop.orders.values())), id=999)
        shop.orders[999] = order
        shop.event("order.placed", dict(order))
        self.assertIn("one-effect-per-key", anomalies(shop.check()))

    def test_an_order_answered_as_refused_that_was_made_is_caught(self):
        shop = clean_shop()
        pet = shop.pets[0]["id"]
        shop.place(pet, 1, answers=((409, "insufficient_stock"),), commit=True)
        self.assertIn("answered-failed-happened", anomalies(shop.check()))

    def test_unavailable_means_not_made(self):
        shop = clean_shop()
        pet = shop.pets[0]["id"]
        shop.place(pet, 1, answers=((503, "unavailable"),), commit=True)
        self.assertIn("answered-failed-happened", anomalies(shop.check()))

    def test_stock_that_does_not_add_up_is_caught(self):
        shop = clean_shop()
        shop.stock[shop.pets[0]["id"]] += 1
        self.assertIn("stock-arithmetic", anomalies(shop.check()))

    def test_a_lost_stock_set_is_caught(self):
        shop = clean_shop()
        shop.set_stock(shop.pets[0]["id"], 9, commit=False)
        self.assertIn("acknowledged-write-lost", anomalies(shop.check()))

    def test_a_reader_that_skipped_an_event_is_caught(self):
        shop = clean_shop()
        shop.feed_page("feed1", 0, [1, 2, 4])
        self.assertIn("feed-skipped", anomalies(shop.check()))

    def test_ids_going_backwards_are_caught(self):
        shop = clean_shop()
        shop.feed_page("feed1", 0, [1, 3, 2])
        self.assertIn("feed-order", anomalies(shop.check()))

    def test_an_event_a_reader_saw_that_vanished_is_caught(self):
        shop = clean_shop()
        shop.feed_page("feed1", 0, [1, 2, 3, 999])
        self.assertIn("feed-vanished", anomalies(shop.check()))

    def test_a_500_and_a_slow_answer_are_caught(self):
        shop = clean_shop()
        op = shop.op("read_point", path="/v1/pets?id=1")
        shop.call(op, "read_point", 500, {"code": "internal"}, code="internal")
        shop.call(op, "read_point", 200, {}, took=12.0)
        self.assertEqual(anomalies(shop.check()), ["deadline", "no-500"])

    def test_healing_is_measured_and_a_fault_that_never_heals_is_caught(self):
        shop = clean_shop()
        shop.records.append({"t": "fault", "kind": "kill_node", "target": "node0",
                             "nodes": [0], "start": 1000.0, "end": 1000.5})
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertIn("kill_node", report["healing_seconds"])
        shop.records.append({"t": "fault", "kind": "kill_node", "target": "node1",
                             "nodes": [1], "start": 1000.0, "end": 1000.5})
        self.assertIn("never-healed", anomalies(shop.check()))

    def test_cancels_and_completions_are_judged(self):
        shop = clean_shop()
        pet = shop.pets[0]["id"]
        done = shop.place(pet, 1)
        shop.complete(done)
        # A cancel of a complete order is refused and changes nothing.
        op = shop.op("cancel_order", orderId=done["id"])
        shop.call(op, "cancel_order", 409, None, code="order_not_cancellable")
        self.assertEqual(shop.check()["anomalies"], [])
        lost = shop.place(pet, 1)
        shop.complete(lost, commit=False)
        self.assertIn("acknowledged-write-lost", anomalies(shop.check()))

    def test_a_cancel_answered_as_refused_that_happened_is_caught(self):
        shop = clean_shop()
        order = shop.place(shop.pets[0]["id"], 1)
        shop.cancel(order, answers=((503, "unavailable"),))
        self.assertIn("answered-failed-happened", anomalies(shop.check()))

    def test_a_404_after_a_lost_answer_leaves_a_cancel_unknown(self):
        shop = clean_shop()
        order = shop.place(shop.pets[0]["id"], 1)
        shop.cancel(order, answers=((None, None), (404, "not_found")))
        self.assertEqual(shop.check()["anomalies"], [])

    def test_a_pet_made_twice_for_one_key_is_caught(self):
        shop = clean_shop()
        twin = dict(shop.pets[0], id=77)
        shop.pets.append(twin)
        shop.event("pet.created", twin)
        shop.stock[77] = 0
        self.assertIn("one-effect-per-key", anomalies(shop.check()))

    def test_a_refusal_no_valid_request_gets_is_caught(self):
        shop = clean_shop()
        op = shop.op("read_point", path="/v1/pets?id=1")
        shop.call(op, "read_point", 401, {"code": "unauthorized"}, code="unauthorized")
        self.assertEqual(anomalies(shop.check()), ["unexpected-refusal"])

    def test_a_failed_petstore_check_is_an_anomaly(self):
        shop = clean_shop()
        final = shop.final()
        final["check"] = {"rc": 1, "output": "pet 1: stock below zero"}
        self.assertIn("petstore-check",
                      [a["check"] for a in check(shop.records, final, 10)["anomalies"]])


if __name__ == "__main__":
    unittest.main()
