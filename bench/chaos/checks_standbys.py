"""The read standbys really served: with replicas configured, the nodes'
`petstore_db_reads_total` (each node's counters summed over its restarts, from the history's
"metrics" lines) must count reads on a standby (reads-never-on-standby)."""

from collections import Counter, defaultdict


def reads_by_server(history):
    """{"total": {server: reads}, "by_node": {node: {server: reads}}, "last": {node: the
    last metrics line}} from the "metrics" lines: a node's counters start again when it
    restarts, so each restart's counts add up."""
    lines = defaultdict(list)
    for record in history.metrics:
        lines[record["node"]].append(record)
    total, by_node, last = Counter(), {}, {}
    # Scrapes that found a standby the primary's commits wait for: the nodes read it then
    # asking the primary nothing.
    synchronous = Counter()
    for record in history.metrics:
        seen = record.get("synchronous") or {}
        synchronous["scrapes"] += 1
        synchronous["with_one"] += any(value == 1 for value in seen.values())
    for node, records in sorted(lines.items()):
        records.sort(key=lambda r: r["at"])
        counted, previous, starts = Counter(), {}, None
        for record in records:
            reads = record.get("reads") or {}
            # A counter that went down means the node restarted unseen: all of them did.
            restarted = record.get("starts") != starts or any(
                value < previous.get(server, 0) for server, value in reads.items())
            for server, value in reads.items():
                counted[server] += value if restarted else value - previous.get(server, 0)
            previous = dict(reads)
            starts = record.get("starts")
        by_node[node] = {server: int(n) for server, n in sorted(counted.items())}
        total.update(counted)
        last[node] = {field: records[-1].get(field) for field in ("at", "lag", "up")}
    return {"total": {server: int(n) for server, n in sorted(total.items())},
            "by_node": by_node, "last": last,
            "synchronous_scrapes": dict(synchronous)}


def check_standby_reads(history, anomalies):
    """With read standbys configured, some reads must have been served by them: a run whose
    reads all went to the primary proves nothing of them. Returns the report's counts."""
    counts = reads_by_server(history)
    servers = (history.replicas or {}).get("servers")
    if not servers:
        return counts
    on_standbys = sum(n for server, n in counts["total"].items() if server != "primary")
    if not history.metrics:
        anomalies.add("reads-never-on-standby", "read standbys were configured, but no "
                      "node's /metrics was ever read: nothing shows they served reads")
    elif on_standbys == 0:
        anomalies.add("reads-never-on-standby", f"read standbys were configured "
                      f"({', '.join(sorted(servers))}), but the nodes' "
                      f"petstore_db_reads_total counts no read served by one: "
                      f"{counts['total']}")
    return counts
