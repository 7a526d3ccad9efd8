"""The webhook receiver: a threaded HTTP server on 127.0.0.1 that subscriptions point at.

Each subscription POSTs to /hook/<shop>/<name>. Every delivery is written to the history
(a "delivery" line: headers, raw body, the answer given), and the subscription itself (its
secret included: the clusters are throwaway) as a "webhook" line, so the checker verifies
every signature again from the history alone. The receiver answers 503 to a few valid
deliveries at random (the service must retry the same event) and 400 to one whose
signature does not verify.
"""

import base64
import hashlib
import hmac
import http.server
import json
import random
import threading
import time

from api import send

# Two subscriptions per shop: every type the soak makes, and orders only (the dispatcher
# must skip the other types without losing its place).
HOLD_TYPES = ["hold.placed", "hold.released", "hold.expired", "hold.consumed"]
SUBSCRIPTIONS = {
    "all": ["order.placed", "order.cancelled", "order.completed", "inventory.updated",
            "pet.created", "pet.updated", "category.created", "pet.status_changed",
            *HOLD_TYPES],
    "orders": ["order.placed", "order.cancelled", "order.completed"],
}


def signature_valid(secret, webhook_id, timestamp, body, signature_header):
    """Standard Webhooks, as docs/events.md says: v1 and the base64 HMAC-SHA256 of
    `{id}.{timestamp}.{body}` keyed with the secret's bytes (base64 after `whsec_`)."""
    try:
        key = base64.b64decode(secret.removeprefix("whsec_"))
    except ValueError:
        return False
    mac = hmac.new(key, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256)
    expected = base64.b64encode(mac.digest()).decode()
    for entry in (signature_header or "").split(" "):
        version, _, given = entry.partition(",")
        if version == "v1" and hmac.compare_digest(given, expected):
            return True
    return False


class Receiver:
    def __init__(self, history_for_shop, seed, refuse_rate=0.03):
        self.history_for_shop = history_for_shop  # shop -> the history it writes to
        self.rng = random.Random(seed)
        self.refuse_rate = refuse_rate
        self.lock = threading.Lock()
        self.secrets = {}      # (shop, name) -> secret
        self.delivered = {}    # (shop, name) -> the event ids answered 2xx
        self.through = {}      # (shop, name) -> deliveredThrough when it was created
        self.types = {}        # (shop, name) -> the event types it was made with
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                status = receiver.receive(self.path, self.headers, body)
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="receiver",
                                       daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def subscribe(self, shop, address, admin_key, holds=True):
        """The subscriptions of one shop, written to its history. Without `holds` (a shop
        whose nodes may run the previous version, which knows no hold event), none of the
        hold types: that shop holds nothing anyway (its upgrade stays unfinished)."""
        for name, events in SUBSCRIPTIONS.items():
            events = [kind for kind in events if holds or kind not in HOLD_TYPES]
            url = f"http://127.0.0.1:{self.port}/hook/{shop}/{name}"
            answer = send(address, "POST", "/v1/webhooks", key=admin_key,
                          body={"url": url, "events": events})
            if answer.status != 201:
                raise RuntimeError(f"subscribing {url}: {answer.status} {answer.body}")
            with self.lock:
                self.secrets[(shop, name)] = answer.body["secret"]
                self.through[(shop, name)] = answer.body["delivery"]["deliveredThrough"]
                self.types[(shop, name)] = events
            self.history_for_shop[shop].write({
                "t": "webhook", "sub": name, "id": answer.body["id"], "events": events,
                "secret": answer.body["secret"],
                "through": answer.body["delivery"]["deliveredThrough"]})

    def receive(self, path, headers, body):
        parts = path.strip("/").split("/")
        if len(parts) != 3 or parts[0] != "hook":
            return 404
        shop, name = parts[1], parts[2]
        with self.lock:
            secret = self.secrets.get((shop, name))
        webhook_id = headers.get("webhook-id")
        timestamp = headers.get("webhook-timestamp")
        valid = secret is not None and signature_valid(
            secret, webhook_id, timestamp, body, headers.get("webhook-signature"))
        with self.lock:
            status = 400 if not valid else (503 if self.rng.random() < self.refuse_rate
                                            else 204)
            if status == 204 and webhook_id and webhook_id.isdigit():
                key = (shop, name)
                self.delivered.setdefault(key, set()).add(int(webhook_id))
        history = self.history_for_shop.get(shop)
        if history is not None:
            history.write({"t": "delivery", "sub": name, "at": round(time.time(), 4),
                           "webhook_id": webhook_id, "timestamp": timestamp,
                           "signature": headers.get("webhook-signature"),
                           "body": body.decode("utf-8", "replace"), "status": status})
        return status

    def wait_drained(self, shop, events, stuck_after, log, since=None):
        """Until each subscription of `shop` has taken every event of its types in `events`
        (the final feed), as the checker counts it; gives up when no subscription moved for
        `stuck_after` seconds (a slow dispatcher's backlog takes a while, but it moves). True
        when drained. `since` (a time.time()) is when the load ended, for the log; the
        checker measures each subscription's catch-up from the deliveries themselves."""
        missing = {}
        for name in SUBSCRIPTIONS:
            through = self.through.get((shop, name), 0)
            types = self.types.get((shop, name), ())
            missing[(shop, name)] = {int(e["id"]) for e in events
                                     if e.get("type") in types and int(e["id"]) > through}
        moved = time.monotonic()
        since = time.time() if since is None else since
        last = None
        while True:
            with self.lock:
                for key, ids in missing.items():
                    got = self.delivered.get(key, set())
                    missing[key] = {i for i in ids if i not in got}
            behind = {name: len(ids) for (_, name), ids in missing.items() if ids}
            if not behind:
                log(f"webhooks of {shop}: caught up by {time.time() - since:.1f} s after the "
                    "load ended")
                return True
            if behind != last:
                last, moved = behind, time.monotonic()
            elif time.monotonic() - moved > stuck_after:
                log(f"webhooks of {shop} still behind, no progress for {stuck_after:.0f} s: "
                    + ", ".join(f"{name} misses {count} (from {min(missing[(shop, name)])})"
                                for name, count in behind.items()))
                return False
            time.sleep(0.2)


def parse_delivery(record):
    """The CloudEvent a delivery carried, or None if its body is no JSON object."""
    try:
        event = json.loads(record["body"])
    except ValueError:
        return None
    return event if isinstance(event, dict) else None
