"""Unit checks of the newer checks on synthetic histories (run by test_checker.py): webhook
deliveries, the SSE listener, the shops checked apart, and the proxy's reading of the
PostgreSQL stream. Each shows a clean case passes and a broken one is caught."""

import base64
import hashlib
import hmac
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import plants  # noqa: E402
from checker import check_all  # noqa: E402
from pgwire import FrontendStream  # noqa: E402
from report import render  # noqa: E402
from synthetic import anomalies, clean_shop  # noqa: E402

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()


def sign(secret, webhook_id, timestamp, body):
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def subscribe(shop, name="all", events=None, through=0):
    events = events or sorted({e["type"] for e in shop.events})
    shop.records.append({"t": "webhook", "sub": name, "id": 1, "events": events,
                         "secret": SECRET, "through": through})
    return events


def deliver(shop, event, name="all", status=204, secret=SECRET, body=None, at=1.0):
    body = body if body is not None else json.dumps(event)
    shop.records.append({"t": "delivery", "sub": name, "at": at, "webhook_id": event["id"],
                         "timestamp": "1795330000", "body": body, "status": status,
                         "signature": sign(secret, event["id"], "1795330000", body.encode())})


def deliver_all(shop, name="all"):
    for event in shop.events:
        deliver(shop, event, name)


def load_ended(shop, at, drained_until=None, caught_up=True):
    """The run's record of the load's end, and of its wait for the webhooks after it."""
    shop.records.append({"t": "meta", "load_ended": at})
    if drained_until is not None:
        shop.records.append({"t": "drain", "until": drained_until, "caught_up": caught_up})


def sse(shop, ids, conn=1, last_event_id=0, client="sse0"):
    shop.records.append({"t": "sse", "client": client, "node": 0, "conn": conn,
                         "last_event_id": last_event_id, "at": 1.0, "ids": ids})


class WebhookChecks(unittest.TestCase):
    def test_every_event_delivered_in_order_with_retries_and_repeats_passes(self):
        shop = clean_shop()
        subscribe(shop)
        first, second = shop.events[0], shop.events[1]
        deliver(shop, first, status=503)   # refused: retried, the same event again
        deliver(shop, first)
        deliver(shop, first)               # at least once: a repeat is fine
        for event in shop.events[1:]:
            deliver(shop, event)
        deliver(shop, second)              # a redelivery of one seen before
        self.assertEqual(shop.check()["anomalies"], [])

    def test_a_bad_signature_is_caught(self):
        shop = clean_shop()
        subscribe(shop)
        deliver_all(shop)
        deliver(shop, shop.events[0], secret="whsec_" + base64.b64encode(b"x" * 32).decode())
        self.assertEqual(anomalies(shop.check()), ["webhook-signature"])

    def test_an_event_the_feed_does_not_hold_is_caught(self):
        shop = clean_shop()
        subscribe(shop)
        deliver_all(shop)
        deliver(shop, {"id": "999", "type": "order.placed", "data": {}})
        changed = dict(shop.events[0], data={"id": 12345})
        deliver(shop, changed)
        report = shop.check()
        self.assertEqual(anomalies(report), ["webhook-unknown-event"])
        self.assertEqual(len(report["anomalies"]), 2)

    def test_an_event_delivered_out_of_order_or_never_is_caught(self):
        shop = clean_shop()
        subscribe(shop)
        events = list(shop.events)
        for event in events[:2] + events[3:]:
            deliver(shop, event)
        self.assertEqual(anomalies(shop.check()), ["webhook-missing", "webhook-order"])
        deliver(shop, events[2])  # late: still out of order, no longer missing
        self.assertEqual(anomalies(shop.check()), ["webhook-order"])

    def test_only_the_subscribed_types_after_its_start_count(self):
        shop = clean_shop()
        types = subscribe(shop, name="orders", events=["order.placed"], through=3)
        for event in shop.events:
            if event["type"] in types and int(event["id"]) > 3:
                deliver(shop, event, name="orders")
        self.assertEqual(shop.check()["anomalies"], [])
        deliver(shop, next(e for e in shop.events if e["type"] == "pet.created"),
                name="orders")
        self.assertEqual(anomalies(shop.check()), ["webhook-unknown-event"])


