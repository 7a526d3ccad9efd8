"""Unit checks of the checks of checkouts, prices and adjustments (checks_checkout.py,
checks_prices.py, checks_ledger.check_adjustments) on synthetic histories: a shop that
sells cleanly passes, and each way a checkout, a price or an adjustment can go wrong is
caught.

    python3 -m unittest bench/chaos/test_checkout.py     (from the repository root)
"""

import copy
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from checker import check  # noqa: E402
from synthetic import anomalies, selling_shop  # noqa: E402


def placed_event(shop, order_id):
    return next(e for e in shop.events
                if e["type"] == "order.placed" and e["data"]["id"] == order_id)


class CheckoutTest(unittest.TestCase):
    def setUp(self):
        self.shop = selling_shop()
        self.first, self.second = self.shop.pets[0]["id"], self.shop.pets[1]["id"]

    def test_a_shop_that_sells_cleanly_passes(self):
        self.assertEqual(self.shop.check()["anomalies"], [])
        kinds = {op["kind"] for op in self.shop.records if op.get("t") == "op"}
        self.assertLessEqual({"checkout", "set_price", "adjust"}, kinds)

    def test_an_acknowledged_checkout_missing_a_line_is_caught(self):
        order = self.shop.checkout([(self.first, 1), (self.second, 1)])
        for copy_ in (self.shop.orders[order["id"]], placed_event(self.shop, order["id"])["data"]):
            copy_["lines"].pop()
            copy_["totalAmount"] = copy_["lines"][0]["amount"]
        self.assertIn("acknowledged-write-lost", anomalies(self.shop.check()))

    def test_a_refused_checkout_that_wrote_its_order_and_movements_is_caught(self):
        self.shop.checkout([(self.first, 1)], answers=((409, "total_mismatch"),))
        found = self.shop.check()["anomalies"]
        self.assertEqual(sorted({a["check"] for a in found}), ["answered-failed-happened"])
        # The orders (check_orders) and the movements naming them (check_checkouts).
        self.assertTrue(any("movements" in a["message"] for a in found))

    def test_a_movement_no_order_explains_is_caught(self):
        shop = self.shop
        shop.checkout([(self.first, 1)], answers=((409, "insufficient_stock"),), commit=False)
        shop.records[-1]["resp"]["errors"] = [{"field": "/lines/0/quantity",
                                               "code": "insufficient_stock"}]
        # The refused checkout's units moved anyway, for an order that was never placed.
        shop.stock[self.first] -= 1
        shop.move(self.first, "committed", 1, -1, 1, order=99, line=1)
        shop.event("inventory.updated", {"petId": self.first, "quantity": shop.stock[self.first]})
        self.assertIn("movement-without-order", anomalies(shop.check()))

    def test_two_orders_for_one_checkout_key_are_caught(self):
        order = self.shop.checkout([(self.first, 1), (self.second, 1)])
        twin = dict(copy.deepcopy(order), id=999)
        self.shop.take(twin, None)
        self.assertIn("one-effect-per-key", anomalies(self.shop.check()))

    def test_a_line_sold_at_a_replaced_price_is_caught(self):
        # The plant `price-outside-tx`: the checkout read 1500, then a change to 1800
        # committed before its order did.
        shop = self.shop
        shop.price(self.first, 1800)
        shop.prices[self.first] = 1700
        shop.checkout([(self.first, 1), (self.second, 1)])
        shop.prices[self.first] = 1800
        self.assertEqual(anomalies(shop.check()), ["line-price"])

    def test_an_order_whose_total_is_not_its_lines_is_caught(self):
        order = self.shop.checkout([(self.first, 1), (self.second, 1)])
        for copy_ in (self.shop.orders[order["id"]], placed_event(self.shop, order["id"])["data"]):
            copy_["totalAmount"] += 1
        self.assertIn("order-total", anomalies(self.shop.check()))

    def test_a_checkout_placed_at_another_total_than_expected_is_caught(self):
        self.shop.checkout([(self.first, 1)], expected=1)
        self.assertEqual(anomalies(self.shop.check()), ["order-total"])

    def test_a_basket_naming_a_pet_twice_that_was_taken_is_caught(self):
        # The plant `lines-separately`: the repeated pet is not refused (what its stock then
        # does depends on how the lines are applied; the answer alone is wrong).
        self.shop.checkout([(self.first, 1), (self.first, 2)], repeated=True)
        self.assertIn("checkout-repeated-pet", anomalies(self.shop.check()))

    def test_a_previous_version_node_may_not_know_the_checkout(self):
        shop = self.shop
        shop.records.append({"t": "fault", "kind": "upgrade", "target": "node1", "nodes": [1],
                             "start": shop.clock, "end": shop.clock + 1,
                             "detail": "node1: new -> previous"})
        shop.checkout([(self.first, 1), (self.first, 2)], repeated=True, commit=False,
                      answers=((404, "not_found"), (422, "pet_repeated")))
        shop.records[-2]["node"] = 1
        # (node1 takes no write after the fault, and the fault never heals: not this test's.)
        self.assertNotIn("checkout-repeated-pet", anomalies(shop.check()))
        shop.records[-2]["node"] = 0  # a node of this version does know it
        self.assertIn("checkout-repeated-pet", anomalies(shop.check()))

    def test_a_404_of_the_previous_version_after_a_lost_answer_leaves_the_outcome_open(self):
        # The first attempt committed on a node of this version, its answer lost; the retry
        # met only nodes of the previous version (a rolled-back shop), which know no checkout.
        self.shop.checkout([(self.first, 1)], answers=((None, None), (404, "not_found")))
        self.assertEqual(self.shop.check()["anomalies"], [])
        # A refusal of this version's own does say the op failed: its order is then wrong.
        self.shop.checkout([(self.second, 1)], answers=((None, None), (409, "total_mismatch")))
        self.assertIn("answered-failed-happened", anomalies(self.shop.check()))

    def test_pet_repeated_to_a_basket_without_a_repeat_is_caught(self):
        self.shop.checkout([(self.first, 1)], answers=((422, "pet_repeated"),), commit=False)
        self.assertEqual(anomalies(self.shop.check()), ["unexpected-refusal"])

    def test_a_refusal_that_names_no_line_it_sent_is_caught(self):
        shop = self.shop
        shop.checkout([(self.first, 1)], answers=((409, "insufficient_stock"),), commit=False)
        shop.records[-1]["resp"]["errors"] = [{"field": "/lines/3/quantity",
                                               "code": "insufficient_stock"}]
        shop.checkout([(self.first, 1)], answers=((409, "price_missing"),), commit=False)
        shop.records[-1]["resp"]["errors"] = [{"field": "/lines/0/petId",
                                               "code": "price_missing"}]
        found = [a["check"] for a in shop.check()["anomalies"]]
        self.assertEqual(found, ["checkout-refusal", "checkout-refusal"])

    def test_an_order_line_without_its_movement_is_caught(self):
        order = self.shop.checkout([(self.first, 1), (self.second, 1)])
        self.shop.complete(order)
        sold = self.shop.movements[self.second].pop()
        self.assertEqual(sold["kind"], "sold")
        self.assertEqual(anomalies(self.shop.check()), ["ledger-line", "ledger-state"])

    def test_upgrade_unfinished_once_the_ledger_began_is_caught(self):
        self.shop.checkout([(self.first, 1), (self.second, 1)],
                           answers=((503, "upgrade_unfinished"),), commit=False)
        self.assertEqual(anomalies(self.shop.check()), ["unexpected-refusal"])
        final = self.shop.final()
        final["ledger_begun"] = False
        final["movements"] = {}
        self.assertEqual(check(self.shop.records, final, 10)["anomalies"], [])


