"""The history as the checker sees it: ops with their attempts, and what each op came to.

An attempt is one of:
  ok        2xx: it happened, as answered
  refused   a definite 4xx: the service says it did not happen
  no_effect the attempt itself did nothing: no connection (refused), 503 `unavailable`
            (docs/api.md: "this did not happen"), 408, 429, 409 `idempotency_key_in_use`
  unknown   anything else: no answer, a reset, a time-out, 503 `outcome_unknown`, a 500
An op's outcome is "ok", "failed" or "unknown"; the rules per kind are in `outcome`.
"""

from collections import defaultdict

NO_EFFECT_CODES = {"unavailable", "idempotency_key_in_use", "rate_limited", "request_timeout"}
# A 5xx that says the request was refused for good (docs/domain.md): a checkout of several
# lines before the stock ledger has begun is 503 `upgrade_unfinished`, and nothing happened.
REFUSED_5XX_CODES = {"upgrade_unfinished"}


def attempt_class(call):
    status = call.get("status")
    if status is None:
        return "no_effect" if call.get("error") == "refused" else "unknown"
    if 200 <= status < 300:
        return "ok"
    code = call.get("code")
    if code in NO_EFFECT_CODES:
        return "no_effect"
    if code in REFUSED_5XX_CODES:
        return "refused"
    if 400 <= status < 500 and status not in (408, 429):
        return "refused"
    return "unknown"


# A definite refusal that follows an attempt of unknown fate may be that attempt's own
# doing: a stock set whose first try committed gets 412 on the retry (its If-Match is stale
# now), and so do an adjustment (its If-Match or changeFromQuantity is) and a price change;
# a cancel whose first try committed gets 404. Keyed creates and checkouts have no such
# case: the retry replays the first answer, but for a 404 from a node of the previous
# version, which does not know the route (sales.UNSERVED_KINDS and the price and adjustment
# routes): that says nothing of an attempt on a node of this version before it.
AMBIGUOUS_AFTER_UNKNOWN = {
    "set_stock": {412},
    "adjust": {412, 404},
    "set_price": {412, 404},
    "cancel_order": {404},
    "checkout": {404},
    "place_hold": {404},
    "hold_checkout": {404},
    # A release is not keyed: its retry after one that ended the hold is 409 hold_ended.
    "release_hold": {409, 404},
}

# The ops that order: each carries a shipDate marker naming it (clients.ship_date_marker);
# a hold's checkout (holding.py) orders the hold's lines.
ORDER_KINDS = ("place_order", "checkout", "hold_checkout")
# The ops that only read: no outcome to judge.
READ_OP_KINDS = ("read_point", "read_page", "read_for_set", "read_price")


def order_lines(order):
    """An order's lines, by line number, as dicts with petId and quantity (and unitAmount
    and amount when priced); an order of the previous version, which has no `lines`, is its
    one line."""
    lines = order.get("lines")
    if lines:
        return sorted(lines, key=lambda line: line.get("lineNo", 0))
    return [{"lineNo": 1, "petId": order.get("petId"), "quantity": order.get("quantity")}]


def answered_ids(history, kind):
    """{id: [ops]}: the ids ops of `kind` were answered 2xx with (a hold's, for place_hold)."""
    found = {}
    for op in history.ops_of(kind):
        for call in history.calls.get(op["op"], []):
            resp = call.get("resp")
            if attempt_class(call) == "ok" and isinstance(resp, dict) and "id" in resp:
                ops = found.setdefault(resp["id"], [])
                if op not in ops:
                    ops.append(op)
    return found


def hold_ops(history):
    """{(event type, hold id): [op ids]}: the ops that may have made a hold's hold.placed
    (the placing answered with its id) and hold.released (its releases)."""
    found = {("hold.placed", hold): [op["op"] for op in ops]
             for hold, ops in answered_ids(history, "place_hold").items()}
    for op in history.ops_of("release_hold"):
        found.setdefault(("hold.released", op["meta"].get("holdId")), []).append(op["op"])
    return found


def outcome(kind, calls):
    """("ok" | "failed" | "unknown", the deciding call or None)."""
    classes = [attempt_class(call) for call in calls]
    for call, cls in zip(calls, classes):
        if cls == "ok":
            return "ok", call
    if not calls:
        return "failed", None  # never sent: it cannot have happened
    if classes[-1] == "refused":
        earlier_unknown = "unknown" in classes[:-1]
        if earlier_unknown and calls[-1]["status"] in AMBIGUOUS_AFTER_UNKNOWN.get(kind, ()):
            return "unknown", calls[-1]
        return "failed", calls[-1]
    if "unknown" in classes:
        return "unknown", None
    return "failed", calls[-1]


class History:
    """A loaded history: ops by id with their calls in the order sent, faults, meta."""

    def __init__(self, records):
        self.meta = {}
        self.ops = {}
        self.calls = defaultdict(list)
        self.faults = []
        self.all_calls = []
        self.webhooks = []     # subscriptions
        self.deliveries = []   # what the receiver got, in the order it got it
        self.sse = []          # stretches of SSE listeners' connections, in order
        self.drain = None      # how the wait for webhooks after the load ended (last one)
        self.metrics = []      # the nodes' /metrics of reads per server, scraped in the run
        self.replicas = None   # the read standbys the nodes were given, if any
        self.keys = {}         # key id -> its id, name, role and the client it is for
        for record in records:
            kind = record.get("t")
            if kind == "call":
                self.calls[record["op"]].append(record)
                self.all_calls.append(record)
            elif kind == "op":
                self.ops[record["op"]] = record
            elif kind == "fault":
                self.faults.append(record)
            elif kind == "meta":
                self.meta.update(record)
            elif kind == "webhook":
                self.webhooks.append(record)
            elif kind == "delivery":
                self.deliveries.append(record)
            elif kind == "sse":
                self.sse.append(record)
            elif kind == "drain":
                self.drain = record
            elif kind == "metrics":
                self.metrics.append(record)
            elif kind == "replicas":
                self.replicas = record
            elif kind == "key":
                self.keys[record["id"]] = record
        for calls in self.calls.values():
            calls.sort(key=lambda c: c["sent"])
        self.all_calls.sort(key=lambda c: c["sent"])
        self._outcomes = {}

    def ops_of(self, kind):
        return [op for op in self.ops.values() if op["kind"] == kind]

    def outcome(self, op):
        op_id = op["op"]
        if op_id not in self._outcomes:
            self._outcomes[op_id] = outcome(op["kind"], self.calls.get(op_id, []))
        return self._outcomes[op_id]


class Anomalies:
    def __init__(self):
        self.items = []

    def add(self, check, message, **evidence):
        self.items.append({"check": check, "message": message, "evidence": evidence})

    def __len__(self):
        return len(self.items)
