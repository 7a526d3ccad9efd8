"""The soak: a setup under a realistic mix of clients while a nemesis injects faults, then
the checker over the recorded history (docs/reliability.md).

    python3 bench/chaos/run.py [--minutes 3] [--seed N] [--nodes 2] [--writers 6]

Builds nothing: it runs target/release/petstore. Everything it starts (nodes, clusters,
proxies) ends when it exits, Ctrl-C included. The run's files (history, final state,
report, logs) stay in target/chaos/<time>-seed<N>/.
"""

import argparse
import json
import os
import random
import secrets
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402
import dump  # noqa: E402
import report as reporting  # noqa: E402
from api import Recorder, send  # noqa: E402
from clients import FeedReader, Shop, Writer  # noqa: E402
from history import History, read_history  # noqa: E402
from nemesis import Nemesis  # noqa: E402
from world import World  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
BINARY = os.path.join(REPO, "target", "release", "petstore")


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Soak the service under mixed faults, "
                                     "then check the whole history.")
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--writers", type=int, default=6)
    parser.add_argument("--pets", type=int, default=8)
    parser.add_argument("--deadline", type=float, default=10.0,
                        help="seconds within which every request must be answered")
    parser.add_argument("--retry-budget", type=float, default=60.0,
                        help="seconds a client retries one write before leaving it unknown")
    parser.add_argument("--quiet", type=float, default=15.0,
                        help="seconds of load without faults at the end, to measure healing")
    parser.add_argument("--failover-every", type=float, default=40.0,
                        help="seconds at least between two failovers (the first included)")
    parser.add_argument("--no-faults", action="store_true", help="the same run, no nemesis")
    parser.add_argument("--out", default=None, help="the run's folder")
    return parser.parse_args(argv)


