"""Checks of checkouts and of what every order keeps (docs/domain.md, "Checkout"; the order's
lines, amounts and stock movements), against the history, the final feed, state and ledger.

- a basket naming a pet on two lines is refused, every time a node of this version answers
  it for good, with 422 `pet_repeated` (checkout-repeated-pet): the rule that keeps summed
  demand from slipping past the stock check (a node of the previous version knows no
  checkout: 404);
- a refused checkout names each refused line in `errors` (`/lines/N/petId` or `quantity`, N
  a line it sent, with a line's code), and never `price_missing`: every pet a checkout names
  was priced at setup and no price is ever removed (checkout-refusal);
- an acknowledged checkout is in the feed, and in the final state unless a cancel of it may
  have happened, with the lines (pet, quantity, unit price, amount), currency and total its
  answer gave; every line is priced, and the total is its `expectedTotal` when it sent one
  (acknowledged-write-lost, order-total). That it is there at all, once, is check_orders';
- nothing of a refused checkout was written: no movement names an order its shipDate marker
  names (answered-failed-happened; the orders themselves are check_orders');
- every order, in the final state and in the feed, adds up: each priced line's amount is its
  unit price times its quantity, the total their sum, and an order with an unpriced line has
  no total (order-total);
- each line of every order the feed placed has one `committed` movement naming the order and
  line, with its pet and units (`hold_committed` for an order a hold's checkout placed: the
  feed's hold.consumed names it), and one `sold` once the feed completed the order or one
  `released` once it cancelled it; every movement of an order names an order and line the
  feed has, and an order's change of it (ledger-line, movement-without-order). Not on a
  database the previous version made: it has no ledger yet (checks_ledger's ledger-gate).
"""

import re
from collections import defaultdict

from checks_actors import on_previous, previous_version_windows
from clients import op_of_ship_date
from model import attempt_class, order_lines

LINE_CODES = {"insufficient_stock", "pet_not_available", "price_missing", "unknown_pet"}
LINE_FIELD = re.compile(r"^/lines/(\d+)/(petId|quantity)$")
# What each change of an order moves in the ledger, per line.
ORDER_MOVES = {"order.placed": "committed", "order.cancelled": "released",
               "order.completed": "sold"}


def expected_refusal(history, call):
    """True for the 422 `pet_repeated` a basket that names a pet twice must get: the soak
    asks for it on purpose (check_calls must not take it for a malformed request)."""
    op = history.ops.get(call.get("op"))
    return (call.get("code") == "pet_repeated" and op is not None
            and op["kind"] == "checkout" and op["meta"].get("repeated"))


def priced(order):
    """What an order says it costs: its lines and amounts, currency and total."""
    return {"lines": [(line.get("lineNo"), line.get("petId"), line.get("quantity"),
                       line.get("unitAmount"), line.get("amount"))
                      for line in order_lines(order)],
            "currency": order.get("currency"), "totalAmount": order.get("totalAmount")}


def check_checkouts(history, final, anomalies):
    placed = final.order_events("order.placed")
    windows = previous_version_windows(history)
    made = defaultdict(set)  # op id -> the order ids its marker names
    for order in list(final.orders.values()) + [e["data"] for e in final.by_type["order.placed"]]:
        made[op_of_ship_date(order.get("shipDate"))].add(order["id"])
    for op in history.ops_of("checkout"):
        calls = history.calls.get(op["op"], [])
        if op["meta"].get("repeated"):
            _check_repeated(op, [c for c in calls if not on_previous(
                windows, c["node"], c["sent"], c["answered"])], anomalies)
        for call in calls:
            if call.get("status") == 409 and call.get("code") in LINE_CODES:
                _check_refusal(op, call, anomalies)
        result, call = history.outcome(op)
        if result == "ok" and isinstance(call.get("resp"), dict):
            _check_answer(op, call["resp"], final, placed, anomalies)
        elif result == "failed":
            _check_nothing_moved(op, made.get(op["op"], set()), final, anomalies)


def _check_repeated(op, calls, anomalies):
    for call in calls:
        if attempt_class(call) in ("ok", "refused") and \
                (call.get("status"), call.get("code")) != (422, "pet_repeated"):
            anomalies.add("checkout-repeated-pet",
                          f"checkout op {op['op']} names a pet on two lines "
                          f"({op['meta']['lines']}) and was answered {call.get('status')} "
                          f"{call.get('code') or ''}, not 422 pet_repeated",
                          op=op["op"], call=call)


def _check_refusal(op, call, anomalies):
    lines = op["meta"]["lines"]
    errors = (call.get("resp") or {}).get("errors") or []
    wrong = []
    for error in errors:
        match = LINE_FIELD.match(str(error.get("field")))
        if not match or int(match.group(1)) >= len(lines) or error.get("code") not in LINE_CODES:
            wrong.append(error)
        elif error.get("code") == "price_missing":
            wrong.append(error)  # every pet a checkout names was priced at setup
    if not errors or wrong or call.get("code") == "price_missing":
        anomalies.add("checkout-refusal",
                      f"checkout op {op['op']} was refused {call['status']} {call['code']} "
                      f"with errors {errors[:5]}: "
                      + ("no line is named" if not errors else
                         f"{wrong[:3] or 'price_missing'} is not a refusal of a line it sent "
                         "(every pet it names is priced)"),
                      op=op["op"], call=call)


