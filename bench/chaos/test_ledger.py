"""Unit checks of the ledger's checks (checks_ledger.py) on synthetic histories: a clean
ledger passes, and each way a ledger can be wrong is caught.

    python3 -m unittest bench/chaos/test_ledger.py     (from the repository root)
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from synthetic import anomalies, clean_shop  # noqa: E402


class LedgerTest(unittest.TestCase):
    def test_a_clean_ledger_passes(self):
        shop = clean_shop()
        order = shop.place(shop.pets[0]["id"], 1)
        shop.complete(order)
        self.assertTrue(shop.movements)
        self.assertEqual(shop.check()["anomalies"], [])

    def test_a_stock_set_that_writes_no_movement_is_caught(self):
        # The negative control `set-without-row`: a set's change of the level is in the
        # feed and the state, not in the ledger.
        shop = clean_shop()
        pet = shop.pets[0]["id"]
        shop.set_stock(pet, 9)
        shop.movements[pet].pop()
        self.assertEqual(anomalies(shop.check()), ["ledger-feed", "ledger-state"])

    def test_a_movement_that_does_not_fit_its_kind_is_caught(self):
        shop = clean_shop()
        movement = shop.movements[shop.pets[0]["id"]][1]
        movement["kind"] = "sold"  # a commitment written as a sale
        self.assertIn("ledger-kind", anomalies(shop.check()))

    def test_balances_that_are_not_the_ledgers_sums_are_caught(self):
        shop = clean_shop()
        shop.movements[shop.pets[0]["id"]][-1]["availableAfter"] += 1
        # A level the ledger records that the feed never showed, too.
        self.assertEqual(anomalies(shop.check()), ["ledger-balance", "ledger-feed"])

    def test_a_ledger_that_goes_negative_is_caught(self):
        shop = clean_shop()
        ledger = shop.movements[shop.pets[0]["id"]]
        first = ledger.pop(0)  # the stock set the rest took units from
        for movement in ledger:
            movement["availableAfter"] -= first["availableChange"]
        self.assertIn("ledger-negative", anomalies(shop.check()))

    def test_movements_out_of_order_are_caught(self):
        shop = clean_shop()
        ledger = shop.movements[shop.pets[0]["id"]]
        ledger[0]["id"], ledger[1]["id"] = ledger[1]["id"], ledger[0]["id"]
        self.assertIn("ledger-order", anomalies(shop.check()))


    def test_a_movement_before_the_upgrade_is_finished_is_caught(self):
        shop = clean_shop()
        final = shop.final()
        final["ledger_begun"] = False
        from checker import check  # noqa: E402
        found = sorted({a["check"] for a in check(shop.records, final, 10)["anomalies"]})
        self.assertEqual(found, ["ledger-gate"])
        shop.movements.clear()
        final = shop.final()
        final["ledger_begun"] = False
        self.assertEqual(check(shop.records, final, 10)["anomalies"], [])


if __name__ == "__main__":
    unittest.main()
