#!/usr/bin/env python3
"""The measuring side of bench/read-standbys, one subcommand per step; Python's standard
library only (the seeding is bench/webhooks.d/bench.py's).

    bench.py snapshot --root DIR --service-pid PID --service URL --when before|after --out FILE
    bench.py wait-replicas --service URL --replicas N [--timeout S]
    bench.py token    --service URL --key KEY --pet ID
    bench.py pages    --service URL --key KEY --out FILE
    bench.py verify   --service URL --key KEY --pets-file FILE [--pages FILE]
                      [--header 'Name: value'] [--fresh]
    bench.py record   --name NAME --round N --replicas N --load point|page --before FILE
                      --after FILE --wrk FILE --connections N [--min-standby-share X] --out FILE
    bench.py summary  --work DIR --meta FILE --out FILE

A snapshot holds what bench/read-standbys divides by the reads: the CPU seconds of each
cluster (bench/read-standbys.d/clusters.py), of the service and of the whole machine, and the
service's counters from /metrics. `record` takes a phase's two snapshots and its wrk summary,
checks that the counts add up (every answer 200, the service counted the reads wrk got, the
reads per server add up to the reads served) and writes the phase's figures; a check that
fails stops the run (exit 1) before anything is printed as a result. `summary` prints the
table and the ratios of each phase against the phase with no standby and the same load
(point reads or page reads) measured in the same round.
"""

import argparse
import json
import os
import re
import statistics
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusters  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
# The reads each load sends (route labels on /metrics end with these): point reads, and
# pages of the pet list.
READ_ROUTES = {"point": ("/pets/{petId}", "/inventory/{petId}"), "page": ("/pets",)}
# The page reads' page size.
PAGE_SIZE = 20
SEEDED_STOCK = 1_000_000  # what bench/webhooks.d/bench.py seed gives each pet


class Failure(Exception):
    """A check that failed: main() prints it and exits 1."""


def write_json(path, value):
    with open(path, "w") as file:
        json.dump(value, file, indent=2)


def read_json(path):
    with open(path) as file:
        return json.load(file)


def call(method, url, key=None, body=None, headers=(), timeout=10):
    """(status, headers, decoded JSON or raw bytes)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    for header in headers:
        name, _, value = header.partition(":")
        request.add_header(name.strip(), value.strip())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw, status, answer_headers = response.read(), response.status, response.headers
    except urllib.error.HTTPError as error:
        raw, status, answer_headers = error.read(), error.code, error.headers
    try:
        decoded = json.loads(raw) if raw else None
    except ValueError:
        decoded = raw
    return status, answer_headers, decoded


# ---------------------------------------------------------------- snapshot


def metrics(service):
    """The service's counters: {(name, ((label, value), ...)): value} for the series read here."""
    with urllib.request.urlopen(f"{service}/metrics", timeout=10) as response:
        text = response.read().decode()
    series = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        match = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)", line)
        if not match:
            continue
        name, labels, value = match.groups()
        if name not in ("petstore_http_requests_total", "petstore_db_reads_total",
                        "petstore_db_replica_lag_bytes", "petstore_db_replica_up",
                        "petstore_db_replica_synchronous"):
            continue
        pairs = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels or "")))
        series[json.dumps([name, pairs])] = float(value)
    return series


def process_cpu_seconds(pid):
    fields = clusters.stat_fields(pid)
    if fields is None:
        raise Failure(f"process {pid} is gone")
    return (int(fields[11]) + int(fields[12])) / TICKS


def machine_busy_seconds():
    """Every core's busy time (not idle, not waiting for the disk)."""
    with open("/proc/stat") as file:
        fields = file.readline().split()
    return sum(int(fields[i]) for i in (1, 2, 3, 6, 7, 8)) / TICKS


def snapshot(args):
    """The counts at a phase's start (--when before) or end (after). Each cluster's
    transactions are read through a connection of their own, whose backend costs the
    cluster a few milliseconds: before the CPU times at the start, after them at the end,
    so that no phase pays for it."""
    state = clusters.load_state(args.root)
    members = clusters.clusters_of(state)
    out = {"clusters": {}, "transactions": {}}

    def count_transactions():
        for cluster in members:
            out["transactions"][cluster.name] = clusters.transactions(cluster)

    if args.when == "before":
        count_transactions()
    out["at"] = time.monotonic()
    out["service"] = process_cpu_seconds(args.service_pid)
    out["machine"] = machine_busy_seconds()
    for cluster in members:
        pid = cluster.postmaster_pid()
        if pid is None:
            raise Failure(f"{cluster.name}: no postmaster.pid (did it stop?)")
        out["clusters"][cluster.name] = clusters.cluster_cpu_seconds(pid)
    out["metrics"] = metrics(args.service)
    if args.when == "after":
        count_transactions()
    write_json(args.out, out)


