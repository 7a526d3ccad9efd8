"""Who caused each event (docs/events.md, "Who caused it"): every event of the final feed
names, in its flat `actor*` attributes, the key whose request made the change.

Each client of the soak sends its writes with keys of its own (a staff key each, and a
customer key each for the writers), and the history says, for every key, its id, name, role
and client (`key` lines), and for every attempt the key it was sent with (`keyId`). So:
- an event the history ties to an operation (an order or a checkout by its shipDate marker,
  its cancel and completion by the order's id, a pet or category by its unique name, a stock
  set or adjustment by pet, level before and after, a price change by pet, amount before and
  after, the stock changes of an order's lines or its cancel by the order event before them)
  must name the key that operation was sent with, through `/v1`: `actorkind` `key`,
  `actorid`, `actorname`, `actorrole` the key's, `actordoor` `api` (event-actor);
- a hold's events are its operations' (its placing by the hold id it was answered with, its
  release and checkout by the hold's id), and so are its pets' stock changes that follow;
  the sweepers' (a hold.expired, and its pets' status changes and stock changes after it)
  must name the service's `holds` chore: `actorkind` `service`, `actorname` `holds`;
- any other event (a pet's status change, which follows an order, a cancel, a completion or
  a set) must name one of the shop's keys, through `/v1`, likewise (event-actor);
- an event may name no actor only if a node of the previous version, which records none,
  may have written it: one of the operation's attempts went to a node that was running the
  previous version's binary then, or, for an event no operation explains, a node ran it at
  the event's time (event-actor-unknown).
A node runs the previous version (`--previous-binary`) from the start of an `upgrade` fault
that took it there (`nodeN: new -> previous`) to the end of the one that brought it back; an
upgrade that failed leaves the node's version unknown until the next one that did not.

A history that records no key (a run saved before keys were recorded) is not checked.
The webhook check (checks_events.py) compares each delivery's actor with the final feed's
copy through `copy_differs`; the SSE listener and the feed followers record ids only.
"""

import datetime
import math
from collections import defaultdict

from checks_feed import LEVEL_KINDS
from clients import op_of_ship_date
from model import ORDER_KINDS, answered_ids, order_lines

ACTOR_FIELDS = ("actorkind", "actorid", "actorname", "actorrole", "actordoor")
# Who the holds' sweeper is (docs/events.md, "Who caused it": the service's chores).
SWEEPER = {"actorkind": "service", "actorid": None, "actorname": "holds", "actorrole": None,
           "actordoor": None}
# The events of a hold whose next inventory.updated of each line's pet is that change's.
HOLD_CHANGES = ("hold.placed", "hold.released", "hold.expired")
# Seconds of slack around a moment (an event's time, a delivery's receipt) when asking
# whether a node ran the previous version then: both clocks are this machine's.
SLACK_SECONDS = 1.0


def previous_version_windows(history):
    """{node: [(from, to)]}: when each node may have been running the previous version's
    binary, from the `upgrade` faults (to is math.inf for a node that never came back)."""
    by_node = defaultdict(list)
    for fault in history.faults:
        if fault.get("kind") == "upgrade":
            for node in fault.get("nodes", []):
                by_node[node].append(fault)
    windows = defaultdict(list)
    for node, faults in by_node.items():
        since = None
        for fault in sorted(faults, key=lambda f: f["start"]):
            detail = fault.get("detail") or ""
            if since is None:
                # Both ways and a failed switch alike: from its start the node may run the
                # previous version (a switch to the new one stops the previous one first).
                since = fault["start"]
            if not fault.get("failed") and detail.endswith("-> new"):
                windows[node].append((since, fault["end"]))
                since = None
        if since is not None:
            windows[node].append((since, math.inf))
    return dict(windows)


def on_previous(windows, node, start, end):
    """True when `node` may have run the previous version at some moment of [start, end]."""
    return any(begin <= end and start <= until for begin, until in windows.get(node, ()))


def previous_at(windows, moment):
    """True when some node may have run the previous version at `moment` (None: any time)."""
    if moment is None:
        return bool(windows)
    return any(on_previous(windows, node, moment - SLACK_SECONDS, moment + SLACK_SECONDS)
               for node in windows)


