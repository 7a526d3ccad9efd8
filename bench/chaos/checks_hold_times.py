"""When holds end (checks_holds.py; docs/domain.md, "Holds"), against each hold's `expiresAt`:

- no hold released or consumed after its expiry (hold-after-expiry). An event's `time` is
  taken when its change begins, before the hold is judged (service/mod.rs: `change`,
  `create`), so a hold.released or hold.consumed whose time is at or after the expiry was
  judged usable after it; so was one whose ending (`ended.at`, taken later) is, when no
  attempt of the op that ended it was sent before the expiry;
- no hold expired before its expiry (hold-expired-early), and each expired one ended within
  the stated bound, the sweep interval (`--hold-sweep-ms`, the run's settings) and a second;
  when a fault that may stop the sweepers (any but the read standby's own) is on between the
  expiry and that bound, within 2 s of the end of the last such fault (hold-expiry-late).
  The lateness (the hold.expired's time, when its sweep began, minus `expiresAt`) is
  reported: p50, p99, max;
- every answer to a release or checkout of a hold fits when it was sent and what became of
  the hold (hold-refusal, hold-after-expiry): a 2xx to an attempt sent after the expiry only
  as the replay (same key) of an attempt sent before it that may have checked it out; 409 `hold_expired` only to an
  attempt answered after the expiry; 409 `hold_ended` only once the hold was released or
  consumed (an expired one is `hold_expired`); 404 only from a node of the previous version,
  which knows no hold; nothing else. An acknowledged release or checkout is the hold's ending
  (acknowledged-write-lost).
"""

from checks_actors import event_time, on_previous, previous_version_windows
from holding import moment_of
from markers import op_of_ship_date
from model import attempt_class
from report import percentile

ENDINGS = {"hold.released": "released", "hold.expired": "expired",
           "hold.consumed": "consumed"}
# The stated bound is the sweep interval and this (docs/api.md).
SWEEP_GRACE_SECONDS = 1.0
# Inside a fault, the sweepers have this long after its end (#67).
FAULT_GRACE_SECONDS = 2.0
# The asynchronous read standby's own faults: none keeps a sweeper from ending a hold (a
# plain read that finds it behind goes elsewhere). A fault of the database's own does: the
# commits wait for the synchronous standby's replay (remote_apply), which replay_pause of
# the pair and replay_pause_all hold back.
BESIDE_THE_SWEEPERS = {"kill_standby", "standby_link_stall", "replay_pause"}
BESIDE_THE_SWEEPERS_TARGET = "read-standby"
# Client times are rounded to 0.1 ms; the service's clock is the same machine's.
SLACK_SECONDS = 0.01
# The service's own times against each other: a store may keep them to the microsecond.
CLOCK_SLACK_SECONDS = 0.001


def fault_windows(history):
    """[(start, end)] of the faults that may keep the sweepers from ending holds, by start."""
    return sorted((f["start"], f["end"]) for f in history.faults
                  if f.get("kind") not in BESIDE_THE_SWEEPERS
                  or f.get("target") != BESIDE_THE_SWEEPERS_TARGET)


def expiry_deadline(expires, bound, windows):
    """The latest a hold expiring at `expires` may be ended: `bound` after it, or, while a
    fault is on between the expiry and that moment, FAULT_GRACE_SECONDS after the fault's end
    (and so on, for faults overlapping it)."""
    deadline = expires + bound
    for start, end in windows:
        if start > deadline:
            break
        if end >= expires:
            deadline = max(deadline, end + FAULT_GRACE_SECONDS)
    return deadline


def _enders(history, seen, hold_id, how, ended):
    """The ops that may have ended the hold `how`: its releases, or the checkout its order's
    shipDate marker names."""
    if how == "released":
        return [op for op in history.ops_of("release_hold")
                if op["meta"].get("holdId") == hold_id]
    order = seen.orders.get(ended.get("orderId")) or {}
    op = history.ops.get(op_of_ship_date(order.get("shipDate")))
    return [op] if op is not None else []


