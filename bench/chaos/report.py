"""The report: faults by kind, requests by kind and status, op outcomes, healing times, how
long after the load each webhook subscription took to catch up, the reads checked by how
they were sent, which servers served reads (the nodes' petstore_db_reads_total), and holds:
how they ended and how late after their expiry the sweepers ended those that expired.

Healing of a fault: from its end to the first 2xx answer to a request sent after the end,
through each node the fault hit (for a failover, every node); the slowest node counts. Every
/v1 request reads the database, and each node's feed follower asks every 200 ms, so a node
that serves again shows within a fraction of a second even when no writer happens to pick
it (writers stuck retrying elsewhere often do not). A failover ends only once the rebuilt
standby is synchronous again, when writes work too.
When faults on one node overlap, the clock starts when the last of them ends.
"""

import bisect
import math
from collections import Counter, defaultdict

from model import READ_OP_KINDS


def percentile(values, fraction):
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, math.ceil(fraction * len(ordered)) - 1)
    return ordered[rank]


def healing_times(history, anomalies):
    """[(fault, seconds or None)], adding an anomaly for a fault that never healed.

    Faults overlap: when another fault on the same node is still on at this one's end, or
    starts before the node took a write again, the clock starts at the end of the last of
    them, so that each heal measures a node free of faults coming back."""
    successes = defaultdict(list)  # node -> [(sent, answered)] of 2xx answers, by sent
    for call in history.all_calls:
        status = call.get("status")
        if status is not None and 200 <= status < 300:
            successes[call["node"]].append((call["sent"], call["answered"]))
    sent_times = {node: [sent for sent, _ in pairs] for node, pairs in successes.items()}
    healed = []
    for fault in sorted(history.faults, key=lambda f: f["start"]):
        slowest = 0.0
        for node in fault["nodes"]:
            others = [f for f in history.faults if f is not fault and node in f["nodes"]]
            clear = fault["end"]
            while True:
                at = bisect.bisect_left(sent_times.get(node, []), clear)
                pairs = successes[node][at:]
                first = min((answered for _, answered in pairs), default=None)
                horizon = first if first is not None else float("inf")
                blockers = [f["end"] for f in others
                            if f["start"] < horizon and f["end"] > clear]
                if not blockers:
                    break
                clear = max(blockers)
            if first is None:
                slowest = None
                break
            slowest = max(slowest, first - clear)
        if slowest is None:
            anomalies.add("never-healed", f"{fault['kind']} on {fault['target']} ending at "
                          f"{fault['end']:.3f}: a node it hit never answered 2xx again",
                          fault=fault)
        if fault.get("failed"):
            # A fault the nemesis could not inject or undo leaves the setup in a state the
            # run was not meant to test; a clean result would claim more than was shown.
            anomalies.add("nemesis", f"{fault['kind']} on {fault['target']} failed: "
                          f"{fault['failed']}", fault=fault)
        healed.append((fault, slowest))
    return healed


def status_label(call):
    if call.get("status") is None:
        return f"no answer ({call.get('error')})"
    code = call.get("code")
    return f"{call['status']} {code}" if code else str(call["status"])