class CatchUpChecks(unittest.TestCase):
    """How long after the load each subscription took to have every event of its types
    delivered: the receipt of the delivery that completed it, less the load's end."""

    def shop_with_deliveries(self, last_at):
        """Half the events delivered during the load, the rest after it ended at 100.0, the
        last at `last_at`; the orders-only subscription kept up during the load."""
        shop = clean_shop()
        subscribe(shop)
        orders = subscribe(shop, name="orders", events=["order.placed", "order.cancelled"])
        load_ended(shop, 100.0, drained_until=last_at + 0.2)
        half = len(shop.events) // 2
        for i, event in enumerate(shop.events):
            at = 90.0 + i if i < half else 100.0 + (last_at - 100.0) * (i - half + 1) / (
                len(shop.events) - half)
            deliver(shop, event, at=at)
            if event["type"] in orders:
                deliver(shop, event, name="orders", at=90.0 + i * 0.1)
        return shop

    def test_a_fast_catch_up_passes_and_is_reported(self):
        shop = self.shop_with_deliveries(last_at=103.5)
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        subs = report["webhook_catch_up"]["subscriptions"]
        self.assertEqual(subs["all"]["seconds"], 3.5)
        self.assertEqual(subs["all"]["last_event"], int(shop.events[-1]["id"]))
        self.assertTrue(subs["all"]["caught_up"])
        self.assertEqual(subs["orders"]["seconds"], 0.0)  # it kept up: done before the end
        self.assertIn("3.50", render(report))

    def test_a_slow_catch_up_is_caught(self):
        shop = self.shop_with_deliveries(last_at=125.0)
        report = shop.check()
        self.assertEqual(anomalies(report), ["webhook-slow-catch-up"])
        self.assertEqual(len(report["anomalies"]), 1)  # orders-only kept up
        self.assertEqual(report["webhook_catch_up"]["subscriptions"]["all"]["seconds"], 25.0)
        self.assertIn("25.0 s after the load ended", report["anomalies"][0]["message"])

    def test_a_run_with_nodes_on_the_previous_version_gets_the_looser_bound(self):
        shop = self.shop_with_deliveries(last_at=125.0)
        shop.records.append({"t": "fault", "kind": "upgrade", "target": "node0", "nodes": [0],
                             "start": 50.0, "end": 60.0, "detail": "node0: new -> previous"})
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertEqual(report["webhook_catch_up"]["limit_seconds"], 60.0)
        slower = self.shop_with_deliveries(last_at=170.0)
        slower.records.append({"t": "fault", "kind": "upgrade", "target": "node0", "nodes": [0],
                               "start": 50.0, "end": 60.0, "detail": "node0: new -> previous"})
        self.assertEqual(anomalies(slower.check()), ["webhook-slow-catch-up"])

    def test_the_first_2xx_completes_an_event_not_a_refusal_or_a_repeat(self):
        shop = self.shop_with_deliveries(last_at=104.0)
        first = shop.events[0]
        # A repeat of an event delivered long ago changes nothing.
        deliver(shop, first, at=140.0)
        self.assertEqual(shop.check()["webhook_catch_up"]["subscriptions"]["all"]["seconds"],
                         4.0)
        # An event refused during the load and delivered only late completes the
        # subscription late.
        shop = clean_shop()
        subscribe(shop)
        load_ended(shop, 100.0, drained_until=112.0)
        deliver(shop, shop.events[0], status=503, at=95.0)
        deliver(shop, shop.events[0], at=111.0)
        for event in shop.events[1:]:
            deliver(shop, event, at=111.5)
        report = shop.check()
        self.assertEqual(report["webhook_catch_up"]["subscriptions"]["all"]["seconds"], 11.5)
        self.assertEqual(anomalies(report), ["webhook-slow-catch-up"])

    def test_a_subscription_that_never_caught_up_is_missing_only(self):
        shop = clean_shop()
        subscribe(shop)
        load_ended(shop, 100.0, drained_until=163.0, caught_up=False)
        for event in shop.events[:-1]:
            deliver(shop, event, at=101.0)
        report = shop.check()
        self.assertEqual(anomalies(report), ["webhook-missing"])
        entry = report["webhook_catch_up"]["subscriptions"]["all"]
        self.assertFalse(entry["caught_up"])
        self.assertEqual(entry["seconds"], 63.0)  # to when the run's wait gave up
        self.assertIn("never caught up", render(report))

    def test_a_history_without_the_load_end_is_not_measured(self):
        shop = clean_shop()
        subscribe(shop)
        for event in shop.events:
            deliver(shop, event, at=5000.0)
        report = shop.check()
        self.assertEqual(report["anomalies"], [])
        self.assertIsNone(report["webhook_catch_up"]["subscriptions"]["all"]["seconds"])
        self.assertIn("not measured", render(report))


class SseChecks(unittest.TestCase):
    def test_a_listener_resuming_across_connections_passes(self):
        shop = clean_shop()
        ids = [int(e["id"]) for e in shop.events]
        sse(shop, ids[:3])
        sse(shop, ids[3:], conn=2, last_event_id=ids[2])
        self.assertEqual(shop.check()["anomalies"], [])

    def test_a_repeat_after_a_reconnect_is_caught(self):
        shop = clean_shop()
        ids = [int(e["id"]) for e in shop.events]
        sse(shop, ids[:3])
        sse(shop, ids[2:], conn=2, last_event_id=ids[1])
        self.assertEqual(anomalies(shop.check()), ["sse-order"])

    def test_a_skipped_and_a_vanished_event_are_caught(self):
        shop = clean_shop()
        ids = [int(e["id"]) for e in shop.events]
        sse(shop, ids[:2] + ids[3:] + [999])
        self.assertEqual(anomalies(shop.check()), ["sse-skipped", "sse-vanished"])


