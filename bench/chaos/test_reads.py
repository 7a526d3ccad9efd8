"""Unit checks of the read checks (checks_reads.py) on synthetic histories (run by
test_checker.py): each kind of read that sees what it must passes, and one that shows an
older state is caught by the check meant for how it was sent; and a run whose reads never
went to a standby is caught."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import plants  # noqa: E402
from api import Answer, trim  # noqa: E402
from report import render  # noqa: E402
from synthetic import anomalies, clean_shop  # noqa: E402

# clean_shop()'s pet 1 ends with 4 in stock (a set whose answer was lost, so not
# acknowledged); its orders 1 and 2 are open, order 3 was cancelled (acknowledged).
PET = 1


def stock(quantity, pet=PET):
    return {"petId": pet, "quantity": quantity, "status": "available"}


def page(items, more=False):
    return {"count": len(items), "items": items, "more": more}


class PlainReads(unittest.TestCase):
    def test_reads_that_see_every_acknowledged_write_pass(self):
        shop = clean_shop()
        shop.read(f"/v1/inventory/{PET}", resp=stock(4))
        shop.read(f"/v1/inventory/{PET}", resp=stock(4), kind="read_for_set")
        shop.read(f"/v1/pets?id={PET}", resp=page([PET]))
        shop.read("/v1/store/orders/1", resp={"id": 1, "complete": False})
        shop.read("/v1/store/orders/3", status=404, resp={"code": "not_found"})
        shop.read("/v1/inventory?limit=50", resp=page([[PET, 4]]), kind="read_page")
        shop.read("/v1/pets?limit=20", resp=page([PET]), kind="read_page")
        shop.read("/v1/store/orders?limit=20", resp=page([[1, False], [2, False]]),
                  kind="read_page")
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertEqual(report["reads"]["checked"], {"plain": 8})

    def test_a_level_older_than_an_acknowledged_set_is_a_stale_read(self):
        shop = clean_shop()
        shop.set_stock(PET, 9)
        shop.read(f"/v1/inventory/{PET}", resp=stock(9))
        self.assertEqual(shop.check()["anomalies"], [])
        shop.read(f"/v1/inventory/{PET}", resp=stock(4))
        report = shop.check()
        self.assertEqual(anomalies(report), ["stale-read"])
        self.assertIn("set_stock op", report["anomalies"][0]["message"])

    def test_a_read_sent_before_a_write_was_answered_may_show_either_state(self):
        shop = clean_shop()
        op = shop.op("set_stock", petId=PET, prior=4, value=9, etag='"e"')
        shop.stock[PET] = 9
        shop.move(PET, "set", 5, 5, 0)
        shop.event("inventory.updated", {"petId": PET, "quantity": 9},
                   by=shop.key("set_stock"))
        shop.call(op, "set_stock", 200, stock(9), took=1.0)
        shop.read(f"/v1/inventory/{PET}", resp=stock(4))
        shop.read(f"/v1/inventory/{PET}", resp=stock(9))
        self.assertEqual(shop.check()["anomalies"], [])

    def test_a_state_never_had_or_from_a_write_sent_after_the_answer_is_unexplained(self):
        shop = clean_shop()
        shop.read(f"/v1/inventory/{PET}", resp=stock(11))
        self.assertEqual(anomalies(shop.check()), ["read-unexplained"])
        shop = clean_shop()
        shop.read(f"/v1/inventory/{PET}", resp=stock(9))  # before the set to 9 was sent
        shop.set_stock(PET, 9)
        self.assertEqual(anomalies(shop.check()), ["read-unexplained"])

    def test_orders_read_older_than_their_place_complete_or_cancel_are_caught(self):
        shop = clean_shop()
        order = shop.place(PET, 1)
        path = f"/v1/store/orders/{order['id']}"
        shop.read(path, resp={"id": order["id"], "complete": False})
        self.assertEqual(shop.check()["anomalies"], [])
        shop.read(path, status=404, resp={"code": "not_found"})
        self.assertEqual(anomalies(shop.check()), ["stale-read"])

        shop = clean_shop()
        order = shop.place(PET, 1)
        shop.complete(order)
        path = f"/v1/store/orders/{order['id']}"
        shop.read(path, resp={"id": order["id"], "complete": True})
        self.assertEqual(shop.check()["anomalies"], [])
        shop.read(path, resp={"id": order["id"], "complete": False})
        self.assertEqual(anomalies(shop.check()), ["stale-read"])

        shop = clean_shop()
        shop.read("/v1/store/orders/3", resp={"id": 3, "complete": False})  # cancelled
        self.assertEqual(anomalies(shop.check()), ["stale-read"])

    def test_pages_are_judged_item_by_item_and_by_what_they_leave_out(self):
        shop = clean_shop()
        shop.set_stock(PET, 9)
        shop.read("/v1/inventory?limit=50", resp=page([[PET, 4]]), kind="read_page")
        self.assertEqual(anomalies(shop.check()), ["stale-read"])

        shop = clean_shop()
        second = shop.pet(stock=3)
        # A full page with a next link says nothing of the pets after it.
        shop.read("/v1/pets?limit=1", resp=page([PET], more=True), kind="read_page")
        shop.read("/v1/pets?limit=20", resp=page([PET, second]), kind="read_page")
        self.assertEqual(shop.check()["anomalies"], [])
        shop.read("/v1/pets?limit=20", resp=page([PET]), kind="read_page")
        self.assertEqual(anomalies(shop.check()), ["stale-read"])

        shop = clean_shop()
        shop.read("/v1/store/orders?limit=20", resp=page([[1, False]]), kind="read_page")
        shop.read("/v1/store/orders?limit=20", resp=page([[1, False], [2, False], [3, False]]),
                  kind="read_page")
        report = shop.check()
        self.assertEqual(anomalies(report), ["stale-read"])
        self.assertEqual(len(report["anomalies"]), 2)
        # Another customer's list leaves these orders out rightly.
        shop = clean_shop()
        shop.read("/v1/store/orders?limit=20", resp=page([]), kind="read_page", client="w1")
        self.assertEqual(shop.check()["anomalies"], [])


class TokenReads(unittest.TestCase):
    def shop_with_token(self):
        """w0's set to 6 was answered with token 1/B; another set (to 2) was acknowledged
        after the first was sent."""
        shop = clean_shop()
        shop.set_stock(PET, 6)
        shop.tokened("1/B")
        shop.set_stock(PET, 2)
        return shop

    def test_a_token_read_must_see_the_write_that_gave_the_token_only(self):
        shop = self.shop_with_token()
        token = {"Consistency-Token": "1/B"}
        shop.read(f"/v1/inventory/{PET}", resp=stock(6), headers=token)
        shop.read(f"/v1/inventory/{PET}", resp=stock(2), headers=token)
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertEqual(report["reads"]["checked"], {"token": 2})
        shop.read(f"/v1/inventory/{PET}", resp=stock(4), headers=token)
        self.assertEqual(anomalies(shop.check()), ["stale-token-read"])

    def test_what_a_token_read_may_show_a_plain_read_may_not(self):
        shop = self.shop_with_token()
        shop.read(f"/v1/inventory/{PET}", resp=stock(6))
        self.assertEqual(anomalies(shop.check()), ["stale-read"])

    def test_a_token_read_sees_what_was_acknowledged_before_its_write_was_sent(self):
        shop = clean_shop()
        order = shop.place(PET, 1)  # acknowledged before the tokened write was sent
        shop.set_stock(PET, 9)
        shop.tokened("1/C")
        shop.read(f"/v1/store/orders/{order['id']}", status=404, resp={"code": "not_found"},
                  headers={"Consistency-Token": "1/C"})
        self.assertEqual(anomalies(shop.check()), ["stale-token-read"])

    def test_a_token_no_write_carried_requires_nothing_and_is_counted(self):
        shop = clean_shop()
        shop.read(f"/v1/inventory/{PET}", resp=stock(10), headers={"Consistency-Token": "9/9"})
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertEqual(report["reads"]["tokens_unmatched"], 1)


class BoundedStalenessReads(unittest.TestCase):
    def test_a_read_must_see_what_was_acknowledged_more_than_its_bound_before(self):
        shop = clean_shop()
        shop.set_stock(PET, 9)
        shop.clock += 5
        bound = {"Max-Staleness": "2"}
        shop.read(f"/v1/inventory/{PET}", resp=stock(4), headers=bound)
        self.assertEqual(anomalies(shop.check()), ["staleness-bound-exceeded"])

    def test_writes_within_the_bound_may_be_missed(self):
        shop = clean_shop()
        shop.set_stock(PET, 9)
        shop.clock += 5
        shop.set_stock(PET, 3)
        shop.clock += 1
        shop.read(f"/v1/inventory/{PET}", resp=stock(9), headers={"Max-Staleness": "2"})
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertEqual(report["reads"]["checked"], {"staleness": 1})
        self.assertEqual(report["reads"]["older_than_plain"], {"staleness": 1})
        self.assertIn("older than a plain read may show: staleness 1", render(report))
        shop.read(f"/v1/inventory/{PET}", resp=stock(9))
        self.assertEqual(anomalies(shop.check()), ["stale-read"])


def metrics(shop, node, at, starts, reads, synchronous=None):
    shop.records.append({"t": "metrics", "node": node, "at": at, "starts": starts,
                         "reads": reads, "lag": {"replica-1": 0}, "up": {"replica-1": 1},
                         "synchronous": synchronous or {}})


class StandbyReads(unittest.TestCase):
    def shop_with_replicas(self):
        shop = clean_shop()
        shop.records.append({"t": "replicas", "servers": {"replica-1": "pg-c",
                                                          "replica-2": "the pair's standby"}})
        return shop

    def test_reads_all_on_the_primary_with_standbys_configured_are_caught(self):
        shop = self.shop_with_replicas()
        metrics(shop, 0, 1.0, 1, {"primary": 10, "replica-1": 0})
        metrics(shop, 0, 2.0, 1, {"primary": 20, "replica-1": 0})
        metrics(shop, 0, 3.0, 2, {"primary": 5})  # restarted: counted from 0 again
        report = shop.check()
        self.assertEqual(anomalies(report), ["reads-never-on-standby"])
        self.assertEqual(report["reads"]["by_server"]["total"], {"primary": 25, "replica-1": 0})

    def test_reads_on_a_standby_pass_and_are_reported(self):
        shop = self.shop_with_replicas()
        metrics(shop, 0, 1.0, 1, {"primary": 10})
        metrics(shop, 1, 1.5, 1, {"primary": 3, "replica-1": 7})
        metrics(shop, 1, 2.5, 1, {"primary": 4, "replica-1": 2})  # fewer: a restart too
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertEqual(report["reads"]["by_server"]["total"],
                         {"primary": 17, "replica-1": 9})
        self.assertIn("replica-1 9", render(report))

    def test_scrapes_that_found_a_synchronous_standby_are_counted_and_reported(self):
        shop = self.shop_with_replicas()
        metrics(shop, 0, 1.0, 1, {"primary": 1, "replica-2": 5}, {"replica-2": 1})
        metrics(shop, 0, 2.0, 1, {"primary": 2, "replica-2": 9},
                {"replica-1": 0, "replica-2": 0})
        metrics(shop, 1, 2.0, 1, {"primary": 1, "replica-2": 4},
                {"replica-1": 0, "replica-2": 1})
        report = shop.check()
        self.assertEqual(report["reads"]["by_server"]["synchronous_scrapes"],
                         {"scrapes": 3, "with_one": 2})
        self.assertIn("in 2 of 3 scrapes", render(report))

    def test_no_metrics_at_all_is_caught_and_no_standbys_asks_nothing(self):
        self.assertEqual(anomalies(self.shop_with_replicas().check()),
                         ["reads-never-on-standby"])
        shop = clean_shop()
        metrics(shop, 0, 1.0, 1, {"primary": 10})
        self.assertEqual(shop.check()["anomalies"], [])


class ReadRecords(unittest.TestCase):
    def test_a_page_keeps_what_each_item_shows_and_whether_more_follow(self):
        orders = Answer(200, [{"id": 3, "petId": 1, "quantity": 2, "complete": True}],
                        {"link": '</v1/store/orders?limit=1&cursor=k3>; rel="next"'})
        self.assertEqual(trim("read_page", orders),
                         {"count": 1, "items": [[3, True]], "more": True})
        levels = Answer(200, [{"petId": 4, "quantity": 7, "status": "available"}])
        self.assertEqual(trim("read_page", levels),
                         {"count": 1, "items": [[4, 7]], "more": False})
        pets = Answer(200, [{"id": 5, "name": "x", "status": "available"}])
        self.assertEqual(trim("read_point", pets)["items"], [5])

    def test_the_negative_controls_run_their_own_binaries_on_the_postgresql_shop_only(self):
        for plant in ("replica-unchecked", "shared-answer-too-early"):
            self.assertIn(plant, plants.PLANTS)
            self.assertEqual(plants.BUILT_PLANTS[plant], ("pg",))
            self.assertEqual(plants.plant_binary(plant),
                             os.path.join("target", "chaos-plant", f"petstore-{plant}"))
            self.assertEqual(plants.binary_for(plant, "/nowhere", "release", "sqlite"),
                             "release")


if __name__ == "__main__":
    unittest.main()
