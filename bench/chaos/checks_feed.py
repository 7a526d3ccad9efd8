"""Checks of the feed: ids strictly increasing, no follower skipped an event that later
appeared below its cursor, and each pet's stock (and held units) replayed event by event."""

import re
from collections import Counter, defaultdict

from model import order_lines

# The ops that set a level a client knew before: stock sets, and adjustments (always guarded
# by the level they read, sales.py), each with its pet, `prior` level and `value` made.
LEVEL_KINDS = ("set_stock", "adjust")

AFTER = re.compile(r"[?&]after=(\d+)")


def check_feed_order(final, anomalies):
    previous = 0
    for event in final.events:
        event_id = int(event["id"])
        if event_id <= previous:
            anomalies.add("feed-order", f"the final feed has {event_id} after {previous}")
        previous = event_id


def check_readers(history, final, anomalies):
    """Each follower's pages, in the order it asked: ids strictly increasing past its cursor;
    every event of the final feed at or below the highest id it saw was on one of its
    pages; every id it saw is still in the feed (an event that vanished was a change lost)."""
    feed_ids = {int(event["id"]) for event in final.events}
    pages = defaultdict(list)
    for call in history.all_calls:
        if call["kind"] == "feed" and call.get("status") == 200:
            pages[call["client"]].append(call)
    for reader, calls in pages.items():
        seen, last = set(), 0
        for call in calls:
            after = int(AFTER.search(call["path"]).group(1))
            ids = call["resp"]["ids"] if isinstance(call.get("resp"), dict) else []
            if after < last:
                anomalies.add("feed-order", f"{reader} went back from {last} to after={after}")
            for event_id in ids:
                if event_id <= max(after, last):
                    anomalies.add("feed-order", f"{reader} got {event_id} after "
                                  f"{max(after, last)} (page after={after})",
                                  sent=call["sent"], node=call["node"])
                last = max(last, event_id)
                seen.add(event_id)
        check_followed("feed", reader, seen, last, feed_ids, anomalies)


def check_followed(kind, follower, seen, last, feed_ids, anomalies):
    """What a follower of the feed (`kind`: feed, sse) got: nothing skipped below the last id
    it reached that the final feed holds, nothing the final feed does not hold."""
    skipped = sorted(i for i in feed_ids if i <= last and i not in seen)
    if skipped:
        anomalies.add(f"{kind}-skipped", f"{follower} never got {len(skipped)} events below "
                      f"its last id {last}: {skipped[:20]}", ids=skipped[:200])
    vanished = sorted(seen - feed_ids)
    if vanished:
        anomalies.add(f"{kind}-vanished", f"{follower} got {len(vanished)} events the final "
                      f"feed does not hold: {vanished[:20]}", ids=vanished[:200])


# What each hold event does to its lines' pets, as (available, held) per unit: a hold's
# checkout takes the units from `held` (its order.placed, just before, took them from
# `available` in the replay, which this gives back).
HOLD_MOVES = {"hold.placed": (-1, 1), "hold.released": (1, -1), "hold.expired": (1, -1),
              "hold.consumed": (1, -1)}


