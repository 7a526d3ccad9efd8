"""Checks of what the push channels carried: webhook deliveries and the SSE stream.

Webhooks (docs/events.md, "Guarantees"; the contract: "delivered at least once and in
order per subscription"), per subscription:
- every delivery's signature verifies with the subscription's secret (webhook-signature);
- every delivery carries an event the final feed holds, as the feed holds it (same id as
  its webhook-id, same type, subject and data), of the subscription's types, recorded
  after the subscription was made; and the same actor (webhook-actor), or none when a node
  of the previous version, which sends none, may have sent it (checks_actors.py);
- in order: an event is sent only once every earlier event of its types got a 2xx, so a
  delivery of an id not seen before comes only when every covered event below it was
  delivered (answered 2xx); an id seen before may come again (at least once);
- at least once: every covered event of the final feed was answered 2xx;
- catch-up: from the moment the load ended (the history's `load_ended`) to the receipt of
  the delivery that completed the subscription (the latest of its covered events' first 2xx)
  at most CATCH_UP_LIMIT_SECONDS (webhook-slow-catch-up). An event one of the service's
  chores made after the load ended (the holds' sweeper ends holds after the clients stop)
  counts from its own time instead: no dispatcher sends an event before it is made. A subscription that never
  completed is webhook-missing alone: its time (to when the run's wait gave up) is in the
  report, not a second anomaly. A history without `load_ended` (a run saved before it was
  recorded) is not measured.
SSE, per listener, over all its connections in order: ids strictly increasing; no event of
the final feed below the highest id received was missed; none it received is not in the
final feed.
"""

import bisect
from collections import defaultdict

from checks_actors import copy_differs, event_time, previous_version_windows
from checks_feed import check_followed
from webhooks import parse_delivery, signature_valid

# The longest a subscription may take, after the load ends, to have every event of its types
# delivered. A dispatcher that keeps up is behind by a moment at the load's end, and then only
# waits: the soak's nodes poll every 200 ms (nodes.py, WEBHOOK_FLAGS), a node killed while it
# held a subscription leaves it to a 5 s lease, and after a refused delivery (the receiver
# refuses 3%) retries back off to 2 s at most. A lease plus a retry at the longest delay plus
# a poll is 7.2 s; 10 s leaves the rest for the backlog itself. A longer wait means delivery
# does not keep up with the shop (today's one-event-at-a-time dispatcher takes minutes).
CATCH_UP_LIMIT_SECONDS = 10.0
# A run with upgrade faults has nodes on the previous version (.ci/upgrade-baseline), which
# sends one event at a time with three writes each (about 60 a second, fewer than the shop
# makes): while one of them holds a subscription a backlog grows that this version then
# drains, at the pace the receiver's 3 % refusals and their retries allow. Such a run gets
# this bound instead; once the previous version has delivery runs, it goes.
PREVIOUS_VERSION_CATCH_UP_LIMIT_SECONDS = 60.0


def catch_up_limit(history):
    """The catch-up bound for `history`'s shop: looser when nodes ran the previous version."""
    upgraded = any(f.get("kind") == "upgrade" and not f.get("failed") for f in history.faults)
    return PREVIOUS_VERSION_CATCH_UP_LIMIT_SECONDS if upgraded else CATCH_UP_LIMIT_SECONDS


def _feed_view(event):
    return (event.get("type"), event.get("subject"), event.get("data"))


