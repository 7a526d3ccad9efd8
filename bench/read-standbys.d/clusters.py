#!/usr/bin/env python3
"""The PostgreSQL clusters of bench/read-standbys: a primary and its hot standbys, throwaway,
each pinned to the cores it is given. Python's standard library and bench/chaos/pg.py only.

    clusters.py up        --root DIR --standbys N [--primary-cpus LIST] [--standby-cpus LIST;LIST]
    clusters.py cpu       --root DIR                 (JSON: CPU seconds of each cluster so far)
    clusters.py caught-up --root DIR [--timeout S]   (until every standby replayed the primary's WAL)
    clusters.py synchronous --root DIR --standby NAME --commit SETTING
                                                     (the primary's commits wait for NAME, or none: '')
    clusters.py down      --root DIR                 (stops every cluster under DIR, removes DIR)

`up` writes DIR/clusters.json (names, ports, URLs, data folders, cores) and prints it.
A cluster's CPU time is its postmaster's (user + system), every live child's and what its
reaped children used (cutime + cstime: a backend counts once its client has gone): the count
bench/read-standbys divides by the reads served. A live process's time is utime + stime as
/proc/<pid>/stat counts it, read to the nanosecond from /proc/<pid>/schedstat: at one or two
microseconds a read, the primary's share of a 10 s phase is a few dozen ticks of 10 ms, and
a tick lost per process would show.
"""

import argparse
import json
import os
import shutil
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "chaos"))
from pg import Cluster, give_to_postgres, pg_bin_dir  # noqa: E402

DATABASE = "petstore"
TICKS = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def url(port):
    return f"postgres://postgres@127.0.0.1:{port}/{DATABASE}?sslmode=disable"


