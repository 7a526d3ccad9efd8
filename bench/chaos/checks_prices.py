"""Checks of prices (docs/domain.md, "A price is the pet's own resource" and "An order keeps
the price its pet had when it was placed"), against the final feed, which is in commit order
and whole (dump.py reads it from the start): a price change is a `pet.updated` carrying the
pet with its price, an order's placing an `order.placed` carrying its lines.

- each line of every `order.placed` has the unit price of its pet's latest `pet.created` or
  `pet.updated` before it in the feed, in that price's currency (line-price). A checkout reads
  its pets' prices under the locks that a price change takes too, so no change can commit
  between its read and its order; one that read them first (the plant `price-outside-tx`)
  sells some lines at a price the feed had already replaced. A line without a price is
  allowed where a node of the previous version, which knows no prices, may have placed it;
- every price change in the feed is one a client made (matched by pet, amount before and
  after), every acknowledged one is there, and a `pet.updated` always changes the price: the
  soak replaces no pet (acknowledged-write-lost, answered-failed-happened,
  event-without-change); each pet ends at the price the feed last gave it (final-state);
- every price and every priced order is in the shop's currency, the one `GET /v1` reports
  (currency).
"""

from collections import Counter

from checks_actors import (event_time, on_previous, previous_at, previous_version_windows,
                           price_of)
from checks_feed import match_transitions
from clients import op_of_ship_date
from model import ORDER_KINDS, order_lines


def _unpriced_allowed(history, windows, ops, event):
    """A line without a price may be the previous version's: an attempt of its op went to a
    node running it, or, for an order no op explains, one ran at the event's time."""
    op = ops.get(op_of_ship_date(event["data"].get("shipDate")))
    if op is None:
        return previous_at(windows, event_time(event))
    return any(on_previous(windows, c["node"], c["sent"], c["answered"])
               for c in history.calls.get(op["op"], []))


def check_line_prices(history, final, anomalies):
    windows = previous_version_windows(history)
    ops = {op["op"]: op for kind in ORDER_KINDS for op in history.ops_of(kind)}
    prices = {}  # pet -> (its price or None, the event that gave it)
    for event in final.events:
        kind, data = event.get("type"), event.get("data") or {}
        if kind in ("pet.created", "pet.updated"):
            prices[data.get("id")] = (data.get("price"), event["id"])
        if kind != "order.placed":
            continue
        for line in order_lines(data):
            price, since = prices.get(line["petId"], (None, None))
            want = price.get("amount") if isinstance(price, dict) else None
            got = line.get("unitAmount")
            if got == want and (got is None or data.get("currency") == price.get("currency")):
                continue
            if got is None and _unpriced_allowed(history, windows, ops, event):
                continue
            anomalies.add("line-price", f"order {data.get('id')} (event {event['id']}) sells "
                          f"line {line.get('lineNo')}, pet {line['petId']}, at {got} "
                          f"{data.get('currency')}; the pet's price as of event {since} was "
                          f"{price}", order=data.get("id"), event=event["id"])


def check_price_changes(history, final, anomalies):
    transitions, price = Counter(), {}
    for event in final.events:
        kind, data = event.get("type"), event.get("data") or {}
        if kind == "pet.created":
            price[data.get("id")] = price_of(data)
        elif kind == "pet.updated":
            pet, amount = data.get("id"), price_of(data)
            if amount == price.get(pet):
                anomalies.add("event-without-change", f"event {event['id']} (pet.updated of "
                              f"pet {pet}) leaves its price at {amount}, and the soak "
                              "changes nothing else of a pet", event=event["id"])
            else:
                transitions[(pet, price.get(pet), amount)] += 1
            price[pet] = amount
    match_transitions(history, transitions, ("set_price",), "price changes", anomalies)
    for pet in final.pets:
        if price_of(pet) != price.get(pet["id"]):
            anomalies.add("final-state", f"pet {pet['id']} is priced {pet.get('price')}, the "
                          f"feed's last price for it is {price.get(pet['id'])}")


def check_currency(final, anomalies):
    currency = (final.shop or {}).get("currency")
    if currency is None:
        return
    found = Counter()
    for pet in final.pets:
        if isinstance(pet.get("price"), dict):
            found[(f"pet {pet['id']}'s price", pet["price"].get("currency"))] += 1
    for event in final.events:
        data = event.get("data") or {}
        if event.get("type") in ("pet.created", "pet.updated") and \
                isinstance(data.get("price"), dict):
            found[(f"event {event['id']}", data["price"].get("currency"))] += 1
        elif event.get("type") == "order.placed" and data.get("currency") is not None:
            found[(f"order {data.get('id')}", data["currency"])] += 1
    for order in final.orders.values():
        if order.get("currency") is not None:
            found[(f"order {order['id']}", order["currency"])] += 1
    wrong = sorted(what for what, code in found if code != currency)
    if wrong:
        anomalies.add("currency", f"the shop prices in {currency}, but {len(wrong)} prices "
                      f"and orders are in another: {wrong[:10]}")
