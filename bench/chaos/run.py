"""The soak: a setup under a realistic mix of clients while a nemesis injects faults, then
the checker over the recorded history (docs/reliability.md).

    python3 bench/chaos/run.py [--minutes 3] [--seed N] [--nodes 2] [--writers 6]
    python3 bench/chaos/run.py --plant NAME      (a negative control: the check must fail)

Two shops run at once: PostgreSQL (the nodes on a primary and its synchronous standby, with
both that standby and an asynchronous one serving reads) and SQLite (one node on a file of
its own), each with its clients and faults, each checked alone. Builds nothing: it runs
target/release/petstore. Everything it starts (nodes, clusters, proxies, the receiver, the
SQLite disk) ends when it exits, Ctrl-C included. The run's files (history, final state,
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
import plants  # noqa: E402
from holding import SETTLE_SECONDS  # noqa: E402
import report as reporting  # noqa: E402
from history import History, ShopHistory, read_history  # noqa: E402
from nemesis import Nemesis  # noqa: E402
from nodes import HOLD_SWEEP_MS  # noqa: E402
from shops import ShopClients  # noqa: E402
from sqlite_shop import SqliteNemesis, SqliteShop  # noqa: E402
from standbys import MetricsScraper  # noqa: E402
from webhooks import Receiver  # noqa: E402
from world import REPLICA_SERVERS, World  # noqa: E402

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
    parser.add_argument("--sqlite-writers", type=int, default=3,
                        help="writers of the SQLite shop (0: no SQLite shop)")
    parser.add_argument("--pets", type=int, default=8)
    parser.add_argument("--deadline", type=float, default=10.0,
                        help="seconds within which every request must be answered")
    parser.add_argument("--retry-budget", type=float, default=60.0,
                        help="seconds a client retries one write before leaving it unknown")
    parser.add_argument("--quiet", type=float, default=15.0,
                        help="seconds of load without faults at the end, to measure healing")
    parser.add_argument("--drain", type=float, default=60.0,
                        help="after the load, webhooks are waited for until they caught up "
                        "or made no progress for this many seconds")
    parser.add_argument("--failover-every", type=float, default=None,
                        help="seconds at least between two failovers (40; 12 under "
                        "--plant async-standby)")
    parser.add_argument("--no-faults", action="store_true", help="the same run, no nemesis")
    parser.add_argument("--no-replicas", action="store_true",
                        help="no read standbys: the nodes read the primary only, reads are "
                        "sent plain, no standby faults (for a binary without "
                        "--database-replica)")
    parser.add_argument("--replica-wait-ms", type=int, default=50,
                        help="the nodes' --replica-wait-ms (50, their default)")
    parser.add_argument("--plant", choices=sorted(plants.PLANTS), default=None,
                        help="a planted bug the checker must catch (a negative control)")
    parser.add_argument("--out", default=None, help="the run's folder")
    parser.add_argument("--binary", default=BINARY,
                        help="the petstore binary (default target/release/petstore)")
    parser.add_argument("--previous-binary", default=None,
                        help="the previous version's binary (.ci/previous-version builds it): "
                        "the nemesis then also restarts PostgreSQL nodes on the other version, "
                        "one at a time, both ways")
    args = parser.parse_args(argv)
    args.binary = os.path.abspath(args.binary)
    if args.previous_binary:
        args.previous_binary = os.path.abspath(args.previous_binary)
    if args.failover_every is None:
        args.failover_every = 12.0 if args.plant == "async-standby" else 40.0
    return args


def on_signal(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


class Run:
    """Everything one run starts, so that cleanup finds it whatever point it reached."""

    def __init__(self, args, world, history, run_id, sqlite_binary):
        self.args, self.world, self.history, self.run_id = args, world, history, run_id
        self.sqlite_binary = sqlite_binary  # the release binary, or a plant's
        self.sqlite = None
        self.receiver = None
        self.shops = []
        self.histories = {}
        self.load_ended = None  # time.time() when the clients were told to stop

    def soak(self):
        """The clients and the nemeses for the run's minutes; then the final states."""
        args, world = self.args, self.world
        rng = random.Random(args.seed)
        world.start()
        replicas = not args.no_replicas
        if args.plant == "feed-unlocked":
            plants.plant_feed_unlocked(world.database.primary)
            log("planted: stamp_events() without its lock")
        stop_clients, stop_nemesis = threading.Event(), threading.Event()
        histories = self.histories
        histories["pg"] = ShopHistory(self.history, "pg")
        scraper = None
        if replicas:
            histories["pg"].write({"t": "replicas", "servers": REPLICA_SERVERS,
                                   "wait_ms": args.replica_wait_ms})
            scraper = MetricsScraper(world.nodes, histories["pg"], stop_clients)
        if args.sqlite_writers > 0:
            self.sqlite = SqliteShop(self.sqlite_binary, world.out_dir, world.admin_key,
                                     log=log)
            self.sqlite.start()
            histories["sqlite"] = ShopHistory(self.history, "sqlite")
            self.history.write({"t": "meta", "sqlite_skipped": self.sqlite.skipped})
        self.receiver = Receiver(histories, rng.random())
        self.receiver.start()
        self.receiver.subscribe("pg", world.nodes[0].address, world.admin_key,
                                holds=not args.previous_binary)
        pg = ShopClients("pg", world.nodes, histories["pg"], world.admin_key, args,
                         args.writers, self.run_id, rng, stop_clients, args.plant,
                         read_modes=replicas)
        self.shops = [pg]
        nemeses = [Nemesis(world.nodes, world.proxies_by_node, world.database,
                           histories["pg"], rng.random(), stop_nemesis,
                           failover_every=args.failover_every, log=log,
                           previous_binary=args.previous_binary)]
        if self.sqlite:
            self.receiver.subscribe("sqlite", self.sqlite.node.address, world.admin_key)
            self.shops.append(ShopClients("sqlite", [self.sqlite.node], histories["sqlite"],
                                          world.admin_key, args, args.sqlite_writers,
                                          self.run_id, rng, stop_clients, args.plant))
            nemeses.append(SqliteNemesis(self.sqlite, histories["sqlite"], rng.random(),
                                         stop_nemesis, log=log))
        for shop in self.shops:
            shop.seed()
        total = args.minutes * 60
        quiet = min(args.quiet, total / 3)
        started = time.monotonic()
        for shop in self.shops:
            shop.start(sse_nodes=[0])
        if scraper is not None:
            scraper.start()
        if not args.no_faults:
            for nemesis in nemeses:
                nemesis.start()
        log(f"soaking for {args.minutes} min: shops {[s.name for s in self.shops]}, "
            f"nemesis {'off' if args.no_faults else 'on'}"
            f"{', plant ' + args.plant if args.plant else ''}")
        while time.monotonic() - started < total - quiet:
            time.sleep(min(10, max(0.1, total - quiet - (time.monotonic() - started))))
            log(f"  {time.monotonic() - started:5.0f} s: "
                + ", ".join(f"{s.name} {s.ops} ops" for s in self.shops)
                + f"; faults {[n.counts for n in nemeses]}")
        stop_nemesis.set()
        if not args.no_faults:
            for nemesis in nemeses:
                nemesis.join(timeout=10)
                if not nemesis.wait_faults_over(timeout=300):
                    raise RuntimeError("a fault did not end within 300 s")
        log(f"faults over; {quiet:.0f} s of load without faults")
        time.sleep(max(quiet, total - (time.monotonic() - started)))
        stop_clients.set()
        # The clock of the webhooks' catch-up starts here (checks_events.py): no new write is
        # begun after this moment, though one under way may still finish.
        self.load_ended = time.time()
        self.history.write({"t": "meta", "load_ended": round(self.load_ended, 4)})
        for shop in self.shops:
            if not shop.join(args.retry_budget + 30):
                raise RuntimeError(f"a client of {shop.name} did not stop")
        if scraper is not None:
            scraper.join(timeout=10)
            scraper.scrape()  # the counts up to the load's end
        # No unit may be held once every hold's life and the sweepers' bound have passed
        # (checks_holds.py): the final state is read after that.
        settle = max(shop.hold_horizon for shop in self.shops) + SETTLE_SECONDS - time.time()
        if settle > 0:
            log(f"waiting {settle:.1f} s for the last holds to expire and be swept")
            time.sleep(settle)
        return self.final_states()

    def final_states(self):
        finals = {}
        urls = {"pg": self.world.direct_url()}
        if self.sqlite:
            urls["sqlite"] = self.sqlite.database
        for shop in self.shops:
            final = shop.final_state(urls[shop.name], self.sqlite_binary
                                     if shop.name == "sqlite" else self.world.binary, log)
            # Deliveries catch up after the load: retries back off to 2 s at most, a killed
            # node's subscriptions wait out a 5 s lease. The checker fails a catch-up over
            # 10 s; the wait goes on as long as deliveries move (up to --drain without
            # progress), so a slow one is reported with its real time.
            caught_up = self.receiver.wait_drained(shop.name, final["events"],
                                                   self.args.drain, log, since=self.load_ended)
            self.histories[shop.name].write({"t": "drain", "until": round(time.time(), 4),
                                             "caught_up": caught_up})
            finals[shop.name] = final
        for shop in self.shops:
            shop.end_listeners()
        if self.args.plant == "feed-unlocked":
            planted = plants.feed_unlocked_still_planted(self.world.database.primary)
            log(f"the planted stamp_events() is {'still' if planted else 'NOT'} on the "
                "primary of the end")
            finals["pg"]["plant_survived"] = planted
        return {"shops": finals}

    def stop(self):
        if self.receiver is not None:
            self.receiver.stop()
        self.world.stop()
        if self.sqlite is not None:
            self.sqlite.stop()


