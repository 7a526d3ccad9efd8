"""Unit checks of the checker on synthetic histories: a clean one passes, and each planted
fault is caught by the check meant for it.

    python3 -m unittest bench/chaos/test_checker.py     (from the repository root)
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from checker import check  # noqa: E402
from synthetic import anomalies, clean_shop  # noqa: E402
# The checks of webhooks, the SSE stream, shops and the COMMIT-cutting proxy run with these,
# and so do the checks of reads and of the read standbys, of each event's actor, of the
# stock ledger, and of checkouts, prices and adjustments.
from test_actors import *  # noqa: E402,F401,F403
from test_checkout import *  # noqa: E402,F401,F403
from test_events import *  # noqa: E402,F401,F403
from test_ledger import *  # noqa: E402,F401,F403
from test_reads import *  # noqa: E402,F401,F403


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