class PriceAndAdjustmentTest(unittest.TestCase):
    def setUp(self):
        self.shop = selling_shop()
        self.first, self.second = self.shop.pets[0]["id"], self.shop.pets[1]["id"]

    def test_a_lost_price_change_is_caught(self):
        self.shop.price(self.first, 4242, commit=False)
        self.assertEqual(anomalies(self.shop.check()), ["acknowledged-write-lost"])

    def test_a_price_change_answered_as_refused_that_happened_is_caught(self):
        self.shop.price(self.first, 4242, answers=((412, "precondition_failed"),))
        self.assertEqual(anomalies(self.shop.check()), ["answered-failed-happened"])

    def test_a_price_in_another_currency_is_caught(self):
        final = self.shop.final()
        final["shop"] = {"currency": "JPY"}
        found = {a["check"] for a in check(self.shop.records, final, 10)["anomalies"]}
        self.assertEqual(found, {"currency"})

    def test_an_adjustment_without_its_movement_is_caught(self):
        self.shop.adjust(self.second, 2)
        row = self.shop.movements[self.second].pop()
        self.assertEqual(row["kind"], "adjusted")
        self.assertEqual(anomalies(self.shop.check()),
                         ["ledger-adjustment", "ledger-feed", "ledger-state"])

    def test_an_adjustment_made_twice_is_caught(self):
        # A retry of an adjustment whose answer was lost, had it no guard.
        shop = self.shop
        shop.adjust(self.second, 2, answers=((None, None), (200, None)))
        op = shop.next_op
        shop.stock[self.second] += 2
        shop.event("inventory.updated", {"petId": self.second,
                                         "quantity": shop.stock[self.second]},
                   by=shop.key("adjust"))
        shop.move(self.second, "adjusted", 2, 2, 0, reason=f"chaos adjustment, op {op}")
        self.assertEqual(anomalies(shop.check()),
                         ["answered-failed-happened", "ledger-adjustment"])

    def test_a_pet_updated_that_changes_no_price_is_caught(self):
        pet = next(p for p in self.shop.pets if p["id"] == self.first)
        self.shop.event("pet.updated", copy.deepcopy(pet), by=self.shop.key("set_price"))
        self.assertEqual(anomalies(self.shop.check()), ["event-without-change"])

    def test_a_pet_whose_price_is_not_the_feeds_is_caught(self):
        self.shop.pets[0] = dict(self.shop.pets[0], price={"amount": 1, "currency": "EUR"})
        self.assertEqual(anomalies(self.shop.check()), ["final-state"])

    def test_a_price_change_names_the_key_that_made_it(self):
        shop = self.shop
        shop.price(self.first, 4242)
        shop.events[-1].update(actorid=str(shop.keys[("w1", "staff")]["id"]),
                               actorname=shop.keys[("w1", "staff")]["name"])
        self.assertEqual(anomalies(shop.check()), ["event-actor"])

    def test_checkouts_and_adjustments_must_be_seen_by_plain_reads(self):
        shop = self.shop
        before = shop.stock[self.second]
        shop.adjust(self.second, 4)
        shop.read(f"/v1/inventory/{self.second}",
                  resp={"petId": self.second, "quantity": before + 4, "status": "available"})
        shop.checkout([(self.first, 1), (self.second, 2)])
        shop.read(f"/v1/inventory/{self.second}",
                  resp={"petId": self.second, "quantity": before + 2, "status": "available"})
        self.assertEqual(shop.check()["anomalies"], [])
        shop.read(f"/v1/inventory/{self.second}",
                  resp={"petId": self.second, "quantity": before + 4, "status": "available"})
        self.assertEqual(anomalies(shop.check()), ["stale-read"])


if __name__ == "__main__":
    unittest.main()