def check_webhooks(history, final, anomalies):
    """Checks every subscription's deliveries; returns how long after the load each one
    took to catch up, for the report (`_catch_up`)."""
    feed = {int(event["id"]): event for event in final.events}
    subs = {sub["sub"]: sub for sub in history.webhooks}
    deliveries = defaultdict(list)
    for record in history.deliveries:
        deliveries[record["sub"]].append(record)
    for name in sorted(set(deliveries) - set(subs)):
        anomalies.add("webhook-unknown-event", f"{len(deliveries[name])} deliveries to "
                      f"{name}, which no subscription of the run names")
    subs_catch_up = {}
    windows = previous_version_windows(history)
    for name, sub in sorted(subs.items()):
        types, through = set(sub["events"]), int(sub["through"])
        covered = sorted(i for i, e in feed.items() if i > through and e.get("type") in types)
        delivered, seen, flagged = set(), set(), set()
        first_ok = {}  # event id -> receipt time of its first 2xx
        gap = 0  # covered[:gap] were all delivered (or their skipping was reported)
        for record in deliveries[name]:
            where = f"webhook {name}: delivery of {record.get('webhook_id')}"
            if not signature_valid(sub["secret"], record.get("webhook_id"),
                                   record.get("timestamp"), record["body"].encode(),
                                   record.get("signature")):
                anomalies.add("webhook-signature", f"{where} has no valid signature",
                              delivery=record)
                continue
            event = parse_delivery(record)
            event_id = int(event["id"]) if event and str(event.get("id")).isdigit() else None
            held = feed.get(event_id)
            if event_id is None or str(event_id) != record.get("webhook_id") \
                    or held is None or _feed_view(held) != _feed_view(event):
                anomalies.add("webhook-unknown-event", f"{where}: an event the final feed "
                              f"does not hold as sent ({record['body'][:200]})",
                              delivery=record)
                continue
            if event.get("type") not in types or event_id <= through:
                anomalies.add("webhook-unknown-event", f"{where}: {event.get('type')} "
                              f"{event_id} is not the subscription's (types {sorted(types)}, "
                              f"after {through})", delivery=record)
                continue
            wrong_actor = copy_differs(history, windows, held, event, record.get("at"))
            if wrong_actor:
                anomalies.add("webhook-actor", f"{where} {wrong_actor}", delivery=record)
            if event_id not in seen:
                while gap < len(covered) and (covered[gap] in delivered
                                              or covered[gap] in flagged):
                    gap += 1
                if gap < len(covered) and covered[gap] < event_id:
                    missing = [i for i in covered[gap:bisect.bisect_left(covered, event_id)]
                               if i not in delivered and i not in flagged]
                    flagged.update(missing)
                    anomalies.add("webhook-order", f"{where} came before {len(missing)} "
                                  f"earlier events of its types were delivered: "
                                  f"{missing[:20]}", ids=missing[:200])
                seen.add(event_id)
            status = record.get("status")
            if status is not None and 200 <= status < 300:
                delivered.add(event_id)
                # The earliest, not the first written: the receiver's threads write in
                # about, not exactly, the order they received.
                at = record.get("at")
                if at is not None:
                    first_ok[event_id] = min(first_ok.get(event_id, at), at)
        lost = [i for i in covered if i not in delivered]
        if lost:
            anomalies.add("webhook-missing", f"webhook {name}: {len(lost)} events of its "
                          f"types were never delivered: {lost[:20]}", ids=lost[:200])
        subs_catch_up[name] = _catch_up(history, name, covered, lost, first_ok, anomalies,
                                        feed)
    return {"limit_seconds": catch_up_limit(history),
            "load_ended": history.meta.get("load_ended"), "subscriptions": subs_catch_up}


def _since(event, load_ended):
    """When the catch-up clock starts for `event`: the load's end, or, for an event a chore
    of the service made after it, the event's own time."""
    made = event_time(event) if event.get("actorkind") == "service" else None
    return made if made is not None and made > load_ended else load_ended


def _catch_up(history, name, covered, lost, first_ok, anomalies, feed):
    """How long after the load ended subscription `name` had every covered event delivered:
    {"events", "caught_up", "seconds", "last_event"}; seconds is None when not measured. One
    that never caught up counts until the run's wait for it gave up (at least that long)."""
    load_ended = history.meta.get("load_ended")
    entry = {"events": len(covered), "caught_up": not lost, "seconds": None,
             "last_event": None}
    if load_ended is None:
        return entry
    if lost:
        until = (history.drain or {}).get("until")
        if until is not None:
            entry["seconds"] = round(max(0.0, until - load_ended), 3)
        return entry  # webhook-missing already says it; no second anomaly
    if not covered:
        entry["seconds"] = 0.0
        return entry
    times = [(first_ok[i] - _since(feed[i], load_ended), i) for i in covered
             if first_ok.get(i) is not None]
    if len(times) < len(covered):
        return entry  # deliveries recorded without their receipt time: not measured
    took, last_event = max(times)
    entry["seconds"] = round(max(0.0, took), 3)
    entry["last_event"] = last_event
    limit = catch_up_limit(history)
    if entry["seconds"] > limit:
        anomalies.add("webhook-slow-catch-up", f"webhook {name}: every event of its types "
                      f"delivered {entry['seconds']:.1f} s after the load ended, over "
                      f"{limit:.0f} s (completed by the delivery of event "
                      f"{last_event}, of {len(covered)} events)", seconds=entry["seconds"],
                      last_event=last_event)
    return entry


def check_sse(history, final, anomalies):
    feed_ids = {int(event["id"]) for event in final.events}
    by_listener = defaultdict(list)
    for record in history.sse:
        by_listener[record["client"]].append(record)
    for listener, records in sorted(by_listener.items()):
        seen, last = set(), 0
        for record in records:
            for event_id in record["ids"]:
                if event_id <= last:
                    anomalies.add("sse-order", f"{listener} got {event_id} after {last} "
                                  f"(connection {record['conn']}, Last-Event-ID "
                                  f"{record['last_event_id']})", record=record["conn"])
                last = max(last, event_id)
                seen.add(event_id)
        check_followed("sse", listener, seen, last, feed_ids, anomalies)
