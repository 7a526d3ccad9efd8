"""What this version's node does for checkouts and holds on a database whose upgrade is not
finished, beside a node of the previous version: a checkout of two lines is refused with
`503 upgrade_unfinished` and places nothing, and so is a hold; one of one line is placed. Exits non-zero,
saying what the service answered, at the first thing that is not as expected.

    python3 .ci/checkout-gate.py BASE_URL ADMIN_KEY
"""

import json
import sys
import urllib.error
import urllib.request
import uuid

BASE, KEY = sys.argv[1], sys.argv[2]


def call(step, method, path, body=None, expect=(200, 201)):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, method=method, data=data)
    request.add_header("Authorization", "Bearer " + KEY)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, text = answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    if status not in expect:
        sys.exit(f"checkout gate: {step}: {method} {path} answered {status}: {text}")
    return json.loads(text) if text else None


suffix = uuid.uuid4().hex[:8]
category = call("create a category", "POST", "/v1/categories", {"name": "Gate " + suffix})
pets = []
for name in ("Left", "Right"):
    pet = call("create a pet", "POST", "/v1/pets", {"name": name, "categoryId": category["id"]})
    call("stock it", "PATCH", f"/v1/inventory/{pet['id']}", {"quantity": 2})
    call("price it", "PUT", f"/v1/pets/{pet['id']}/price", {"amount": 100})
    pets.append(pet["id"])
refused = call("a checkout of two lines", "POST", "/v1/store/checkout",
               {"lines": [{"petId": pets[0]}, {"petId": pets[1]}]}, expect=(503,))
if refused.get("code") != "upgrade_unfinished":
    sys.exit(f"checkout gate: a checkout of two lines was refused as {refused}")
held = call("a hold", "POST", "/v1/store/holds", {"lines": [{"petId": pets[1]}]}, expect=(503,))
if held.get("code") != "upgrade_unfinished":
    sys.exit(f"checkout gate: a hold was refused as {held}")
placed = call("a checkout of one line", "POST", "/v1/store/checkout", {"lines": [{"petId": pets[0]}]})
orders = call("list the pet's orders", "GET", f"/v1/store/orders?petId={pets[1]}")
stock = call("read the other pet's stock", "GET", f"/v1/inventory/{pets[1]}")
if orders or stock["quantity"] != 2 or stock.get("held") != 0:
    sys.exit(f"checkout gate: the refused checkout or hold left {orders} and stock {stock}")
print(f"checkout gate: two lines and a hold refused (upgrade_unfinished, nothing placed "
      f"or held), one line placed as order {placed['id']}")