# ---------------------------------------------------------------- wait-replicas, token, verify


def gauge(series, name):
    """{server: value} of the per-server gauge `name` in `series` (as `metrics` reads them)."""
    return {dict(json.loads(key)[1]).get("server"): value for key, value in series.items()
            if json.loads(key)[0] == name}


def wait_replicas(args):
    """Until /metrics shows every replica up (petstore_db_replica_up 1) and, with
    --synchronous, replica-1's petstore_db_replica_synchronous at that value; at most
    --timeout s."""
    wanted = [f"replica-{n}" for n in range(1, args.replicas + 1)]
    deadline = time.monotonic() + args.timeout
    while True:
        series = metrics(args.service)
        up = gauge(series, "petstore_db_replica_up")
        synchronous = gauge(series, "petstore_db_replica_synchronous").get("replica-1")
        if all(up.get(server) == 1 for server in wanted) and (
                args.synchronous is None or synchronous == args.synchronous):
            return
        if time.monotonic() > deadline:
            raise Failure(f"after {args.timeout} s the node's replicas are not all up ({up}), "
                          f"or replica-1's synchronous is {synchronous}, not {args.synchronous}")
        time.sleep(0.2)


def token(args):
    """A write's Consistency-Token: the pet's stock set again to what it was seeded with (the
    data stays the same in every phase)."""
    status, headers, answer = call("PATCH", f"{args.service}/v1/inventory/{args.pet}", args.key,
                                   {"quantity": SEEDED_STOCK})
    if status != 200:
        raise Failure(f"setting pet {args.pet}'s stock: expected 200, got {status}: {answer}")
    value = headers.get("Consistency-Token")
    if not value:
        raise Failure("a write's answer carried no Consistency-Token (is a replica configured?)")
    print(value)


def next_link(headers):
    """The path and query of a `Link: <…>; rel="next"` header, or None."""
    for part in (headers.get("Link") or "").split(","):
        found = re.match(r'\s*<([^>]*)>\s*;\s*rel="?next"?', part)
        if found:
            target = urllib.parse.urlsplit(found.group(1))
            return target.path + (f"?{target.query}" if target.query else "")
    return None


def pages(args):
    """Every page of the pet list, PAGE_SIZE a page, unfiltered and with status=available,
    walked by the `Link` headers the node gives (its cursors are opaque): each page's path
    and query and the pets it holds, for the page load and `verify --pages`."""
    walked = []
    for first in (f"/v1/pets?limit={PAGE_SIZE}", f"/v1/pets?limit={PAGE_SIZE}&status=available"):
        path = first
        while path:
            status, headers, answer = call("GET", f"{args.service}{path}", args.key)
            if status != 200 or not isinstance(answer, list):
                raise Failure(f"GET {path}: {status} {answer}")
            walked.append({"path": path, "pets": answer})
            path = next_link(headers)
            if len(walked) > 10_000:
                raise Failure("the pet list's pages do not end")
    write_json(args.out, {"pages": walked})