def build(history, anomalies, healed, settings, catch_up=None, reads=None, actors=None,
          holds=None):
    requests = defaultdict(Counter)
    for call in history.all_calls:
        requests[call["kind"]][status_label(call)] += 1
    outcomes = defaultdict(Counter)
    for op in history.ops.values():
        if op["kind"] in READ_OP_KINDS:
            continue
        outcomes[op["kind"]][history.outcome(op)[0]] += 1
    faults = defaultdict(lambda: {"count": 0, "failed": 0, "seconds": 0.0})
    for fault in history.faults:
        entry = faults[fault["kind"]]
        entry["count"] += 1
        entry["failed"] += 1 if fault.get("failed") else 0
        entry["seconds"] = round(entry["seconds"] + fault["end"] - fault["start"], 1)
    healing = {}
    by_kind = defaultdict(list)
    for fault, seconds in healed:
        if seconds is not None:
            by_kind[fault["kind"]].append(seconds)
            by_kind["all"].append(seconds)
    for kind, values in sorted(by_kind.items()):
        healing[kind] = {"faults": len(values), "max": round(max(values), 3),
                         "p99": round(percentile(values, 0.99), 3)}
    return {
        "settings": settings,
        "requests": {"total": len(history.all_calls),
                     "by_kind": {k: dict(v.most_common()) for k, v in sorted(requests.items())}},
        "operations": {k: dict(v) for k, v in sorted(outcomes.items())},
        "faults": dict(sorted(faults.items())),
        "upgrades": [{"at": round(f["start"] - history.meta.get("started", f["start"]), 1),
                      "detail": f["detail"]}
                     for f in sorted(history.faults, key=lambda f: f["start"])
                     if f["kind"] == "upgrade" and not f.get("failed")],
        "healing_seconds": healing,
        "webhook_catch_up": catch_up or {"subscriptions": {}},
        "reads": reads or {},
        "actors": actors or {},
        "holds": holds or {},
        "anomalies": anomalies.items,
        "anomaly_count": len(anomalies),
    }


def render(report):
    """The report as text for a terminal."""
    lines = []
    s = report["settings"]
    lines.append(f"chaos report: seed {s.get('seed')}, {s.get('minutes')} min, "
                 f"{s.get('nodes')} nodes, deadline {s.get('deadline')} s")
    lines.append("faults:")
    for kind, entry in report["faults"].items():
        failed = f", {entry['failed']} failed to inject" if entry["failed"] else ""
        lines.append(f"  {kind:<16} {entry['count']:>4}  ({entry['seconds']} s in all{failed})")
    if not report["faults"]:
        lines.append("  none")
    for upgrade in report.get("upgrades", []):
        lines.append(f"  upgrade at +{upgrade['at']:.0f} s: {upgrade['detail']}")
    lines.append(f"requests: {report['requests']['total']}")
    for kind, statuses in report["requests"]["by_kind"].items():
        text = ", ".join(f"{label}: {n}" for label, n in statuses.items())
        lines.append(f"  {kind:<16} {text}")
    lines.append("operations (outcome as the checker judged it):")
    for kind, counts in report["operations"].items():
        text = ", ".join(f"{label} {n}" for label, n in sorted(counts.items()))
        lines.append(f"  {kind:<16} {text}")
    lines.append("healing (s, from a fault's end, or the end of the last fault overlapping it "
                 "on a node, to the first 2xx through each node it hit):")
    for kind, entry in report["healing_seconds"].items():
        lines.append(f"  {kind:<16} max {entry['max']:.2f}  p99 {entry['p99']:.2f}  "
                     f"({entry['faults']} faults)")
    lines.extend(render_catch_up(report.get("webhook_catch_up") or {}))
    lines.extend(render_reads(report.get("reads") or {}))
    actors = report.get("actors") or {}
    if actors.get("events"):
        lines.append(f"actors checked: {actors['events']} events, {actors['by_operation']} "
                     f"against the key of the operation that made them, {actors['other']} "
                     f"against the shop's keys, {actors.get('by_chore', 0)} against the holds' "
                     f"sweeper; {actors['unknown_allowed']} without an actor where a node of "
                     "the previous version may have written them")
    lines.extend(render_holds(report.get("holds") or {}))
    lines.append(f"anomalies: {report['anomaly_count']}")
    for anomaly in report["anomalies"][:100]:
        lines.append(f"  [{anomaly['check']}] {anomaly['message']}")
    if report["anomaly_count"] > 100:
        lines.append(f"  ... {report['anomaly_count'] - 100} more in the JSON report")
    return "\n".join(lines)


