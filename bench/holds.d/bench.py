"""What a hold costs (docs/performance.md, "Holds"): run by bench/holds against one running
node. Standard library only.

  bench.py ops  --service URL --key KEY --pets N --rounds R --ops K --pid PID
  bench.py idle --database URL --seconds S

`ops`: in each of R rounds, K keyed one-line checkouts (`POST /v1/store/checkout`), then K
keyed one-line holds each checked out at once (`POST /v1/store/holds`, then
`POST /v1/store/holds/{id}/checkout`), one request after another on one kept-alive
connection, each for a pet drawn at random of the N the seed made (ample stock, each priced).
For each side: the median wall time of one (checkout; hold and its checkout, the two requests
together) and the service's CPU time per one (its process's, from /proc), then the ratios,
hold-and-checkout over checkout, per round; the median round is the result.

`idle`: the node left alone for S seconds on its PostgreSQL database: the statements its
sweeps sent (the scans of the partial index `holds_due`, from pg_stat_user_indexes) and every
transaction the database saw (pg_stat_database: heartbeats, the webhook dispatcher's poll,
the sweeps), per second.
"""

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.parse
import uuid


def cpu_seconds(pid):
    """The process's user and system CPU time, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Client:
    def __init__(self, url, key):
        parts = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        self.key = key

    def post(self, path, body):
        self.conn.request("POST", path, json.dumps(body), {
            "Authorization": f"Bearer {self.key}",
            "Content-Type": "application/json",
            "Idempotency-Key": uuid.uuid4().hex,
        })
        answer = self.conn.getresponse()
        data = answer.read()
        if answer.status != 201:
            sys.exit(f"bench/holds: POST {path} answered {answer.status}: {data[:200]!r}")
        return json.loads(data)


def side(client, pets, count, pid, one):
    """Runs `one` `count` times: the median wall seconds of one, and the service's CPU a one."""
    times = []
    cpu_before = cpu_seconds(pid)
    for _ in range(count):
        pet = random.randint(1, pets)
        started = time.perf_counter()
        one(client, pet)
        times.append(time.perf_counter() - started)
    return statistics.median(times), (cpu_seconds(pid) - cpu_before) / count


def checkout(client, pet):
    client.post("/v1/store/checkout", {"lines": [{"petId": pet}]})


def hold_and_checkout(client, pet):
    hold = client.post("/v1/store/holds", {"lines": [{"petId": pet}]})
    client.post(f"/v1/store/holds/{hold['id']}/checkout", {})


def ops(args):
    client = Client(args.service, args.key)
    for _ in range(20):  # warm up both paths
        checkout(client, random.randint(1, args.pets))
        hold_and_checkout(client, random.randint(1, args.pets))
    rounds = []
    for _ in range(args.rounds):
        plain = side(client, args.pets, args.ops, args.pid, checkout)
        held = side(client, args.pets, args.ops, args.pid, hold_and_checkout)
        rounds.append({"checkout_ms": plain[0] * 1e3, "hold_and_checkout_ms": held[0] * 1e3,
                       "checkout_cpu_us": plain[1] * 1e6, "hold_and_checkout_cpu_us": held[1] * 1e6,
                       "ratio_time": held[0] / plain[0], "ratio_cpu": held[1] / plain[1]})
    rounds.sort(key=lambda r: r["ratio_time"])
    print(json.dumps({"rounds": rounds, "median": rounds[len(rounds) // 2]}))


def psql(url, sql):
    out = subprocess.run(["psql", "-At", url, "-c", sql], check=True, capture_output=True,
                         text=True).stdout.strip()
    return int(out or 0)


def idle(args):
    db = urllib.parse.urlsplit(args.database).path.lstrip("/")
    scans = "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname = 'holds_due'"
    xacts = f"SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '{db}'"
    # The statistics reach the views when a backend reports them (at the latest every second).
    time.sleep(2)
    before = psql(args.database, scans), psql(args.database, xacts)
    time.sleep(args.seconds)
    after = psql(args.database, scans), psql(args.database, xacts)
    # Each psql call above is a transaction of its own too: two of them fall in the window.
    print(json.dumps({"seconds": args.seconds,
                      "sweep_statements_per_s": (after[0] - before[0]) / args.seconds,
                      "transactions_per_s": (after[1] - before[1] - 2) / args.seconds}))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    o = sub.add_parser("ops")
    o.add_argument("--service", required=True)
    o.add_argument("--key", required=True)
    o.add_argument("--pets", type=int, required=True)
    o.add_argument("--rounds", type=int, default=5)
    o.add_argument("--ops", type=int, default=200)
    o.add_argument("--pid", type=int, required=True)
    i = sub.add_parser("idle")
    i.add_argument("--database", required=True)
    i.add_argument("--seconds", type=int, default=30)
    args = parser.parse_args()
    ops(args) if args.what == "ops" else idle(args)


if __name__ == "__main__":
    main()