def on_signal(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def create_key(address, admin_key, role, name):
    answer = send(address, "POST", "/v1/keys", key=admin_key, body={"name": name, "role": role})
    if answer.status != 201:
        raise RuntimeError(f"creating a {role} key: {answer.status} {answer.error} "
                           f"{answer.body}")
    return answer.body["key"]


def seed_shop(world, recorder, history, args, run_id, rng, stop):
    """Keys, a category, pets with stock: through the recorder, so the checker sees them."""
    address = world.nodes[0].address
    staff = create_key(address, world.admin_key, "staff", "chaos staff")
    customers = [create_key(address, world.admin_key, "customer", f"chaos customer {i}")
                 for i in range(args.writers)]
    shop = Shop(None, [])
    setup = Writer(0, recorder, history, shop, customers[0], staff, run_id, rng.random(),
                   stop, args.retry_budget)
    setup.name = "setup"
    answer = setup.create_category()
    if answer is None or answer.status != 201:
        raise RuntimeError(f"creating the category: {answer and answer.body}")
    shop.category_id = answer.body["id"]
    for _ in range(args.pets):
        answer = setup.create_pet()
        if answer is None or answer.status != 201:
            raise RuntimeError(f"creating a pet: {answer and answer.body}")
        answer = setup.set_stock(answer.body["id"], rng.randint(5, 12))
        if answer is None or answer.status != 200:
            raise RuntimeError(f"setting a pet's stock: {answer and answer.body}")
    shop.seeded = len(shop.pets)
    return shop, staff, customers


def soak(args, world, history, run_id):
    """The clients and the nemesis for the run's minutes; then the final state."""
    rng = random.Random(args.seed)
    recorder = Recorder(world.addresses(), history, timeout=args.deadline + 5)
    stop_clients, stop_nemesis = threading.Event(), threading.Event()
    shop, staff, customers = seed_shop(world, recorder, history, args, run_id, rng,
                                       stop_clients)
    writers = [Writer(i, recorder, history, shop, customers[i], staff, run_id, rng.random(),
                      stop_clients, args.retry_budget) for i in range(args.writers)]
    readers = [FeedReader(i, recorder, history, staff, stop_clients)
               for i in range(len(world.nodes))]
    nemesis = Nemesis(world.nodes, world.proxies_by_node, world.database, history,
                      rng.random(), stop_nemesis, failover_every=args.failover_every,
                      log=log)
    total = args.minutes * 60
    quiet = min(args.quiet, total / 3)
    started = time.monotonic()
    for thread in writers + readers:
        thread.start()
    if not args.no_faults:
        nemesis.start()
    log(f"soaking for {args.minutes} min: {args.writers} writers, {len(readers)} feed "
        f"readers, nemesis {'off' if args.no_faults else 'on'}")
    while time.monotonic() - started < total - quiet:
        time.sleep(min(10, max(0.1, total - quiet - (time.monotonic() - started))))
        done = sum(w.ops for w in writers)
        log(f"  {time.monotonic() - started:5.0f} s: {done} ops, faults {nemesis.counts}")
    stop_nemesis.set()
    if not args.no_faults:
        nemesis.join(timeout=10)
        if not nemesis.wait_faults_over(timeout=300):
            raise RuntimeError("a fault did not end within 300 s")
    log(f"faults over; {quiet:.0f} s of load without faults")
    time.sleep(max(quiet, total - (time.monotonic() - started)))
    stop_clients.set()
    for thread in writers + readers:
        thread.join(timeout=args.retry_budget + 30)
    if any(thread.is_alive() for thread in writers + readers):
        raise RuntimeError("a client did not stop")
    # A node not ready a minute after the faults ended is a finding, not a reason to skip
    # the check: the state is read through a node that is.
    ready = [node for node in world.nodes if node.wait_ready(timeout=60)]
    if not ready:
        raise RuntimeError("no node is ready at the end: the final state cannot be read")
    log(f"reading the final state through node{ready[0].index}")
    final = dump.read_final_state(ready[0].address, world.admin_key)
    final["not_ready"] = [node.index for node in world.nodes if node not in ready]
    final["check"] = dump.petstore_check(world.binary, world.direct_url())
    return final


def main(argv=None):
    args = parse_args(argv)
    if not os.access(BINARY, os.X_OK):
        print(f"{BINARY} is missing: run `cargo build --release -p petstore-http --bin "
              "petstore` first", file=sys.stderr)
        return 1
    if args.seed is None:
        args.seed = secrets.randbelow(1_000_000)
    out_dir = args.out or os.path.join(
        REPO, "target", "chaos", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        + f"-seed{args.seed}")
    os.makedirs(out_dir, exist_ok=True)
    # SIGINT too: a shell that starts us in the background has it ignored, and Ctrl-C
    # (or `kill -INT`) must still end the run with its cleanup.
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    run_id = f"s{args.seed}"
    settings = {"seed": args.seed, "minutes": args.minutes, "nodes": args.nodes,
                "writers": args.writers, "faults": not args.no_faults}
    log(f"run {run_id} in {out_dir}")
    world = World(BINARY, out_dir, args.nodes, f"chaos-admin-{secrets.token_hex(16)}",
                  log=log)
    history = History(os.path.join(out_dir, "history.jsonl"))
    history.write({"t": "meta", "run_id": run_id, "settings": settings,
                   "started": time.time()})
    final = None
    try:
        world.start()
        final = soak(args, world, history, run_id)
    except KeyboardInterrupt:
        log("interrupted: cleaning up, no check")
        return 130
    except Exception as err:
        log(f"the run failed before the check: {type(err).__name__}: {err}")
        return 2
    finally:
        history.close()
        # Cleanup must finish even if a second Ctrl-C comes while it runs.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        world.stop()
        signal.signal(signal.SIGINT, on_signal)
    with open(os.path.join(out_dir, "final.json"), "w", encoding="utf-8") as file:
        json.dump(final, file)
    result = checker.check(read_history(os.path.join(out_dir, "history.jsonl")), final,
                           args.deadline)
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8") as file:
        json.dump(result, file, indent=2)
    print(reporting.render(result))
    print(f"report: {os.path.join(out_dir, 'report.json')}")
    print(f"result: {result['anomaly_count']} anomalies (seed {args.seed}, "
          f"{args.minutes} min, {result['requests']['total']} requests checked)")
    return 1 if result["anomaly_count"] else 0


if __name__ == "__main__":
    sys.exit(main())