def check_stock(history, final, anomalies):
    """Replays each pet's stock through the feed: an order takes its lines' units, a cancel
    puts them back, a hold moves them to `held` and its ending back (or, checked out, to its
    order), and the inventory.updated of that change must show exactly that (its `held` too,
    where the event has one); any other inventory.updated is a stock set or an adjustment,
    and must be one a client made (matched by pet, level before, level after). The replay
    must end at the stock (and held units) the database holds."""
    stock = defaultdict(int)      # pet -> level as the feed tells it
    held = defaultdict(int)       # pet -> held units as the feed tells them
    pending = defaultdict(int)    # pet -> change announced by an order event, not yet shown
    pending_held = defaultdict(int)
    touched = set()               # pets whose next inventory.updated is such a change's
    transitions = Counter()       # (pet, before, after) of every stock set in the feed
    for event in final.events:
        kind, data = event.get("type"), event.get("data") or {}
        if kind in ("order.placed", "order.cancelled"):
            sign = -1 if kind == "order.placed" else 1
            for line in order_lines(data):
                pending[line["petId"]] += sign * line["quantity"]
                touched.add(line["petId"])
        elif kind in HOLD_MOVES:
            available, on_hold = HOLD_MOVES[kind]
            for line in data.get("lines") or []:
                pending[line["petId"]] += available * line["quantity"]
                pending_held[line["petId"]] += on_hold * line["quantity"]
                touched.add(line["petId"])
        elif kind == "inventory.updated":
            pet, level = data["petId"], data["quantity"]
            if pet in touched:
                if stock[pet] + pending[pet] != level:
                    anomalies.add("stock-arithmetic",
                                  f"pet {pet}: event {event['id']} sets {level}, the order "
                                  f"and hold events say {stock[pet]} {pending[pet]:+d}")
                held[pet] += pending_held.pop(pet, 0)
                pending.pop(pet, None)
                touched.discard(pet)
            else:
                transitions[(pet, stock[pet], level)] += 1
            if "held" in data and data["held"] != held[pet]:
                anomalies.add("stock-arithmetic", f"pet {pet}: event {event['id']} shows "
                              f"{data['held']} held, the hold events say {held[pet]}")
                held[pet] = data["held"]
            if level < 0:
                anomalies.add("stock-arithmetic", f"pet {pet}: negative stock {level}")
            stock[pet] = level
    for pet in sorted(touched):
        anomalies.add("stock-arithmetic", f"pet {pet}: order or hold events with no "
                      f"inventory.updated ({pending[pet]:+d})")
    for pet, item in final.inventory.items():
        if item["quantity"] != stock[pet] or item.get("held", 0) != held[pet]:
            anomalies.add("stock-arithmetic", f"pet {pet} holds {item['quantity']} "
                          f"({item.get('held', 0)} held), the feed replays to {stock[pet]} "
                          f"({held[pet]} held)")
    match_transitions(history, transitions, LEVEL_KINDS, "stock sets or adjustments",
                      anomalies)


def match_transitions(history, transitions, kinds, what, anomalies):
    """Each change (pet, before, after) the feed shows, counted in `transitions`, against the
    ops of `kinds` that make it: at least as many as were acknowledged, at most as many as
    may have happened (acknowledged, or of unknown outcome)."""
    acknowledged, maybe = Counter(), Counter()
    for op in (op for kind in kinds for op in history.ops_of(kind)):
        meta = op["meta"]
        key = (meta["petId"], meta["prior"], meta["value"])
        result, _ = history.outcome(op)
        if result == "ok":
            acknowledged[key] += 1
        elif result == "unknown":
            maybe[key] += 1
    for key in set(acknowledged) | set(maybe) | set(transitions):
        found = transitions.get(key, 0)
        pet, before, after = key
        if found < acknowledged[key]:
            anomalies.add("acknowledged-write-lost",
                          f"pet {pet}: {acknowledged[key]} acknowledged {what} "
                          f"{before}->{after}, {found} in the feed")
        if found > acknowledged[key] + maybe[key]:
            anomalies.add("answered-failed-happened",
                          f"pet {pet}: {found} {what} {before}->{after} in the feed, only "
                          f"{acknowledged[key] + maybe[key]} could have happened "
                          f"(the others were answered as failed, or nobody sent them)")


def check_statuses(final, anomalies):
    """domain.md's invariants where staff never set a status by hand (the soak never does);
    units held count as an open order."""
    open_orders = Counter(line["petId"] for o in final.orders.values() if not o.get("complete")
                          for line in order_lines(o))
    for pet, item in final.inventory.items():
        status, level = item["status"], item["quantity"]
        opened = open_orders[pet] + item.get("held", 0)
        wrong = ((status == "pending" and (level != 0 or not opened))
                 or (status == "sold" and (level != 0 or opened))
                 or (status == "available" and level == 0 and opened))
        if wrong:
            anomalies.add("status-invariant", f"pet {pet} is {status} with stock {level} and "
                          f"{opened} open orders")