def _check_answer(op, answered, final, placed, anomalies):
    order_id, meta = answered.get("id"), op["meta"]
    mine = priced(answered)
    unpriced = [line for line in mine["lines"] if line[3] is None]
    if unpriced:
        anomalies.add("order-total", f"checkout op {op['op']} was answered with order "
                      f"{order_id} with unpriced lines {unpriced}: a checkout sells at a price",
                      op=op["op"])
    if meta.get("expectedTotal") is not None and mine["totalAmount"] != meta["expectedTotal"]:
        anomalies.add("order-total", f"checkout op {op['op']} expected a total of "
                      f"{meta['expectedTotal']}, and order {order_id} was placed at "
                      f"{mine['totalAmount']}", op=op["op"])
    events = placed.get(order_id, [])
    copies = [("the feed's order.placed", events[0]["data"])] if events else []
    if order_id in final.orders:
        copies.append(("the final state", final.orders[order_id]))
    for where, copy in copies:
        if priced(copy) != mine:
            anomalies.add("acknowledged-write-lost",
                          f"order {order_id} of checkout op {op['op']}: {where} holds "
                          f"{priced(copy)}, its answer gave {mine}", op=op["op"])


def _check_nothing_moved(op, orders, final, anomalies):
    if not orders or final.movements is None:
        return
    moved = [m["id"] for movements in final.movements.values() for m in movements
             if m.get("orderId") in orders]
    if moved:
        anomalies.add("answered-failed-happened",
                      f"checkout op {op['op']} was refused, yet movements {moved[:10]} name "
                      f"its orders {sorted(orders)}", op=op["op"], movements=moved[:50])


def check_totals(final, anomalies):
    """Every order of the final state and of the feed's order.placed adds up."""
    copies = [(f"order {o['id']}", o) for o in final.orders.values()]
    copies += [(f"order {e['data'].get('id')} in event {e['id']}", e["data"])
               for e in final.by_type["order.placed"]]
    for where, order in copies:
        lines = order_lines(order)
        total = order.get("totalAmount")
        if any(line.get("unitAmount") is None for line in lines):
            if total is not None:
                anomalies.add("order-total", f"{where} has unpriced lines but a total of "
                              f"{total}", order=order.get("id"))
            continue
        wrong = [line for line in lines
                 if line.get("amount") != line["unitAmount"] * line["quantity"]]
        summed = sum(line["unitAmount"] * line["quantity"] for line in lines)
        if wrong or total != summed:
            anomalies.add("order-total", f"{where} totals {total}; its lines "
                          f"{[(l.get('quantity'), l.get('unitAmount'), l.get('amount')) for l in lines]} "
                          f"come to {summed}", order=order.get("id"))


def check_order_movements(final, anomalies):
    """Each order line's movements against the feed's changes of the order."""
    if final.movements is None or not final.ledger_begun:
        return
    rows = defaultdict(list)  # (order, line, kind) -> its movements
    for movements in final.movements.values():
        for m in movements:
            if m["kind"] in ORDER_MOVES.values() or m.get("orderId") is not None:
                rows[(m.get("orderId"), m.get("lineNo"), m["kind"])].append(m)
    lines = {}  # order id -> its lines, as the feed placed it
    expected = {}  # (order, line, kind) -> (pet, units)
    # Orders of a hold's checkout: their units come from held (the hold's checks are
    # checks_holds').
    from_holds = {((event["data"].get("ended") or {}).get("orderId"))
                  for event in final.by_type["hold.consumed"]}
    for event in final.events:
        kind = ORDER_MOVES.get(event.get("type"))
        if kind is None:
            continue
        order_id = event["data"]["id"]
        if kind == "committed" and order_id in from_holds:
            kind = "hold_committed"
        lines.setdefault(order_id, order_lines(event["data"]))
        for line in lines[order_id]:
            expected[(order_id, line["lineNo"], kind)] = (line["petId"], line["quantity"])
    for key, (pet, units) in sorted(expected.items()):
        found = [(m["petId"], m["quantity"]) for m in rows.get(key, [])]
        if found != [(pet, units)]:
            order_id, line, kind = key
            anomalies.add("ledger-line", f"order {order_id} line {line}: expected one "
                          f"{kind} movement of {units} units of pet {pet}, the ledger has "
                          f"{found or 'none'}", order=order_id,
                          movements=[m["id"] for m in rows.get(key, [])])
    for key, found in sorted(rows.items(), key=lambda item: str(item[0])):
        if key not in expected:
            order_id, line, kind = key
            anomalies.add("movement-without-order",
                          f"movements {[m['id'] for m in found]} ({kind}) name order "
                          f"{order_id} line {line}, which the feed never "
                          + ("placed" if order_id not in lines else f"changed that way"),
                          movements=[m["id"] for m in found])
