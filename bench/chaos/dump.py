"""The final state, read through the API once the faults are over: the whole feed from the
start, every order (with its lines and amounts), pet (with its price), category, stock level
(with its held and committed units), stock movement and hold (each the feed placed, with how
it ended), and the shop's currency (`GET /v1`); and `petstore check` on the database."""

import re
import subprocess
import time

from api import send

NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


def _get(address, key, url, attempts=20):
    for _ in range(attempts):
        answer = send(address, "GET", url, key=key, timeout=15)
        if answer.status == 200:
            return answer
        time.sleep(0.5)
    raise RuntimeError(f"GET {url}: {answer.status} {answer.error} {answer.body}")


def _feed(address, key):
    """The whole feed, following after= as a follower does."""
    events, after = [], 0
    while True:
        page = _get(address, key, f"/v1/events?after={after}&limit=100").body
        events.extend(page)
        if len(page) < 100:
            return events
        after = int(page[-1]["id"])


def _all_pages(address, key, path):
    """Every item of a list, following each page's Link rel="next" (cursors are opaque)."""
    items, url = [], f"{path}?limit=100"
    while url:
        answer = _get(address, key, url)
        items.extend(answer.body)
        match = NEXT.search(answer.headers.get("link", ""))
        url = match.group(1) if match else None
    return items


def read_final_state(address, admin_key):
    dumped_at = time.time()
    inventory = _all_pages(address, admin_key, "/v1/inventory")
    events = _feed(address, admin_key)
    # Holds have no list: each one the feed placed is read by its id (an admin key sees all).
    placed = sorted({event["data"]["id"] for event in events
                     if event.get("type") == "hold.placed"})
    return {
        "dumped_at": dumped_at,
        "shop": _get(address, admin_key, "/v1").body,
        "events": events,
        "holds": [_get(address, admin_key, f"/v1/store/holds/{hold}").body
                  for hold in placed],
        "orders": _all_pages(address, admin_key, "/v1/store/orders"),
        "inventory": inventory,
        "pets": _all_pages(address, admin_key, "/v1/pets"),
        "categories": _all_pages(address, admin_key, "/v1/categories"),
        # Every pet's stock ledger (the soak deletes no pet: the inventory names them all).
        "movements": {str(item["petId"]): _all_pages(
            address, admin_key, f"/v1/inventory/{item['petId']}/movements")
            for item in inventory},
    }


def petstore_check(binary, database_url):
    """`petstore check`: the backend's integrity check and the service's invariants."""
    try:
        out = subprocess.run([binary, "check", "--database", database_url],
                             capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {"rc": None, "output": "petstore check did not finish within 120 s"}
    return {"rc": out.returncode, "output": (out.stdout + out.stderr)[-4000:]}
