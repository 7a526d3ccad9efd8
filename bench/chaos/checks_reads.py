"""Checks of reads: no read shows a state older than the writes it must see (docs/api.md,
"Reads from standbys"), whichever server answered it (that the read standbys really served
is checks_standbys').

What a read must see depends on how it was sent (clients.READ_MODES):
- plain (the default): every write acknowledged (answered 2xx) before the read was sent, by
  any node (stale-read);
- with a Consistency-Token: every write whose answer carried that token, and so everything
  that committed before it, of which the soak knows for sure every write acknowledged before
  that write was first sent (stale-token-read);
- with Max-Staleness: N: every write acknowledged more than N s before the read was sent
  (staleness-bound-exceeded).
Times are the client's, which bracket the service's: a write answered before the read was
sent was acknowledged before the service got the read.

Each object a read shows (a pet's stock level, an order, a pet, a category) has a timeline:
its states in the order the final feed committed them (the feed is in commit order), each
made by an event, and each event by the ops that may have caused it (an order's or a
checkout's events, each line's stock change included, by its shipDate marker, a cancel or a
completion by the order's id, a stock set or an adjustment by its pet, level before and level
after, a hold's placing, release or checkout by the hold's id, its pets' stock changes
included; several candidates when they cannot be told apart; none for the sweepers'). A read
then may show any state from the newest one that a write it must see made (`lo`) to the
last before the first state whose causing ops were all sent after the read was answered
(`hi`: such a state committed after the read's snapshot, and so did every later one). With
ambiguous candidates, `lo` takes the earliest and `hi` the latest state they allow: the
check never blames a read that a correct service could have given. A state found only
before `lo` is a stale read; one found nowhere in the window nor before it is
read-unexplained (a state the object reached only later, or never, such as a write that
was never acknowledged and then lost).

What each read shows: GET /v1/inventory/{pet} its stock (404: no pet); GET /v1/pets?id=
whether the pet exists; GET /v1/store/orders/{id} open, complete, or 404 (not yet placed, or
cancelled); pages of stock levels, pets, categories and the client's own orders show every
item they list, and, as they list by id, the absence of every object below their last id
(of every object at all when no next page is linked and the page is not full).
"""

import bisect
import re
from collections import Counter, defaultdict

from checks_feed import LEVEL_KINDS
from clients import op_of_ship_date
from model import ORDER_KINDS, hold_ops, order_lines

ABSENT, GONE, PRESENT, OPEN, COMPLETE = "absent", "gone", "present", "open", "complete"
# Client times are rounded to 0.1 ms in the history.
EPSILON = 0.001
READ_KINDS = ("read_point", "read_page", "read_for_set")
STALE = {"plain": "stale-read", "token": "stale-token-read",
         "staleness": "staleness-bound-exceeded"}

POINT_STOCK = re.compile(r"/v1/inventory/(\d+)$")
POINT_PET = re.compile(r"/v1/pets\?id=(\d+)$")
POINT_ORDER = re.compile(r"/v1/store/orders/(\d+)$")
PAGES = {"/v1/inventory": "stock", "/v1/pets": "pet", "/v1/categories": "category",
         "/v1/store/orders": "order"}
LIMIT = re.compile(r"[?&]limit=(\d+)")


class Timeline:
    """One object's states in commit order; states[0] is the state before the feed says
    anything of it (absent)."""

    def __init__(self):
        self.states = [ABSENT]
        self.events = [None]
        self.sent = [None]  # the earliest first attempt of the ops that may have made it
        self.acks = []      # (acknowledged at, state index, op id), sorted by time
        self._best = None   # acks' running maximum of the index

    def add(self, event_id, state, sent):
        self.states.append(state)
        self.events.append(event_id)
        self.sent.append(sent)
        return len(self.states) - 1

    def seal(self):
        self.acks.sort()
        best, self._best = (0, None), []
        for at, index, op in self.acks:
            if index > best[0]:
                best = (index, op)
            self._best.append(best)

    def lo(self, before):
        """(the newest state a write acknowledged before `before` made, that op's id)."""
        at = bisect.bisect_left(self.acks, (before,))
        return self._best[at - 1] if at else (0, None)

    def hi(self, lo, answered):
        """The last state a read answered at `answered` may show."""
        for index in range(lo + 1, len(self.states)):
            sent = self.sent[index]
            if sent is not None and sent > answered + EPSILON:
                return index - 1
        return len(self.states) - 1