class ShopsChecks(unittest.TestCase):
    def test_each_shop_is_checked_against_its_own_final_state(self):
        pg, lite = clean_shop(), clean_shop()
        for record in lite.records:
            if record["t"] != "meta":
                record["shop"] = "sqlite"
        final = {"shops": {"pg": pg.final(), "sqlite": lite.final()}}
        result = check_all(pg.records + lite.records[1:], final, 10)
        self.assertEqual(result["anomalies"], [])
        self.assertEqual(set(result["shops"]), {"pg", "sqlite"})
        lite.stock[lite.pets[0]["id"]] += 1  # the SQLite shop's stock no longer adds up
        final = {"shops": {"pg": pg.final(), "sqlite": lite.final()}}
        result = check_all(pg.records + lite.records[1:], final, 10)
        self.assertEqual({(a["shop"], a["check"]) for a in result["anomalies"]},
                         {("sqlite", "stock-arithmetic"), ("sqlite", "ledger-state")})

    def test_a_saved_run_of_one_shop_is_still_checked(self):
        shop = clean_shop()
        shop.stock[shop.pets[0]["id"]] += 1
        result = check_all(shop.records, shop.final(), 10)
        self.assertEqual({a["check"] for a in result["anomalies"]},
                         {"stock-arithmetic", "ledger-state"})


class PlantBinaries(unittest.TestCase):
    def test_each_built_plant_runs_its_own_binary_on_the_shops_it_names(self):
        with tempfile.TemporaryDirectory() as repo:
            release = os.path.join(repo, "release")
            self.assertIsNone(plants.binary_for("webhook-out-of-order", repo, release, "pg"))
            planted = os.path.join(repo, plants.plant_binary("webhook-out-of-order"))
            os.makedirs(os.path.dirname(planted))
            with open(planted, "w", encoding="utf-8"):
                pass
            os.chmod(planted, 0o755)
            for shop in ("pg", "sqlite"):  # delivery is shared by both backends
                self.assertEqual(plants.binary_for("webhook-out-of-order", repo, release, shop),
                                 planted)
            # Another plant's build is never taken for this one's.
            self.assertIsNone(plants.binary_for("answer-before-commit", repo, release, "pg"))
            self.assertEqual(plants.binary_for("answer-before-commit", repo, release, "sqlite"),
                             release)
            self.assertEqual(plants.binary_for("feed-unlocked", repo, release, "pg"), release)
            self.assertEqual(plants.binary_for(None, repo, release, "sqlite"), release)

    def test_a_built_plant_names_its_feature_and_where_its_binary_goes(self):
        for plant in plants.BUILT_PLANTS:
            self.assertIn(plant, plants.PLANTS)
            build = plants.plant_build(plant)
            self.assertIn(f"--features petstore-http/plant-{plant} ", build)
            self.assertTrue(build.endswith(f" {plants.plant_binary(plant)}"))


def message(kind, payload):
    return kind + (len(payload) + 4).to_bytes(4, "big") + payload


class FrontendStreamChecks(unittest.TestCase):
    def test_commits_are_found_in_a_stream_cut_anywhere(self):
        startup = (8 + 9).to_bytes(4, "big") + (196608).to_bytes(4, "big") + b"user\0pg\0\0"
        stream = (startup + message(b"Q", b"BEGIN\0") + message(b"P", b"COMMIT\0")
                  + message(b"Q", b"SET LOCAL statement_timeout = 0; COMMIT\0")
                  + message(b"Q", b"commit\0") + message(b"X", b""))
        for cut in (1, 3, 7, 50):
            parser = FrontendStream()
            out = []
            for at in range(0, len(stream), cut):
                out += parser.feed(stream[at:at + cut])
            self.assertEqual(b"".join(m for m, _ in out), stream)
            self.assertEqual([c for _, c in out], [False, False, False, True, True, False])

    def test_tls_is_passed_on_untouched(self):
        parser = FrontendStream()
        ssl = (8).to_bytes(4, "big") + (80877103).to_bytes(4, "big")
        hello = b"\x16\x03\x01\x02\x00" + b"\x01" * 40
        out = parser.feed(ssl) + parser.feed(hello)
        self.assertEqual(b"".join(m for m, _ in out), ssl + hello)
        self.assertFalse(any(c for _, c in out))


if __name__ == "__main__":
    unittest.main()
