"""Unit checks of the actor check (checks_actors.py) on synthetic histories: each event must
name the key its operation was sent with, through /v1; one without an actor only where a
node of the previous version may have written it. Each shows a clean case passes and a
broken one is caught.

    python3 -m unittest bench/chaos/test_actors.py     (from the repository root)
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from checks_actors import ACTOR_FIELDS  # noqa: E402
from synthetic import anomalies, clean_shop  # noqa: E402
from test_events import deliver, deliver_all, subscribe  # noqa: E402


def first(shop, kind):
    return next(e for e in shop.events if e["type"] == kind)


def strip(event):
    """The event as a node of the previous version records it: no actor."""
    for field in ACTOR_FIELDS:
        event.pop(field, None)
    return event


def upgrade(shop, node, way, start, end):
    """An upgrade fault of the nemesis: `way` is "new -> previous" or "previous -> new"."""
    shop.records.append({"t": "fault", "kind": "upgrade", "target": f"node{node}",
                         "nodes": [node], "start": start, "end": end,
                         "detail": f"node{node}: {way}", "failed": None})


def on_previous_node1(shop):
    """node1 runs the previous version from 900 on (before any call of the shop); an order
    through it (with its actor: the old node may also have passed it on) shows it serves."""
    upgrade(shop, 1, "new -> previous", 900.0, 900.5)
    shop.place(shop.pets[0]["id"], 1, node=1)


class ActorChecks(unittest.TestCase):
    def test_events_naming_the_key_their_op_was_sent_with_pass(self):
        shop = clean_shop()
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        actors = report["actors"]
        self.assertEqual(actors["events"], len(shop.events))
        self.assertEqual(actors["by_operation"], len(shop.events))  # each tied to its op
        self.assertEqual(actors["unknown_allowed"], 0)
        # Another writer's order names that writer's customer key, not w0's.
        shop.place(shop.pets[0]["id"], 1, client="w1")
        self.assertEqual(shop.check()["anomalies"], [])
        self.assertEqual(first(shop, "order.placed")["actorname"], "chaos pg customer w0")
        self.assertEqual(shop.events[-2]["actorname"], "chaos pg customer w1")

    def test_another_key_is_caught(self):
        shop = clean_shop()
        placed = first(shop, "order.placed")
        staff = shop.keys[("w0", "staff")]  # w0's other key: right client, wrong key
        placed.update(actorid=str(staff["id"]), actorname=staff["name"], actorrole="staff")
        report = shop.check()
        self.assertEqual(anomalies(report), ["event-actor"])
        self.assertEqual(len(report["anomalies"]), 1)
        message = report["anomalies"][0]["message"]
        self.assertIn(f"event {placed['id']} (order.placed", message)
        self.assertIn("expected key 2 (chaos pg customer w0, customer) through api", message)
        self.assertIn("found key 3 (chaos pg staff w0, staff) through api", message)
        # Another client's key of the same role: caught too.
        shop = clean_shop()
        other = shop.keys[("w1", "customer")]
        first(shop, "order.placed").update(actorid=str(other["id"]), actorname=other["name"])
        self.assertEqual(anomalies(shop.check()), ["event-actor"])
        # Its id off by one, name and role right: caught.
        shop = clean_shop()
        first(shop, "order.placed")["actorid"] = "3"
        self.assertEqual(anomalies(shop.check()), ["event-actor"])
        # The right id under another name: caught.
        shop = clean_shop()
        first(shop, "pet.created")["actorname"] = "chaos pg staff w1"
        self.assertEqual(anomalies(shop.check()), ["event-actor"])

    def test_the_wrong_door_is_caught(self):
        shop = clean_shop()
        cancelled = first(shop, "order.cancelled")
        cancelled["actordoor"] = "console"
        report = shop.check()
        self.assertEqual(anomalies(report), ["event-actor"])
        self.assertIn("through console", report["anomalies"][0]["message"])

    def test_the_stock_change_of_an_order_names_the_order_s_key(self):
        shop = clean_shop()
        # The inventory.updated after the first order.placed: the order's, not a set's.
        placed = first(shop, "order.placed")
        after = shop.events[int(placed["id"])]
        self.assertEqual(after["type"], "inventory.updated")
        staff = shop.keys[("w0", "staff")]
        after.update(actorid=str(staff["id"]), actorname=staff["name"], actorrole="staff")
        self.assertEqual(anomalies(shop.check()), ["event-actor"])

    def test_a_missing_actor_on_a_node_of_this_version_is_caught(self):
        shop = clean_shop()
        placed = strip(first(shop, "order.placed"))
        report = shop.check()
        self.assertEqual(anomalies(report), ["event-actor-unknown"])
        self.assertIn(f"event {placed['id']} (order.placed", report["anomalies"][0]["message"])
        # Another node on the previous version does not excuse it: this op never went there.
        on_previous_node1(shop)
        self.assertEqual(anomalies(shop.check()), ["event-actor-unknown"])

    def test_a_missing_actor_where_an_attempt_went_to_a_previous_version_node_passes(self):
        shop = clean_shop()
        shop.set_stock(shop.pets[0]["id"], 12)  # enough for every order below
        on_previous_node1(shop)
        order = shop.place(shop.pets[0]["id"], 1, node=1)
        strip(shop.events[-2])  # its order.placed and inventory.updated, by the old node
        strip(shop.events[-1])
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertEqual(report["actors"]["unknown_allowed"], 2)
        # One attempt there, the retry that made it on node0: it may still be the old one's.
        shop.place(shop.pets[0]["id"], 1, answers=((None, None),), node=1)
        shop.call(shop.next_op, "place_order", 201, dict(shop.orders[order["id"] + 1]),
                  node=0)
        strip(shop.events[-2])
        self.assertEqual(shop.check()["anomalies"], [])
        # Back on this version, the node records actors again.
        upgrade(shop, 1, "previous -> new", shop.clock + 1, shop.clock + 2)
        shop.clock += 3
        shop.place(shop.pets[0]["id"], 1, node=1)
        strip(shop.events[-2])
        shop.place(shop.pets[0]["id"], 1)  # node0 takes a write after that fault too
        self.assertEqual(anomalies(shop.check()), ["event-actor-unknown"])

    def test_a_wrong_actor_is_caught_on_a_previous_version_node_too(self):
        shop = clean_shop()
        on_previous_node1(shop)
        shop.place(shop.pets[0]["id"], 1, node=1)
        shop.events[-2]["actordoor"] = "console"
        self.assertEqual(anomalies(shop.check()), ["event-actor"])

    def test_an_event_no_op_explains_names_one_of_the_shop_s_keys(self):
        shop = clean_shop()
        pet = shop.pets[0]["id"]
        change = {"petId": pet, "from": "available", "to": "pending"}
        shop.event("pet.status_changed", change, by=shop.keys[("w1", "staff")])
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertEqual(report["actors"]["other"], 1)
        shop.events[-1]["actorid"] = "99"  # no key of the run
        self.assertEqual(anomalies(shop.check()), ["event-actor"])
        shop.events[-1].update(actorid=None, actorname=None, actorrole=None,
                               actordoor=None, actorkind="operator")
        self.assertEqual(anomalies(shop.check()), ["event-actor"])
        strip(shop.events[-1])
        self.assertEqual(anomalies(shop.check()), ["event-actor-unknown"])
        on_previous_node1(shop)  # a node of the previous version ran when it was written
        self.assertEqual(shop.check()["anomalies"], [])

    def test_a_history_that_records_no_key_is_not_checked(self):
        shop = clean_shop()
        shop.records = [r for r in shop.records if r["t"] != "key"]
        strip(first(shop, "order.placed"))
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertEqual(report["actors"]["events"], 0)


class WebhookActorChecks(unittest.TestCase):
    def test_a_delivery_carries_the_feed_s_actor(self):
        shop = clean_shop()
        subscribe(shop)
        deliver_all(shop)
        self.assertEqual(shop.check()["anomalies"], [])
        placed = first(shop, "order.placed")
        deliver(shop, dict(placed, actordoor="console"))
        report = shop.check()
        self.assertEqual(anomalies(report), ["webhook-actor"])
        self.assertIn("through console, the final feed's copy key 2",
                      report["anomalies"][0]["message"])

    def test_a_delivery_without_an_actor_only_from_a_previous_version_node(self):
        for received, expected in ((950.0, []), (850.0, ["webhook-actor"])):
            shop = clean_shop()
            on_previous_node1(shop)  # from 900 on
            subscribe(shop)
            deliver_all(shop)
            deliver(shop, strip(dict(first(shop, "order.placed"))), at=received)
            self.assertEqual(anomalies(shop.check()), expected, received)


if __name__ == "__main__":
    unittest.main()