def actor_of(event):
    """The event's actor attributes, or None when it has none of them (unknown)."""
    found = {field: event.get(field) for field in ACTOR_FIELDS}
    return found if any(value is not None for value in found.values()) else None


def describe_actor(found):
    if found is None:
        return "no actor"
    if found.get("actorkind") != "key":
        return f"{found.get('actorkind')} {found.get('actorname') or ''}".strip()
    text = f"{found.get('actorkind')} {found.get('actorid')}"
    return (text + f" ({found.get('actorname')}, {found.get('actorrole')}) through "
            f"{found.get('actordoor')}")


def describe_keys(keys):
    if not keys:
        return "a key the history does not name"
    text = " or ".join(f"key {k['id']} ({k['name']}, {k['role']})" for k in keys)
    return text + " through api"


def names_key(found, keys):
    """True when `found` is one of `keys`, through /v1."""
    if found is None or found.get("actorkind") != "key" or found.get("actordoor") != "api":
        return False
    return any(found.get("actorid") == str(key["id"]) and found.get("actorname") == key["name"]
               and found.get("actorrole") == key["role"] for key in keys)


def event_time(event):
    try:
        text = event.get("time")
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (AttributeError, TypeError, ValueError):
        return None


def copy_differs(history, windows, held, copy, moment):
    """What is wrong with the actor of `copy` (an event as a delivery carried it, received at
    `moment`) against `held` (the final feed's), or None. A copy without an actor is allowed
    when a node may have run the previous version at `moment`: it sent events without them."""
    if not history.keys:
        return None
    expected, found = actor_of(held), actor_of(copy)
    if found == expected or (found is None and previous_at(windows, moment)):
        return None
    why = "" if found is not None else ", and no node ran the previous version then"
    return (f"names {describe_actor(found)}, the final feed's copy "
            f"{describe_actor(expected)}{why}")


def _ops_by(history, kind, field):
    found = defaultdict(list)
    for op in history.ops_of(kind):
        if history.calls.get(op["op"]):
            found[op["meta"].get(field)].append(op)
    return found


def _transitions(history, kinds):
    """(pet, prior, value) -> the ops of `kinds` that were sent and would make it."""
    found = defaultdict(list)
    for op in (op for kind in kinds for op in history.ops_of(kind)):
        if history.calls.get(op["op"]):
            meta = op["meta"]
            found[(meta["petId"], meta["prior"], meta["value"])].append(op)
    return found


def price_of(pet):
    """The amount of a pet's price (its JSON as an event carries it), or None."""
    price = pet.get("price")
    return price.get("amount") if isinstance(price, dict) else None


def attribute(history, final):
    """{event id: [ops]} for every event of the final feed the history ties to operations
    that may have made it; an event it does not tie to any is left out."""
    places = {op["op"]: op for kind in ORDER_KINDS for op in history.ops_of(kind)}
    cancels = _ops_by(history, "cancel_order", "orderId")
    completes = _ops_by(history, "complete_order", "orderId")
    pets = _ops_by(history, "create_pet", "name")
    categories = _ops_by(history, "create_category", "name")
    sets = _transitions(history, LEVEL_KINDS)
    prices = _transitions(history, ("set_price",))
    holds = answered_ids(history, "place_hold")
    releases = _ops_by(history, "release_hold", "holdId")
    hold_checkouts = _ops_by(history, "hold_checkout", "holdId")
    stock, price = defaultdict(int), {}
    # pet -> the ops of the order events since its last inventory.updated: that change's
    # inventory.updated is theirs (None: no order event since, so a set made it).
    pending = {}
    attributed = {}
    for event in final.events:
        kind, data = event.get("type"), event.get("data") or {}
        ops = []
        if kind == "order.placed":
            op = places.get(op_of_ship_date(data.get("shipDate")))
            ops = [op] if op is not None and history.calls.get(op["op"]) else []
        elif kind == "order.cancelled":
            ops = cancels.get(data.get("id"), [])
        elif kind == "order.completed":
            ops = completes.get(data.get("id"), [])
        elif kind == "pet.created":
            ops = pets.get(data.get("name"), [])
            price[data.get("id")] = price_of(data)
        elif kind == "pet.updated":
            pet, amount = data.get("id"), price_of(data)
            ops = prices.get((pet, price.get(pet), amount), [])
            price[pet] = amount
        elif kind == "category.created":
            ops = categories.get(data.get("name"), [])
        elif kind == "hold.placed":
            ops = holds.get(data.get("id"), [])
        elif kind == "hold.released":
            ops = releases.get(data.get("id"), [])
        elif kind == "hold.consumed":
            # Its pets' changes follow its order.placed's, already tied to the checkout.
            ops = hold_checkouts.get(data.get("id"), [])
        elif kind == "inventory.updated":
            pet, level = data.get("petId"), data.get("quantity")
            caused = pending.pop(pet, None)
            ops = caused if caused is not None else sets.get((pet, stock[pet], level), [])
            stock[pet] = level
        if kind in ("order.placed", "order.cancelled"):
            for line in order_lines(data):
                pending.setdefault(line["petId"], []).extend(ops)
        if kind in HOLD_CHANGES:
            # A hold.expired's are the sweeper's (none): never a stock set's.
            for line in data.get("lines") or []:
                pending.setdefault(line["petId"], []).extend(ops)
        if ops:
            attributed[event["id"]] = ops
    return attributed


