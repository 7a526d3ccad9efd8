"""Checks of writes against the final state and the feed: orders, checkouts and holds'
checkouts (one per idempotency key, acknowledged ones present with their content, refused ones absent),
cancels, completes, keyed creates (pets, categories)."""

from collections import defaultdict

from clients import op_of_ship_date
from model import ORDER_KINDS, order_lines


def _same_instant(a, b):
    return op_of_ship_date(a) == op_of_ship_date(b) and op_of_ship_date(a) is not None


class Final:
    """The final state, indexed."""

    def __init__(self, final):
        self.events = final.get("events", [])
        self.orders = {o["id"]: o for o in final.get("orders", [])}
        self.inventory = {item["petId"]: item for item in final.get("inventory", [])}
        self.pets = final.get("pets", [])
        self.categories = final.get("categories", [])
        # pet id -> its movements, oldest first; None for a run saved before the ledger.
        movements = final.get("movements")
        self.movements = None if movements is None else {
            int(pet): items for pet, items in movements.items()}
        self.ledger_begun = final.get("ledger_begun", True)
        # Every hold the feed placed, read by its id at the end (None: a run saved before
        # holds), and when the final state's reading began.
        self.holds = final.get("holds")
        self.dumped_at = final.get("dumped_at")
        self.shop = final.get("shop")  # GET /v1: the shop's currency
        self.by_type = defaultdict(list)
        for event in self.events:
            self.by_type[event.get("type")].append(event)

    def order_events(self, kind):
        """order id -> [events of this type]."""
        found = defaultdict(list)
        for event in self.by_type[kind]:
            found[event["data"]["id"]].append(event)
        return found


def check_orders(history, final, anomalies):
    placed = final.order_events("order.placed")
    cancelled = final.order_events("order.cancelled")
    completed = final.order_events("order.completed")
    ops_by_order = defaultdict(lambda: defaultdict(list))  # order id -> kind -> [op]
    for kind in ("cancel_order", "complete_order"):
        for op in history.ops_of(kind):
            ops_by_order[op["meta"]["orderId"]][kind].append(op)

    # Every order the database or the feed knows, by the op its shipDate marker names.
    effects = defaultdict(set)
    for order_id, events in placed.items():
        effects[op_of_ship_date(events[0]["data"].get("shipDate"))].add(order_id)
    for order_id, order in final.orders.items():
        effects[op_of_ship_date(order.get("shipDate"))].add(order_id)

    place_ops = {op["op"]: op for kind in ORDER_KINDS for op in history.ops_of(kind)}
    for op_id, op in place_ops.items():
        result, call = history.outcome(op)
        made = effects.get(op_id, set())
        key = op["meta"]["idempotencyKey"]
        if len(made) > 1:
            anomalies.add("one-effect-per-key", f"key {key} made {len(made)} orders",
                          op=op_id, orders=sorted(made))
        if result == "ok":
            ids = {c["resp"]["id"] for c in history.calls[op_id]
                   if c.get("status") == 201 and isinstance(c.get("resp"), dict)}
            if len(ids) > 1:
                anomalies.add("one-effect-per-key",
                              f"key {key} was answered with different orders {sorted(ids)}",
                              op=op_id)
            order_id = call["resp"]["id"]
            _check_acknowledged_order(op, order_id, call["resp"], final, placed, cancelled,
                                      ops_by_order, history, anomalies)
        elif result == "failed" and made:
            anomalies.add("answered-failed-happened",
                          f"{op['kind']} op {op_id} (key {key}) was answered "
                          f"{call and call.get('status')} {call and call.get('code')} "
                          f"but made orders {sorted(made)}", op=op_id)

    for op_id, made in effects.items():
        if op_id not in place_ops:
            anomalies.add("event-without-change",
                          f"orders {sorted(made)} match no order or checkout the clients "
                          "placed",
                          marker_op=op_id)
    for order_id, events in placed.items():
        if len(events) > 1:
            anomalies.add("one-event-per-change", f"order {order_id} has {len(events)} "
                          "order.placed events", ids=[e["id"] for e in events])
    for order_id in final.orders:
        if order_id not in placed:
            anomalies.add("one-event-per-change",
                          f"order {order_id} exists but the feed has no order.placed for it")
    for order_id in placed:
        gone = order_id in cancelled
        if gone == (order_id in final.orders):
            anomalies.add("final-state", f"order {order_id}: "
                          + ("cancelled in the feed but still exists" if gone
                             else "placed, never cancelled in the feed, but gone"))
    _check_cancels_and_completes(history, final, cancelled, completed, ops_by_order,
                                 anomalies)