class Reads:
    """The objects' timelines from the final feed, and what the ops did to them."""

    def __init__(self, history, final):
        self.history = history
        self.timelines = defaultdict(Timeline)
        self.made_by = defaultdict(dict)  # op id -> {object: first state index it may be}
        self.token_ops = defaultdict(set)  # Consistency-Token -> ops answered with it
        self.owner = {}  # order id -> the client that placed it
        ops = history.ops
        by_name = defaultdict(list)
        cancels, completes, sets = defaultdict(list), defaultdict(list), defaultdict(list)
        for op in ops.values():
            meta = op.get("meta") or {}
            if op["kind"] in ("create_pet", "create_category"):
                by_name[(op["kind"], meta.get("name"))].append(op["op"])
            elif op["kind"] == "cancel_order":
                cancels[meta.get("orderId")].append(op["op"])
            elif op["kind"] == "complete_order":
                completes[meta.get("orderId")].append(op["op"])
            elif op["kind"] in LEVEL_KINDS:
                sets[(meta.get("petId"), meta.get("prior"), meta.get("value"))].append(op["op"])
        holds = hold_ops(history)
        level = defaultdict(int)
        pending = defaultdict(list)  # pet -> ops of order events whose stock change is due
        touched = set()              # pets with such events
        for event in final.events:
            kind, data = event.get("type"), event.get("data") or {}
            event_id = int(event["id"])
            if kind == "pet.created":
                made = by_name[("create_pet", data.get("name"))]
                self._add(("pet", data["id"]), event_id, PRESENT, made)
                self._add(("stock", data["id"]), event_id, 0, made)
            elif kind == "category.created":
                self._add(("category", data["id"]), event_id, PRESENT,
                          by_name[("create_category", data.get("name"))])
            elif kind == "order.placed":
                op = op_of_ship_date(data.get("shipDate"))
                made = [op] if op in ops and ops[op]["kind"] in ORDER_KINDS else []
                if made:
                    self.owner[data["id"]] = ops[op].get("client")
                self._add(("order", data["id"]), event_id, OPEN, made)
            elif kind == "order.cancelled":
                made = cancels[data["id"]]
                self._add(("order", data["id"]), event_id, GONE, made)
            elif kind == "order.completed":
                self._add(("order", data["id"]), event_id, COMPLETE, completes[data["id"]])
            if kind in ("order.placed", "order.cancelled"):
                for line in order_lines(data):
                    pending[line["petId"]] += made
                    touched.add(line["petId"])
            elif kind in ("hold.placed", "hold.released", "hold.expired"):
                # (A hold's checkout: its order.placed, just before, named its pets.)
                made = holds.get((kind, data["id"]), [])
                for line in data.get("lines") or []:
                    pending[line["petId"]] += made
                    touched.add(line["petId"])
            if kind == "inventory.updated":
                pet, quantity = data.get("petId"), data.get("quantity")
                if pet in touched:
                    made = pending.pop(pet, [])
                    touched.discard(pet)
                else:
                    made = sets[(pet, level[pet], quantity)]
                self._add(("stock", pet), event_id, quantity, made)
                level[pet] = quantity
        for op_id, objects in self.made_by.items():
            result, call = history.outcome(ops[op_id]) if op_id in ops else (None, None)
            if result == "ok":
                for key, index in objects.items():
                    self.timelines[key].acks.append((call["answered"], index, op_id))
        for timeline in self.timelines.values():
            timeline.seal()
        # Ids by kind (and orders by owner), sorted: what a page that lists by id leaves out.
        self.ids = defaultdict(list)
        for kind, object_id in self.timelines:
            self.ids[kind].append(object_id)
            if kind == "order" and object_id in self.owner:
                self.ids[("order", self.owner[object_id])].append(object_id)
        for ids in self.ids.values():
            ids.sort()
        for call in history.all_calls:
            status = call.get("status")
            if call.get("token") and call.get("method") != "GET" and status is not None \
                    and 200 <= status < 300:
                self.token_ops[call["token"]].add(call["op"])

    def _first_sent(self, op_id):
        calls = self.history.calls.get(op_id)
        return calls[0]["sent"] if calls else None

    def _add(self, key, event_id, state, ops):
        sent = [s for s in (self._first_sent(op) for op in ops) if s is not None]
        # Only when every candidate was sent: an op never sent cannot have made it, but a
        # state no op explains bounds nothing.
        index = self.timelines[key].add(event_id, state, min(sent) if sent else None)
        for op in ops:
            self.made_by[op].setdefault(key, index)

    def requirement(self, call):
        """(mode, the time before which every acknowledged write must be seen or None, the
        ops that must be seen whatever their time, what the report says of it)."""
        headers = call.get("headers") or {}
        token = headers.get("Consistency-Token")
        if token:
            ops = self.token_ops.get(token, set())
            sent = [s for s in (self._first_sent(op) for op in ops) if s is not None]
            return "token", (max(sent) if sent else None), ops, f"token {token}"
        staleness = headers.get("Max-Staleness")
        if staleness is not None:
            return ("staleness", call["sent"] - float(staleness), (),
                    f"Max-Staleness {staleness}")
        return "plain", call["sent"], (), "plain"

    def judge(self, key, shown, call, before, required):
        """None if `shown` (a set of states) is allowed on `key`, else (verdict, details)."""
        timeline = self.timelines.get(key)
        if timeline is None:
            return None
        lo, forcing = timeline.lo(before) if before is not None else (0, None)
        for op in required:
            index = self.made_by.get(op, {}).get(key)
            if index is not None and index > lo:
                lo, forcing = index, op
        hi = max(lo, timeline.hi(lo, call["answered"]))
        states = timeline.states
        if any(states[i] in shown for i in range(lo, hi + 1)):
            return None
        older = [i for i in range(lo) if states[i] in shown]
        details = {"object": f"{key[0]} {key[1]}", "shows": sorted(map(str, shown)),
                   "window": [states[i] for i in range(lo, min(hi, lo + 5) + 1)],
                   "events": [timeline.events[lo], timeline.events[hi]],
                   "forcing_op": forcing}
        if forcing is not None:
            op = self.history.ops.get(forcing, {})
            _, ack = self.history.outcome(op) if op else (None, None)
            details["forcing"] = {"op": forcing, "kind": op.get("kind"),
                                  "client": op.get("client"),
                                  "sent": self._first_sent(forcing),
                                  "acknowledged": ack and ack.get("answered"),
                                  "node": ack and ack.get("node"),
                                  "token": ack and ack.get("token")}
        if older:
            details["shown_state_of_event"] = timeline.events[older[-1]]
            return "stale", details
        return "unexplained", details

    def shown(self, call):
        """[(object, {states it may be})] a read's answer shows, or None if it shows nothing
        the check understands."""
        path, status, resp = call["path"], call.get("status"), call.get("resp")
        if status not in (200, 404):
            return None
        for pattern, kind in ((POINT_STOCK, "stock"), (POINT_ORDER, "order"),
                              (POINT_PET, "pet")):
            match = pattern.match(path)
            if not match:
                continue
            key = (kind, int(match.group(1)))
            if status == 404:
                return [(key, {ABSENT, GONE} if kind == "order" else {ABSENT})]
            if not isinstance(resp, dict):
                return None
            if kind == "stock":
                return [(key, {resp.get("quantity")})]
            if kind == "order":
                return [(key, {COMPLETE if resp.get("complete") else OPEN})]
            count = resp.get("count", len(resp.get("items") or []))
            return [(key, {PRESENT} if count else {ABSENT})]
        kind = PAGES.get(path.split("?")[0])
        if kind is None or status != 200 or not isinstance(resp, dict) \
                or not isinstance(resp.get("items"), list):
            return None
        shown, ids = [], []
        for item in resp["items"]:
            if kind in ("stock", "order"):
                if not isinstance(item, list) or len(item) != 2:
                    return None
                ids.append(item[0])
                state = item[1] if kind == "stock" else (COMPLETE if item[1] else OPEN)
                shown.append(((kind, item[0]), {state}))
            else:
                ids.append(item)
                shown.append(((kind, item), {PRESENT}))
        if any(not isinstance(i, int) for i in ids) or ids != sorted(set(ids)):
            return shown  # not listed by id: absences say nothing
        limit = LIMIT.search(path)
        full = resp.get("more") or (limit and len(ids) >= int(limit.group(1)))
        # A customer lists only its own orders.
        known = self.ids[("order", call.get("client")) if kind == "order" else kind]
        end = bisect.bisect_right(known, ids[-1]) if full else len(known)
        listed = set(ids)
        for object_id in known[:end]:
            if object_id not in listed:
                shown.append(((kind, object_id), {ABSENT, GONE} if kind == "order"
                              else {ABSENT}))
        return shown