def swept(final):
    """The ids of the events the holds' sweeper made: each hold.expired, and the events of
    its pets that follow it in its transaction (a status change, then the inventory.updated
    that ends each pet's; a sweep's events are together in the feed, which is in commit
    order)."""
    found, pets = set(), set()
    for event in final.events:
        kind, data = event.get("type"), event.get("data") or {}
        if kind == "hold.expired":
            found.add(event["id"])
            pets.update(line["petId"] for line in data.get("lines") or [])
        elif kind in ("pet.status_changed", "inventory.updated") and data.get("petId") in pets:
            found.add(event["id"])
            if kind == "inventory.updated":
                pets.discard(data["petId"])
    return found


def check_actors(history, final, anomalies):
    """Every event's actor against the key its operation was sent with; returns counts for
    the report: events checked, tied to an operation, without an actor where allowed."""
    counts = {"events": 0, "by_operation": 0, "other": 0, "unknown_allowed": 0,
              "by_chore": 0}
    if not history.keys:
        return counts
    windows = previous_version_windows(history)
    keys = history.keys
    attributed = attribute(history, final)
    sweeps = swept(final)
    for event in final.events:
        counts["events"] += 1
        found = actor_of(event)
        what = f"event {event['id']} ({event.get('type')} {event.get('subject')})"
        if event["id"] in sweeps:
            # A node of the previous version sweeps no hold: no allowance for none.
            counts["by_chore"] += 1
            if found != SWEEPER:
                anomalies.add("event-actor", f"{what}: the holds' sweeper made it, so it must "
                              f"name the service's chore holds; found {describe_actor(found)}",
                              event=event["id"], found=found)
            continue
        ops = attributed.get(event["id"])
        if ops:
            counts["by_operation"] += 1
            calls = [call for op in ops for call in history.calls.get(op["op"], [])]
            expected = [keys[i] for i in sorted({c.get("keyId") for c in calls} - {None})
                        if i in keys]
            op_ids = ", ".join(str(op["op"]) for op in ops)
            if found is None:
                if any(on_previous(windows, c["node"], c["sent"], c["answered"])
                       for c in calls):
                    counts["unknown_allowed"] += 1
                    continue
                anomalies.add("event-actor-unknown",
                              f"{what} names no actor, yet every attempt of op {op_ids} went "
                              f"to a node of this version: expected {describe_keys(expected)}",
                              event=event["id"], ops=[op["op"] for op in ops])
            elif not names_key(found, expected):
                anomalies.add("event-actor", f"{what}: expected {describe_keys(expected)} "
                              f"(op {op_ids}), found {describe_actor(found)}",
                              event=event["id"], ops=[op["op"] for op in ops], found=found)
            continue
        counts["other"] += 1
        if found is None:
            if previous_at(windows, event_time(event)):
                counts["unknown_allowed"] += 1
                continue
            anomalies.add("event-actor-unknown",
                          f"{what} names no actor, and no node ran the previous version at "
                          f"{event.get('time')}: expected one of the shop's keys through api",
                          event=event["id"])
        elif not names_key(found, keys.values()):
            anomalies.add("event-actor", f"{what}: expected one of the shop's "
                          f"{len(keys)} keys through api, found {describe_actor(found)}",
                          event=event["id"], found=found)
    return counts