def check_times(history, seen, anomalies):
    """Each ending against its hold's expiry; returns the report's lateness summary."""
    bound = seen.sweep_seconds + SWEEP_GRACE_SECONDS
    windows = fault_windows(history)
    lateness, inside = [], 0
    for hold_id, events in sorted(seen.endings.items()):
        expires = seen.expires(hold_id)
        if expires is None:
            continue
        expiry = seen.holds[hold_id].get("expiresAt")
        for event in events:
            how, ended = ENDINGS[event["type"]], event["data"].get("ended") or {}
            at, began = moment_of(ended.get("at")), event_time(event)
            times = [t for t in (at, began) if t is not None]
            if not times:
                continue
            where = (f"hold {hold_id} (expiring {expiry}) was {how} at {ended.get('at')} "
                     f"(event {event['id']}, its change begun {event.get('time')})")
            if how != "expired":
                if began is not None and began >= expires + CLOCK_SLACK_SECONDS:
                    anomalies.add("hold-after-expiry", f"{where}: judged usable after its "
                                  "expiry", hold=hold_id, event=event["id"])
                elif max(times) >= expires and not any(
                        call["sent"] < expires + SLACK_SECONDS
                        for op in _enders(history, seen, hold_id, how, ended)
                        for call in history.calls.get(op["op"], [])):
                    anomalies.add("hold-after-expiry", f"{where}: ended after its expiry, "
                                  "and no attempt of the op that ended it was sent before",
                                  hold=hold_id, event=event["id"])
                continue
            if min(times) < expires - CLOCK_SLACK_SECONDS:
                anomalies.add("hold-expired-early", f"{where}: before its expiry",
                              hold=hold_id, event=event["id"])
            when = began if began is not None else at
            lateness.append(when - expires)
            deadline = expiry_deadline(expires, bound, windows)
            inside += deadline > expires + bound
            if when > deadline:
                anomalies.add("hold-expiry-late", f"{where}: {when - expires:.3f} s after its "
                              f"expiry, past {deadline - expires:.3f} s (the sweepers' "
                              f"{bound:.1f} s" + (", and the faults on then with 2 s after "
                                                  "their end" if deadline > expires + bound
                                                  else "") + ")",
                              hold=hold_id, event=event["id"], lateness=when - expires)
    return {"bound_seconds": bound, "lateness_seconds": {
        "expired": len(lateness), "in_fault_windows": inside,
        "p50": _rounded(percentile(lateness, 0.5)), "p99": _rounded(percentile(lateness, 0.99)),
        "max": _rounded(max(lateness, default=None))}}


def _rounded(value):
    return None if value is None else round(value, 3)


def _judge(kind, call, expires, how, ended_at, replay, windows):
    """What is wrong with one attempt's answer, as (check, why), or None."""
    status, code = call.get("status"), call.get("code")
    cls = attempt_class(call)
    if cls == "ok":
        if call["sent"] > expires + SLACK_SECONDS and not replay:
            return "hold-after-expiry", (f"accepted ({status}), though sent "
                                         f"{call['sent'] - expires:.3f} s after the expiry")
        return None
    if cls != "refused":
        return None
    if (status, code) == (409, "hold_expired"):
        if call["answered"] < expires - SLACK_SECONDS:
            return "hold-refusal", (f"refused hold_expired, though answered "
                                    f"{expires - call['answered']:.3f} s before the expiry")
        return None
    if (status, code) == (409, "hold_ended"):
        if how not in ("released", "consumed") or ended_at is None \
                or ended_at > call["answered"] + SLACK_SECONDS:
            return "hold-refusal", (f"refused hold_ended, though the hold was not released "
                                    f"or consumed by then (it ended {how} at {ended_at})")
        return None
    if status == 404 and on_previous(windows, call["node"], call["sent"], call["answered"]):
        return None  # a node of the previous version knows no hold
    return "hold-refusal", f"refused {status} {code}: {call.get('resp')}"


def check_follow_ups(history, seen, anomalies):
    """Releases' and checkouts' answers against the hold; returns how many checkouts sent
    only after the hold's expiry were refused for good (for the report)."""
    windows = previous_version_windows(history)
    refused_late = 0
    for kind in ("release_hold", "hold_checkout"):
        for op in history.ops_of(kind):
            hold_id = op["meta"]["holdId"]
            expires = seen.expires(hold_id)
            how, ended = seen.ending(hold_id)
            calls = history.calls.get(op["op"], [])
            result, deciding = history.outcome(op)
            what = f"{kind} op {op['op']} of hold {hold_id}"
            if result == "ok" and (how, ended.get("orderId")) != (
                    ("released", None) if kind == "release_hold"
                    else ("consumed", (deciding.get("resp") or {}).get("id"))):
                anomalies.add("acknowledged-write-lost", f"{what} was acknowledged, but the "
                              f"hold ended {how} {ended}", op=op["op"])
            if expires is None:
                continue
            for call in calls:
                # Only an attempt that may have checked it out can be replayed (not one
                # that did nothing, nor one refused).
                replay = kind == "hold_checkout" and any(
                    c["sent"] < expires - SLACK_SECONDS and attempt_class(c) in ("ok", "unknown")
                    for c in calls if c["sent"] < call["sent"])
                problem = _judge(kind, call, expires, how, moment_of(ended.get("at")), replay,
                                 windows)
                if problem is not None:
                    anomalies.add(problem[0], f"{what} (expiring {seen.holds[hold_id].get('expiresAt')}), "
                                  f"attempt sent at {call['sent']:.3f} to node{call['node']}: "
                                  f"{problem[1]}", op=op["op"], call=call)
            if kind == "hold_checkout" and result == "failed" and calls \
                    and calls[0]["sent"] >= expires and deciding.get("code") == "hold_expired":
                refused_late += 1
    return refused_late