def verify_pages(args, headers):
    """Pages spread over those walked, with the phase's header: each answered 200 with the
    same pets, in the same order, as when walked after seeding. With --fresh, a pet of a
    page renamed and the page read right after, with no header, on the node, which must show
    the new name; then the seeded name back, read the same way."""
    walked = read_json(args.pages)["pages"]
    step = max(1, len(walked) // 20)
    for page in walked[::step]:
        status, _, answer = call("GET", f"{args.service}{page['path']}", args.key,
                                 headers=headers)
        if status != 200 or answer != page["pets"]:
            raise Failure(f"GET {page['path']} {headers}: {status}, not the page walked after "
                          f"seeding: {answer}")
    if args.fresh:
        page = walked[len(walked) // 4]
        pet = page["pets"][len(page["pets"]) // 2]
        renamed = f"{pet['name']} {int(time.time() * 1000)}"
        for name, what in ((renamed, "a new name"), (pet["name"], "its seeded name back")):
            status, _, answer = call("PUT", f"{args.service}/v1/pets/{pet['id']}", args.key,
                                     {"name": name, "categoryId": pet["categoryId"],
                                      "status": pet["status"]})
            if status != 200:
                raise Failure(f"giving pet {pet['id']} {what}: {status} {answer}")
            status, _, answer = call("GET", f"{args.service}{page['path']}", args.key)
            shown = ([p.get("name") for p in answer if p.get("id") == pet["id"]]
                     if status == 200 and isinstance(answer, list) else None)
            if shown != [name]:
                raise Failure(f"a page read right after renaming pet {pet['id']} to {name!r} "
                              f"answered {status} with {shown}: older than a write "
                              "acknowledged before it was sent")


def verify(args):
    """Reads of pets spread over the seeded ones, with the phase's header: each answered 200
    with the pet asked for and its seeded stock. With --fresh, a write first (a stock level
    never set before) and a read right after it, with no header, on the node, which must
    show it (the promise the default keeps), then the seeded level back. With --pages, the
    same of page reads instead (verify_pages)."""
    if args.pages:
        return verify_pages(args, [args.header] if args.header else [])
    pets = read_json(args.pets_file)["pets"]
    step = max(1, len(pets) // 20)
    headers = [args.header] if args.header else []
    for pet in pets[::step]:
        status, _, answer = call("GET", f"{args.service}/v1/pets/{pet}", args.key, headers=headers)
        if status != 200 or not isinstance(answer, dict) or answer.get("id") != pet:
            raise Failure(f"GET /v1/pets/{pet} {headers}: {status} {answer}")
        status, _, answer = call("GET", f"{args.service}/v1/inventory/{pet}", args.key,
                                 headers=headers)
        if (status != 200 or not isinstance(answer, dict) or answer.get("petId") != pet
                or answer.get("quantity") != SEEDED_STOCK):
            raise Failure(f"GET /v1/inventory/{pet} {headers}: {status} {answer}")
    if args.fresh:
        pet = pets[len(pets) // 2]
        level = SEEDED_STOCK - 1 - int(time.time() * 1000) % 100_000  # at most 1,000,000
        for quantity, what in ((level, "a new level"), (SEEDED_STOCK, "the seeded level back")):
            status, _, answer = call("PATCH", f"{args.service}/v1/inventory/{pet}", args.key,
                                     {"quantity": quantity})
            if status != 200:
                raise Failure(f"setting pet {pet}'s stock to {what}: {status} {answer}")
            status, _, answer = call("GET", f"{args.service}/v1/inventory/{pet}", args.key)
            if status != 200 or not isinstance(answer, dict) or answer.get("quantity") != quantity:
                raise Failure(f"a read right after setting pet {pet}'s stock to {quantity} "
                              f"answered {status} {answer}: older than a write acknowledged "
                              "before it was sent")


# ---------------------------------------------------------------- record


def counter_delta(before, after, name, where=lambda labels: True):
    """The increase of every series of `name` whose labels pass `where`, by labels."""
    deltas = {}
    for key, value in after.items():
        series, labels = json.loads(key)
        if series != name:
            continue
        labels = dict(labels)
        if where(labels):
            deltas[tuple(sorted(labels.items()))] = value - before.get(key, 0.0)
    return deltas


def record(args):
    before, after = read_json(args.before), read_json(args.after)
    text = open(args.wrk).read()
    found = re.search(r"RESULT (\d+) (\d+) (\d+) (\d+) ([0-9.]+) ([0-9.]+)", text)
    if not found:
        raise Failure(f"{args.name}: wrk gave no result:\n{text}")
    requests, duration_us, non_2xx, socket_errors, p50, p99 = found.groups()
    requests, non_2xx, socket_errors = int(requests), int(non_2xx), int(socket_errors)
    seconds = int(duration_us) / 1e6
    what = f"{args.name}, round {args.round}"
    if requests == 0:
        raise Failure(f"{what}: wrk got no answer")
    if non_2xx or socket_errors:
        raise Failure(f"{what}: wrk saw {non_2xx} answers not 2xx/3xx and {socket_errors} "
                      "socket errors")

    # What the service answered on the load's routes, by status: every one 200, and as many
    # as wrk got (more by at most one a connection: answers in flight when wrk stopped).
    routes = READ_ROUTES[args.load]

    def read_route(labels):
        return labels.get("method") == "GET" and labels.get("route", "").endswith(routes)

    by_status = {}
    for labels, delta in counter_delta(before["metrics"], after["metrics"],
                                       "petstore_http_requests_total", read_route).items():
        status = dict(labels).get("status")
        by_status[status] = by_status.get(status, 0) + delta
    served = int(by_status.pop("200", 0))
    others = {status: int(n) for status, n in by_status.items() if n}
    if others:
        raise Failure(f"{what}: the service answered reads with other statuses than 200: {others}")
    if not requests <= served <= requests + args.connections:
        raise Failure(f"{what}: wrk got {requests} answers, the service counted {served} reads "
                      f"answered 200 (expected {requests} to {requests + args.connections})")

    # Where the reads went: petstore_db_reads_total by server (no series without replicas).
    per_server = {dict(labels)["server"]: int(delta) for labels, delta in counter_delta(
        before["metrics"], after["metrics"], "petstore_db_reads_total").items()}
    if args.replicas:
        if not per_server:
            raise Failure(f"{what}: no petstore_db_reads_total series with {args.replicas} "
                          "replicas configured")
        expected = {"primary", *(f"replica-{n}" for n in range(1, args.replicas + 1))}
        if not set(per_server) <= expected:
            raise Failure(f"{what}: reads counted for servers {sorted(per_server)}, "
                          f"expected only {sorted(expected)}")
        counted = sum(per_server.values())
        # Every read served is counted on one server; the node's own reads (its key cache,
        # its change watcher) may add a few.
        slack = max(50, served // 100)
        if not served <= counted <= served + slack:
            raise Failure(f"{what}: the servers' reads add up to {counted} ({per_server}), the "
                          f"reads served to {served} (expected {served} to {served + slack})")
        standby_share = sum(n for s, n in per_server.items() if s != "primary") / counted
        if args.min_standby_share is not None and standby_share < args.min_standby_share:
            raise Failure(f"{what}: the standbys served {standby_share:.0%} of the reads "
                          f"({per_server}); below {args.min_standby_share:.0%}, this phase does "
                          "not measure reads served by standbys")
    else:
        if per_server:
            raise Failure(f"{what}: reads counted per server ({per_server}) with no replica "
                          "configured")
        per_server = {"primary": served}
        standby_share = 0.0

    if args.synchronous:
        ends = [gauge(snap["metrics"], "petstore_db_replica_synchronous").get("replica-1")
                for snap in (before, after)]
        if ends != [1, 1]:
            raise Failure(f"{what}: replica-1 was not synchronous through the phase "
                          f"(petstore_db_replica_synchronous at its start and end: {ends})")

    cpu = {name: (after["clusters"][name] - before["clusters"][name]) * 1e6 / served
           for name in before["clusters"]}
    result = {
        "name": args.name,
        "round": args.round,
        "replicas": args.replicas,
        "load": args.load,
        "seconds": seconds,
        "wrk_answers": requests,
        "reads_served": served,
        "reads_per_second": requests / seconds,
        "p50_ms": float(p50),
        "p99_ms": float(p99),
        "cpu_us_per_read": {
            **cpu,
            "node": (after["service"] - before["service"]) * 1e6 / served,
            "machine": (after["machine"] - before["machine"]) * 1e6 / served,
        },
        # Transactions each cluster ran per read (a statement outside a transaction is one):
        # how many reads shared one.
        "transactions_per_read": {
            name: (after["transactions"][name] - before["transactions"][name]) / served
            for name in before["transactions"]},
        "reads_by_server": per_server,
        "standby_share": standby_share,
        "lag_bytes_at_end": {dict(json.loads(k)[1]).get("server"): v
                             for k, v in after["metrics"].items()
                             if json.loads(k)[0] == "petstore_db_replica_lag_bytes"},
    }
    write_json(args.out, result)


# ---------------------------------------------------------------- summary


def summary(args):
    meta = read_json(args.meta)
    phases = meta["phases"]
    baselines = meta["baselines"]
    results = {}
    for file in sorted(os.listdir(args.work)):
        if file.startswith("result-") and file.endswith(".json"):
            result = read_json(os.path.join(args.work, file))
            results.setdefault(result["name"], {})[result["round"]] = result
    rounds = range(1, meta["rounds"] + 1)
    for name in phases:
        missing = [r for r in rounds if r not in results.get(name, {})]
        if missing:
            raise Failure(f"phase {name}: no result for rounds {missing}")
        loads = {results[name][r]["load"] for r in rounds}
        if loads != {meta["loads"][name]} or meta["loads"][baselines[name]] != meta["loads"][name]:
            raise Failure(f"phase {name}: measured with {sorted(loads)} reads, expected "
                          f"{meta['loads'][name]}, against a baseline of the same")
    standbys = [f"standby-{n}" for n in range(1, meta["standbys"] + 1)]

    def median(name, get):
        return statistics.median(get(results[name][r]) for r in rounds)

    def ratio(name, get):
        base = baselines[name]
        values = [get(results[name][r]) / get(results[base][r]) for r in rounds]
        return statistics.median(values), values

    cpu = lambda who: lambda r: r["cpu_us_per_read"][who]
    rate = lambda r: r["reads_per_second"]

    print()
    print(f"bench/read-standbys: {meta['binary']}")
    print(f"  {meta['rounds']} rounds of {meta['duration']:g} s a phase (BENCH_DURATION"
          + (f", shortened from 10 s {meta['duration_note']}" if meta.get("duration_note") else "")
          + f"), after {meta['warmup']:g} s of warm-up; wrk -t1 -c{meta['connections']}, keyed")
    print(f"  point reads: GET /v1/pets/{{id}} and /v1/inventory/{{id}} in turn over {meta['pets']} "
          "pets drawn at random")
    if "page" in meta["loads"].values():
        print(f"  page reads: GET /v1/pets?limit={PAGE_SIZE} and ?limit={PAGE_SIZE}&status=available, "
              f"one of the {meta['pages']} pages walked by their Link headers drawn at random")
    print(f"  cores ({meta['cores']} on this machine): service {meta['server_cpu']}, "
          f"wrk {meta['load_cpu']}, primary {meta['primary_cpus'] or 'any'}, "
          + ", ".join(f"{s} {c or 'any'}" for s, c in zip(standbys, meta['standby_cpus'])))
    load_now = float(open("/proc/loadavg").read().split()[0])
    meta["load_average_at_end"] = load_now
    print(f"  the machine's load average (1 min): {meta['load_average_at_start']:.2f} when the "
          f"phases began, {load_now:.2f} at the end")
    print("  medians of the rounds; CPU (user + system) per read served, a cluster's: its "
          "postmaster and every child;")
    print("  transactions per read: pg_stat_database's, a statement outside a transaction "
          "counting one; share of the reads: petstore_db_reads_total{server} on the node")
    print()
    print(f"{'':<30} {'':>8} {'':>7} {'':>7}   CPU µs per read served")
    print(f"{'phase':<30} {'reads/s':>8} {'p50 ms':>7} {'p99 ms':>7}   {'primary':>7} "
          + " ".join(f"{s:>9}" for s in standbys) + f" {'node':>7} {'machine':>7}")
    for name in phases:
        print(f"{meta['labels'][name]:<30} {median(name, rate):>8.0f} "
              f"{median(name, lambda r: r['p50_ms']):>7.2f} "
              f"{median(name, lambda r: r['p99_ms']):>7.2f}   "
              f"{median(name, cpu('primary')):>7.2f} "
              + " ".join(f"{median(name, cpu(s)):>9.2f}" for s in standbys)
              + f" {median(name, cpu('node')):>7.2f} {median(name, cpu('machine')):>7.2f}")
    print()
    servers = ["primary", *(f"replica-{n}" for n in range(1, meta["standbys"] + 1))]
    print(f"{'':<30} {'transactions per read':^29}      {'share of the reads served':^29}")
    print(f"{'phase':<30} {'primary':>9} " + " ".join(f"{s:>9}" for s in standbys)
          + "      " + " ".join(f"{s:>9}" for s in servers))
    for name in phases:
        shares = {}
        for r in rounds:
            total = sum(results[name][r]["reads_by_server"].values())
            for server in servers:
                shares.setdefault(server, []).append(
                    results[name][r]["reads_by_server"].get(server, 0) / total)
        transactions = lambda who: lambda r: r["transactions_per_read"][who]
        print(f"{meta['labels'][name]:<30} {median(name, transactions('primary')):>9.3f} "
              + " ".join(f"{median(name, transactions(s)):>9.3f}" for s in standbys)
              + "      " + " ".join(f"{statistics.median(shares[s]):>9.1%}" for s in servers))
    show = lambda values: ", ".join(f"{v:.2f}" for v in values)
    show3 = lambda values: ", ".join(f"{v:.3f}" for v in values)
    ratios = {}
    for base in [p for p in phases if baselines[p] == p]:
        what = {"point": "point read", "page": "page read"}[meta["loads"][base]]
        print()
        print(f"against {meta['labels'][base]} (the primary serves every {what}), same round; "
              "median (rounds):")
        for name in [p for p in phases if baselines[p] == base and p != base]:
            label = meta["labels"][name]
            primary, primary_rounds = ratio(name, cpu("primary"))
            databases, databases_rounds = ratio(name, lambda r: sum(
                r["cpu_us_per_read"][c] for c in ["primary", *standbys]))
            reads, reads_rounds = ratio(name, rate)
            ratios[name] = {"baseline": base,
                            "primary_cpu_per_read": primary_rounds,
                            "all_clusters_cpu_per_read": databases_rounds,
                            "reads_per_second": reads_rounds}
            print(f"  {label:<30} primary CPU per read {primary:.3f} ({show3(primary_rounds)}); "
                  f"all clusters' {databases:.2f} ({show(databases_rounds)}); "
                  f"reads/s {reads:.2f} ({show(reads_rounds)})")
    total_reads = sum(results[n][r]["reads_served"] for n in phases for r in rounds)
    paged = "page" in meta["loads"].values()
    print()
    print(f"checks passed: {total_reads} reads served, every answer 200 and counted by the "
          "node as wrk counted it; the reads per server adding up to the reads served; sampled "
          "answers showing the pets and stock seeded"
          + (" (pages: the pets walked after seeding, in order)" if paged else "")
          + "; a read right after a write on the node seeing it (default reads"
          + (", point and page" if paged else "") + ")")
    print("(machine: every core's busy time, whatever else runs on the machine included)")
    if meta.get("started_at"):
        took = time.time() - meta["started_at"]
        meta["run_seconds"] = took
        print(f"the run took {int(took // 60)} min {int(took % 60)} s up to this summary (making "
              "the clusters and seeding included; removing them follows)")
    write_json(args.out, {**meta, "results": results, "ratios_to_baseline": ratios})
    print(f"written to {args.out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name, function):
        sub = commands.add_parser(name)
        sub.set_defaults(function=function)
        return sub

    sub = command("snapshot", snapshot)
    sub.add_argument("--root", required=True)
    sub.add_argument("--service-pid", type=int, required=True)
    sub.add_argument("--service", required=True)
    sub.add_argument("--when", choices=["before", "after"], required=True)
    sub.add_argument("--out", required=True)

    sub = command("wait-replicas", wait_replicas)
    sub.add_argument("--service", required=True)
    sub.add_argument("--replicas", type=int, required=True)
    sub.add_argument("--synchronous", type=int, choices=[0, 1])
    sub.add_argument("--timeout", type=float, default=30)

    sub = command("token", token)
    sub.add_argument("--service", required=True)
    sub.add_argument("--key", required=True)
    sub.add_argument("--pet", type=int, required=True)

    sub = command("pages", pages)
    sub.add_argument("--service", required=True)
    sub.add_argument("--key", required=True)
    sub.add_argument("--out", required=True)

    sub = command("verify", verify)
    sub.add_argument("--service", required=True)
    sub.add_argument("--key", required=True)
    sub.add_argument("--pets-file", required=True)
    sub.add_argument("--pages", help="verify page reads: the pages `pages` walked")
    sub.add_argument("--header", default="")
    sub.add_argument("--fresh", action="store_true")

    sub = command("record", record)
    sub.add_argument("--name", required=True)
    sub.add_argument("--round", type=int, required=True)
    sub.add_argument("--replicas", type=int, required=True)
    sub.add_argument("--load", choices=sorted(READ_ROUTES), required=True)
    sub.add_argument("--before", required=True)
    sub.add_argument("--after", required=True)
    sub.add_argument("--wrk", required=True)
    sub.add_argument("--connections", type=int, required=True)
    sub.add_argument("--min-standby-share", type=float)
    sub.add_argument("--synchronous", action="store_true",
                     help="replica-1 must be synchronous at the phase's start and end")
    sub.add_argument("--out", required=True)

    sub = command("summary", summary)
    sub.add_argument("--work", required=True)
    sub.add_argument("--meta", required=True)
    sub.add_argument("--out", required=True)

    args = parser.parse_args()
    try:
        args.function(args)
    except Failure as failure:
        sys.exit(f"bench/read-standbys: FAILED: {failure}")


if __name__ == "__main__":
    main()