def main(argv=None):
    args = parse_args(argv)
    # Each shop's nodes run the release binary, or the plant's where the plant is built in.
    binaries = {shop: plants.binary_for(args.plant, REPO, args.binary, shop)
                for shop in ("pg", "sqlite")}
    if None in binaries.values():
        print(f"--plant {args.plant} needs {plants.plant_binary(args.plant)}, which is "
              f"missing: build it with `{plants.plant_build(args.plant)}`", file=sys.stderr)
        return 2
    if args.binary in binaries.values() and not os.access(args.binary, os.X_OK):
        print(f"{args.binary} is missing: run `cargo build --release -p petstore-http --bin "
              "petstore` first", file=sys.stderr)
        return 2
    if args.plant in ("replica-unchecked", "shared-answer-too-early") and args.no_replicas:
        print(f"--plant {args.plant} needs read standbys: drop --no-replicas",
              file=sys.stderr)
        return 2
    if args.seed is None:
        args.seed = secrets.randbelow(1_000_000)
    out_dir = args.out or os.path.join(
        REPO, "target", "chaos", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        + f"-seed{args.seed}" + (f"-{args.plant}" if args.plant else ""))
    os.makedirs(out_dir, exist_ok=True)
    # SIGINT too: a shell that starts us in the background has it ignored, and Ctrl-C
    # (or `kill -INT`) must still end the run with its cleanup.
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    run_id = f"s{args.seed}"
    settings = {"seed": args.seed, "minutes": args.minutes, "nodes": args.nodes,
                "writers": args.writers, "sqlite_writers": args.sqlite_writers,
                "faults": not args.no_faults, "plant": args.plant,
                "previous_binary": args.previous_binary, "replicas": not args.no_replicas,
                "replica_wait_ms": args.replica_wait_ms, "hold_sweep_ms": HOLD_SWEEP_MS}
    log(f"run {run_id} in {out_dir}")
    world = World(binaries["pg"], out_dir, args.nodes, f"chaos-admin-{secrets.token_hex(16)}",
                  log=log, synchronous=args.plant != "async-standby", seed=args.seed,
                  replicas=not args.no_replicas, replica_wait_ms=args.replica_wait_ms,
                  previous_binary=args.previous_binary,
                  # Reads of a synchronous standby ask no position question: this plant's
                  # bug is in the question, so its nodes read the asynchronous one alone.
                  pair_reads=args.plant != "shared-answer-too-early")
    history = History(os.path.join(out_dir, "history.jsonl"))
    history.write({"t": "meta", "run_id": run_id, "settings": settings,
                   "started": time.time()})
    run = Run(args, world, history, run_id, binaries["sqlite"])
    final = None
    try:
        final = run.soak()
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
        run.stop()
        signal.signal(signal.SIGINT, on_signal)
    with open(os.path.join(out_dir, "final.json"), "w", encoding="utf-8") as file:
        json.dump(final, file)
    result = checker.check_all(read_history(os.path.join(out_dir, "history.jsonl")), final,
                               args.deadline)
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8") as file:
        json.dump(result, file, indent=2)
    print(reporting.render_all(result))
    print(f"report: {os.path.join(out_dir, 'report.json')}")
    print(f"result: {result['anomaly_count']} anomalies (seed {args.seed}, "
          f"{args.minutes} min, {result['requests']['total']} requests checked"
          f"{', plant ' + args.plant if args.plant else ''})")
    return 1 if result["anomaly_count"] else 0


if __name__ == "__main__":
    sys.exit(main())