def render_holds(holds):
    """Lines for the holds: how they ended, and the expiry lateness."""
    if not holds.get("placed"):
        return []
    late = holds.get("lateness_seconds") or {}
    lines = [f"holds: {holds['placed']} placed, {holds.get('released', 0)} released, "
             f"{holds.get('expired', 0)} expired, {holds.get('consumed', 0)} consumed; "
             f"{holds.get('refused_after_expiry', 0)} checkouts sent after the expiry refused"]
    if late.get("expired"):
        lines.append(f"  expiry lateness (s after expiresAt): p50 {late['p50']:.3f}  p99 "
                     f"{late['p99']:.3f}  max {late['max']:.3f}  (bound "
                     f"{holds.get('bound_seconds', 0):.1f} s; {late['in_fault_windows']} of "
                     f"{late['expired']} due while a fault was on)")
    return lines


def render_catch_up(catch_up):
    """Lines for each subscription's catch-up after the load."""
    subs = catch_up.get("subscriptions") or {}
    if not subs:
        return []
    limit = catch_up.get("limit_seconds")
    lines = [f"webhook catch-up (s from the load's end to the delivery that completed each "
             f"subscription; over {limit:.0f} s fails):"]
    if catch_up.get("load_ended") is None:
        lines.append("  not measured: the history does not say when the load ended")
        return lines
    for name, entry in subs.items():
        seconds = entry.get("seconds")
        if not entry.get("caught_up"):
            waited = f"{seconds:.1f} s" if seconds is not None else "an unknown time"
            lines.append(f"  {name:<16} never caught up: the wait gave up {waited} after the "
                         "load's end (reported as webhook-missing)")
        elif seconds is None:
            lines.append(f"  {name:<16} not measured (deliveries without a receipt time)")
        else:
            slow = "  SLOW" if limit is not None and seconds > limit else ""
            lines.append(f"  {name:<16} {seconds:8.2f}  ({entry['events']} events){slow}")
    return lines


def render_reads(reads):
    """Lines for the reads checked, and the servers that served them."""
    lines = []
    checked = reads.get("checked") or {}
    if checked:
        lines.append("reads checked against the writes each must see: "
                     + ", ".join(f"{mode} {n}" for mode, n in sorted(checked.items()))
                     + f" ({reads.get('objects', 0)} objects shown)"
                     + (f"; {reads['tokens_unmatched']} tokens no write's answer carried"
                        if reads.get("tokens_unmatched") else ""))
        older = reads.get("older_than_plain") or {}
        if older:
            lines.append("  allowed by their token or bound, but older than a plain read may "
                         "show: " + ", ".join(f"{mode} {n}" for mode, n in sorted(older.items())))
    by_server = reads.get("by_server") or {}
    total = by_server.get("total") or {}
    if total:
        all_reads = sum(total.values())
        standbys = sum(n for server, n in total.items() if server != "primary")
        share = f" ({100 * standbys / all_reads:.0f} % on standbys)" if all_reads else ""
        lines.append("reads per server (petstore_db_reads_total, every node, every start): "
                     + ", ".join(f"{server} {n}" for server, n in total.items()) + share)
        synchronous = by_server.get("synchronous_scrapes") or {}
        if synchronous.get("scrapes"):
            lines.append(f"  a synchronous standby (read asking the primary nothing) in "
                         f"{synchronous.get('with_one', 0)} of {synchronous['scrapes']} scrapes")
        for node, last in sorted((by_server.get("last") or {}).items()):
            up, lag = last.get("up") or {}, last.get("lag") or {}
            text = ", ".join(f"{server} up {up.get(server, 0):.0f} lag {lag.get(server, 0):.0f} B"
                             for server in sorted(set(up) | set(lag)))
            lines.append(f"  node{node} at its last scrape: {text or 'no standby series'}")
    return lines


def render_all(result):
    """Every shop's report, one after the other."""
    parts = []
    for shop, report in result["shops"].items():
        parts.append(f"=== shop {shop} ===")
        parts.append(render(report))
    skipped = result["settings"].get("sqlite_skipped")
    if skipped:
        parts.append(f"not tested on the SQLite shop: {'; '.join(skipped)}")
    parts.append(f"anomalies in all: {result['anomaly_count']}")
    return "\n".join(parts)