def _check_acknowledged_order(op, order_id, answered, final, placed, cancelled,
                              ops_by_order, history, anomalies):
    meta = op["meta"]
    if order_id not in placed:
        anomalies.add("acknowledged-write-lost",
                      f"order {order_id} was acknowledged (op {op['op']}) but the feed has "
                      "no order.placed for it", op=op["op"])
    cancel_ops = ops_by_order[order_id]["cancel_order"]
    may_be_cancelled = any(history.outcome(c)[0] != "failed" for c in cancel_ops)
    order = final.orders.get(order_id)
    if order is None and not may_be_cancelled:
        anomalies.add("acknowledged-write-lost",
                      f"order {order_id} was acknowledged (op {op['op']}), never cancelled, "
                      "and is gone", op=op["op"])
    for found in filter(None, [order, answered]):
        if _lines(order_lines(found)) != _lines(asked_lines(op)) \
                or not _same_instant(found.get("shipDate"), meta["shipDate"]):
            anomalies.add("acknowledged-write-lost",
                          f"order {order_id} holds {found}, not what op {op['op']} asked",
                          op=op["op"], asked=meta)


def asked_lines(op):
    """The lines an order op asked for: a checkout's, a hold's checkout's (the hold's), or a
    place_order's one."""
    meta = op["meta"]
    if op["kind"] in ("checkout", "hold_checkout"):
        return meta["lines"]
    return [{"petId": meta["petId"], "quantity": meta["quantity"]}]


def _lines(lines):
    return [(line.get("petId"), line.get("quantity")) for line in lines]


def _check_cancels_and_completes(history, final, cancelled, completed, ops_by_order,
                                 anomalies):
    for order_id, events in cancelled.items():
        if len(events) > 1:
            anomalies.add("one-event-per-change",
                          f"order {order_id} has {len(events)} order.cancelled events")
    for order_id, events in completed.items():
        if len(events) > 1:
            anomalies.add("one-event-per-change",
                          f"order {order_id} has {len(events)} order.completed events")
    all_orders = set(ops_by_order) | set(cancelled) | set(completed)
    for order_id in all_orders:
        outcomes = {kind: [history.outcome(op)[0] for op in ops]
                    for kind, ops in ops_by_order[order_id].items()}
        order = final.orders.get(order_id)
        cancels, completes = outcomes.get("cancel_order", []), outcomes.get("complete_order", [])
        if "ok" in cancels:
            if order_id not in cancelled or order is not None:
                anomalies.add("acknowledged-write-lost",
                              f"the cancel of order {order_id} was acknowledged but the "
                              "order is not cancelled", order=order_id)
        if order_id in cancelled and cancels and all(c == "failed" for c in cancels):
            anomalies.add("answered-failed-happened",
                          f"every cancel of order {order_id} was answered as failed, yet it "
                          "is cancelled", order=order_id)
        if order_id in cancelled and not cancels:
            anomalies.add("event-without-change",
                          f"order {order_id} was cancelled but nobody cancelled it")
        if "ok" in completes:
            if order_id not in completed or order is None or not order.get("complete"):
                anomalies.add("acknowledged-write-lost",
                              f"the completion of order {order_id} was acknowledged but the "
                              f"order is {order}", order=order_id)
        if order_id in completed and all(c == "failed" for c in completes):
            anomalies.add("answered-failed-happened" if completes else "event-without-change",
                          f"order {order_id} was completed but no completion of it could "
                          "have happened", order=order_id)
        if order is not None and bool(order.get("complete")) != (order_id in completed):
            anomalies.add("one-event-per-change",
                          f"order {order_id} is complete={order.get('complete')} but the "
                          f"feed has {len(completed.get(order_id, []))} order.completed")


def check_creates(history, final, anomalies, run_id):
    """Pets and categories made with an Idempotency-Key: exactly one per key (found by the
    unique name each op gives), present when acknowledged, absent when refused."""
    for kind, entities, event_type in (("create_pet", final.pets, "pet.created"),
                                       ("create_category", final.categories,
                                        "category.created")):
        by_name = defaultdict(list)
        for entity in entities:
            by_name[entity["name"]].append(entity)
        events_by_name = defaultdict(list)
        for event in final.by_type[event_type]:
            events_by_name[event["data"].get("name")].append(event)
        names = set()
        for op in history.ops_of(kind):
            name = op["meta"]["name"]
            names.add(name)
            result, call = history.outcome(op)
            found, events = by_name.get(name, []), events_by_name.get(name, [])
            if len(found) > 1 or len(events) > 1:
                anomalies.add("one-effect-per-key", f"{kind} op {op['op']} ({name}) made "
                              f"{len(found)} and has {len(events)} {event_type} events")
            if result == "ok":
                wanted = call["resp"]["id"]
                if [e["id"] for e in found] != [wanted] or \
                        [e["data"]["id"] for e in events] != [wanted]:
                    anomalies.add("acknowledged-write-lost",
                                  f"{kind} op {op['op']} was acknowledged as {wanted}; found "
                                  f"{found}, events {len(events)}", op=op["op"])
            elif result == "failed" and (found or events):
                anomalies.add("answered-failed-happened",
                              f"{kind} op {op['op']} ({name}) was answered as failed but "
                              f"exists: {found}", op=op["op"])
            elif len(found) != len(events):
                anomalies.add("one-event-per-change", f"{kind} op {op['op']} ({name}): "
                              f"{len(found)} found, {len(events)} {event_type} events")
        for name in set(by_name) | set(events_by_name):
            if name and name.startswith(f"{run_id}-") and name not in names:
                anomalies.add("event-without-change", f"{name} exists but no op made it")