def stat_fields(pid):
    """/proc/PID/stat's fields after the command name (which may hold spaces), or None."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rpartition(")")[2].split()
    except OSError:
        return None


def children_of(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(entry)
            if fields and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def run_seconds(pid, fields):
    """CPU seconds process `pid` has run (user + system): /proc/PID/schedstat's first field,
    in nanoseconds, for a process of one thread (as PostgreSQL's are); /proc/PID/stat's
    utime + stime, in ticks of 10 ms, if it cannot be read."""
    try:
        with open(f"/proc/{pid}/schedstat") as file:
            return int(file.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return (int(fields[11]) + int(fields[12])) / TICKS


def cluster_cpu_seconds(postmaster):
    """CPU seconds of a postmaster, of its live children and of those it has reaped (its
    cutime + cstime: a backend counts once its client has gone)."""
    fields = stat_fields(postmaster)
    if fields is None:
        raise RuntimeError(f"postmaster {postmaster} is gone")
    seconds = run_seconds(postmaster, fields) + (int(fields[13]) + int(fields[14])) / TICKS
    for child in children_of(postmaster):
        child_fields = stat_fields(child)
        if child_fields:
            seconds += run_seconds(child, child_fields)
    return seconds


def transactions(cluster):
    """Transactions the cluster has run in the service's database (committed or rolled back,
    as pg_stat_database counts them: a statement outside a transaction is one). A backend
    reports its counts when idle, at most once a second."""
    value = cluster.query("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                          f"WHERE datname = '{DATABASE}'")
    if value is None or not value.isdigit():
        raise RuntimeError(f"{cluster.name}: pg_stat_database did not answer")
    return int(value)


def pin(postmaster, cpus):
    """The postmaster and every process it runs now on `cpus`; the backends it forks later
    inherit its mask."""
    for pid in [postmaster, *children_of(postmaster)]:
        try:
            os.sched_setaffinity(pid, cpus)
        except ProcessLookupError:
            pass


def cpu_list(text):
    """"1" or "0-1" or "0,2" -> a set of cores; "" or "any" -> None (not pinned)."""
    if text in ("", "any"):
        return None
    cores = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cores.update(range(int(first), int(last or first) + 1))
    return cores


def load_state(root):
    with open(os.path.join(root, "clusters.json")) as file:
        return json.load(file)


def clusters_of(state):
    return [Cluster(c["name"], state["root"], c["port"], state["bin_dir"])
            for c in [state["primary"], *state["standbys"]]]


def up(args):
    bin_dir = pg_bin_dir()
    if bin_dir is None:
        raise SystemExit("no PostgreSQL programs under /usr/lib/postgresql/*/bin")
    root = os.path.abspath(args.root)
    os.makedirs(root, exist_ok=True)
    give_to_postgres(root)
    standby_cpus = args.standby_cpus.split(";") if args.standby_cpus else []
    state = {"root": root, "bin_dir": bin_dir, "database": DATABASE, "standbys": []}

    def describe(cluster, cpus):
        return {"name": cluster.name, "port": cluster.port, "url": url(cluster.port),
                "data": cluster.data, "cpus": sorted(cpus) if cpus else None}

    def save():
        with open(os.path.join(root, "clusters.json"), "w") as file:
            json.dump(state, file, indent=2)

    primary = Cluster("primary", root, free_port(), bin_dir)
    primary_cpus = cpu_list(args.primary_cpus)
    state["primary"] = describe(primary, primary_cpus)
    save()  # before anything starts: `down` finds whatever did
    # Asynchronous standbys: the load reads, and a synchronous standby for failover is not
    # what this measures. fsync off, as in the chaos soak (no crash is simulated here).
    primary.init_primary(synchronous=False)
    primary.configure("max_connections = 200\n"
                      # The standbys' reads never cancelled by replay, nor vacuum held back.
                      "hot_standby = on\n")
    primary.start()
    if primary_cpus:
        pin(primary.postmaster_pid(), primary_cpus)
    if primary.query(f"CREATE DATABASE {DATABASE}") is None:
        raise SystemExit(f"primary: CREATE DATABASE {DATABASE} failed; see {primary.log}")

    for n in range(1, args.standbys + 1):
        standby = Cluster(f"standby-{n}", root, free_port(), bin_dir)
        cpus = cpu_list(standby_cpus[n - 1]) if n - 1 < len(standby_cpus) else primary_cpus
        state["standbys"].append(describe(standby, cpus))
        save()
        standby.make_standby_of(primary)
        if cpus:
            pin(standby.postmaster_pid(), cpus)

    deadline = time.monotonic() + 60
    while primary.sync_standbys(synchronous=False) < args.standbys:
        if time.monotonic() > deadline:
            raise SystemExit(f"the standbys did not all stream within 60 s; see {root}/*/server.log")
        time.sleep(0.2)
    for cluster in clusters_of(state)[1:]:
        if cluster.in_recovery() is not True:
            raise SystemExit(f"{cluster.name} is not a hot standby")
    json.dump(state, sys.stdout, indent=2)
    print()


def cpu(args):
    state = load_state(args.root)
    out = {}
    for cluster in clusters_of(state):
        pid = cluster.postmaster_pid()
        if pid is None:
            raise SystemExit(f"{cluster.name}: no postmaster.pid")
        out[cluster.name] = cluster_cpu_seconds(pid)
    json.dump(out, sys.stdout)
    print()


def caught_up(args):
    """Until every standby has replayed what the primary has written (now)."""
    state = load_state(args.root)
    primary, *standbys = clusters_of(state)
    target = primary.query("SELECT pg_current_wal_lsn()")
    if target is None:
        raise SystemExit("the primary did not answer")
    deadline = time.monotonic() + args.timeout
    for standby in standbys:
        while True:
            behind = standby.query(
                f"SELECT pg_wal_lsn_diff('{target}', pg_last_wal_replay_lsn()) > 0")
            if behind == "f":
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"{standby.name} did not replay up to {target} in {args.timeout} s")
            time.sleep(0.1)


def synchronous(args):
    """Makes the primary's commits wait for standby --standby (its cluster_name, which its WAL
    receiver gives the primary) with synchronous_commit --commit; --standby '' waits for none."""
    primary = clusters_of(load_state(args.root))[0]
    names = f'"{args.standby}"' if args.standby else ""
    for sql in (f"ALTER SYSTEM SET synchronous_standby_names = '{names}'",
                f"ALTER SYSTEM SET synchronous_commit = '{args.commit}'",
                "SELECT pg_reload_conf()"):
        if primary.query(sql) is None:
            raise SystemExit(f"primary: {sql} failed")


def down(args):
    root = os.path.abspath(args.root)
    try:
        clusters = clusters_of(load_state(root))
    except (OSError, ValueError):
        clusters = []
    for cluster in clusters:
        try:
            cluster.stop()
        except Exception as error:  # cleanup goes on with the others
            print(f"clusters.py down: {cluster.name}: {error}", file=sys.stderr)
    for _ in range(20):
        shutil.rmtree(root, ignore_errors=True)
        if not os.path.exists(root):
            return
        time.sleep(0.2)
    print(f"clusters.py down: could not remove {root}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    sub = commands.add_parser("up")
    sub.set_defaults(function=up)
    sub.add_argument("--root", required=True)
    sub.add_argument("--standbys", type=int, default=2)
    sub.add_argument("--primary-cpus", default="")
    sub.add_argument("--standby-cpus", default="", help="one list per standby, ';' between")
    sub = commands.add_parser("synchronous")
    sub.set_defaults(function=synchronous)
    sub.add_argument("--root", required=True)
    sub.add_argument("--standby", required=True)
    sub.add_argument("--commit", required=True)
    for name, function in [("cpu", cpu), ("caught-up", caught_up), ("down", down)]:
        sub = commands.add_parser(name)
        sub.set_defaults(function=function)
        sub.add_argument("--root", required=True)
        if name == "caught-up":
            sub.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    args.function(args)


if __name__ == "__main__":
    main()
