"""Checks of what the push channels carried: webhook deliveries and the SSE stream.

Webhooks (docs/events.md, "Guarantees"; the contract: "delivered at least once and in
order per subscription"), per subscription:
- every delivery's signature verifies with the subscription's secret (webhook-signature);
- every delivery carries an event the final feed holds, as the feed holds it (same id as
  its webhook-id, same type, subject and data), of the subscription's types, recorded
  after the subscription was made;
- in order: an event is sent only once every earlier event of its types got a 2xx, so a
  delivery of an id not seen before comes only when every covered event below it was
  delivered (answered 2xx); an id seen before may come again (at least once);
- at least once: every covered event of the final feed was answered 2xx.
SSE, per listener, over all its connections in order: ids strictly increasing; no event of
the final feed below the highest id received was missed; none it received is not in the
final feed.
"""

import bisect
from collections import defaultdict

from checks_feed import check_followed
from webhooks import parse_delivery, signature_valid


def _feed_view(event):
    return (event.get("type"), event.get("subject"), event.get("data"))


def check_webhooks(history, final, anomalies):
    feed = {int(event["id"]): event for event in final.events}
    subs = {sub["sub"]: sub for sub in history.webhooks}
    deliveries = defaultdict(list)
    for record in history.deliveries:
        deliveries[record["sub"]].append(record)
    for name in sorted(set(deliveries) - set(subs)):
        anomalies.add("webhook-unknown-event", f"{len(deliveries[name])} deliveries to "
                      f"{name}, which no subscription of the run names")
    for name, sub in sorted(subs.items()):
        types, through = set(sub["events"]), int(sub["through"])
        covered = sorted(i for i, e in feed.items() if i > through and e.get("type") in types)
        delivered, seen, flagged = set(), set(), set()
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
        lost = [i for i in covered if i not in delivered]
        if lost:
            anomalies.add("webhook-missing", f"webhook {name}: {len(lost)} events of its "
                          f"types were never delivered: {lost[:20]}", ids=lost[:200])


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