def check_reads(history, final, anomalies):
    """Every read against the writes it must see; returns the report's summary of them."""
    reads = Reads(history, final)
    checked, objects, unmatched, older = Counter(), 0, 0, Counter()
    for call in history.all_calls:
        if call.get("kind") not in READ_KINDS:
            continue
        shown = reads.shown(call)
        if shown is None:
            continue
        mode, before, required, how = reads.requirement(call)
        if mode == "token" and before is None and not required:
            unmatched += 1
        checked[mode] += 1
        objects += len(shown)
        verdicts = defaultdict(list)
        for key, states in shown:
            verdict = reads.judge(key, states, call, before, required)
            if verdict is not None:
                verdicts[verdict[0]].append(verdict[1])
        if mode != "plain" and not verdicts and any(
                reads.judge(key, states, call, call["sent"], ()) for key, states in shown):
            # Allowed by its token or bound, not as a plain read: a standby served it behind.
            older[mode] += 1
        where = (f"{how} read GET {call['path']} on node{call['node']} by {call.get('client')} "
                 f"(op {call['op']}, sent {call['sent']:.3f}, answered "
                 f"{call['answered']:.3f})")
        for verdict, found in sorted(verdicts.items()):
            first = found[0]
            if verdict == "stale":
                forcing = first.get("forcing") or {}
                why = ""
                if forcing:
                    acked = forcing.get("acknowledged") or 0
                    why = (f": {forcing.get('kind')} op {forcing.get('op')} by "
                           f"{forcing.get('client')} was answered at {acked:.3f} on "
                           f"node{forcing.get('node')}")
                    if forcing.get("op") in required:
                        why += " with the token"
                    elif mode == "token":
                        why += (f", before op {max(required, key=reads._first_sent)}, whose "
                                f"answer carried the token, was sent (at {before:.3f})")
                    else:
                        why += f", {call['sent'] - acked:.2f} s before the read was sent"
                shown_at = first["shown_state_of_event"]
                anomalies.add(STALE[mode], f"{where}: {first['object']} shows "
                              f"{'/'.join(first['shows'])} ("
                              + (f"as of event {shown_at}" if shown_at is not None
                                 else "before its first event")
                              + "), but must show one of "
                              f"{first['window']} (as of event {first['events'][0]} or "
                              f"later){why}"
                              + (f"; {len(found) - 1} more objects" if len(found) > 1 else ""),
                              call=call, objects=found[:10])
            else:
                anomalies.add("read-unexplained", f"{where}: {first['object']} shows "
                              f"{'/'.join(first['shows'])}, which it never was from event "
                              f"{first['events'][0]} to event {first['events'][1]} (the "
                              f"last a write sent before the answer made), nor before: "
                              f"{first['window']}"
                              + (f"; {len(found) - 1} more objects" if len(found) > 1 else ""),
                              call=call, objects=found[:10])
    return {"checked": dict(checked), "objects": objects, "tokens_unmatched": unmatched,
            "older_than_plain": dict(older)}
