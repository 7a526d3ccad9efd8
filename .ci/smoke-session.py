"""A short session of what a shop does, against a running service: a category, a pet with
stock, a keyed order, its completion, the events after 0, and a webhook subscription whose
first delivery must arrive at a receiver on 127.0.0.1. Exits non-zero, saying which step
failed and what the service answered, at the first thing that is not as expected.

    python3 .ci/smoke-session.py BASE_URL ADMIN_KEY
"""

import http.server
import json
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

BASE, KEY = sys.argv[1], sys.argv[2]


def call(step, method, path, body=None, expect=(200, 201), headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, method=method, data=data)
    request.add_header("Authorization", "Bearer " + KEY)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, text = answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    if status not in expect:
        sys.exit(f"smoke session: {step}: {method} {path} answered {status}: {text}")
    return json.loads(text) if text else None


received = []


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        received.append(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


receiver = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=receiver.serve_forever, daemon=True).start()
hook = "http://127.0.0.1:%d/hook" % receiver.server_address[1]

suffix = uuid.uuid4().hex[:8]
call("subscribe", "POST", "/v1/webhooks", {"url": hook, "events": ["order.placed"]})
category = call("create a category", "POST", "/v1/categories", {"name": "Smoke " + suffix})
pet = call("create a pet", "POST", "/v1/pets", {"name": "Puff", "categoryId": category["id"]})
call("set its stock", "PATCH", "/v1/inventory/%d" % pet["id"], {"quantity": 5})
key = {"Idempotency-Key": "smoke-" + suffix}
order = call("place a keyed order", "POST", "/v1/store/orders",
             {"petId": pet["id"], "quantity": 2}, headers=key)
again = call("replay it", "POST", "/v1/store/orders",
             {"petId": pet["id"], "quantity": 2}, headers=key)
if again["id"] != order["id"]:
    sys.exit(f"smoke session: the replay made order {again['id']}, not {order['id']}")
stock = call("read the stock", "GET", "/v1/inventory/%d" % pet["id"])
if stock["quantity"] != 3:
    sys.exit(f"smoke session: stock is {stock['quantity']} after an order of 2 from 5")
call("complete the order", "PATCH", "/v1/store/orders/%d" % order["id"], {"complete": True})
events = call("read the events", "GET", "/v1/events?after=0")
kinds = {event["type"] for event in events}
for kind in ("category.created", "pet.created", "order.placed", "order.completed"):
    if kind not in kinds:
        sys.exit(f"smoke session: no {kind} event among {sorted(kinds)}")
deadline = time.monotonic() + 20
while not any(event.get("data", {}).get("id") == order["id"] for event in received):
    if time.monotonic() > deadline:
        sys.exit(f"smoke session: the webhook received {len(received)} events in 20 s, "
                 f"not order {order['id']}'s order.placed")
    time.sleep(0.1)
print("smoke session: orders, stock, events and a webhook delivery as expected")
