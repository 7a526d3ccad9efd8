"""The nemesis: faults at random times, each in a thread of its own, so they overlap.

A target (a node's process, a node's database path, the database pair) takes one fault at a
time; different targets are hit at once. Each fault is written to the history when it ends,
with its start and end: the checker measures healing from the end.
"""

import random
import threading
import time
import traceback


class Database:
    """The primary/standby pair and which is which; `links` are the replication links'
    proxies by the name of the cluster they lead to (a standby streams through them)."""

    def __init__(self, primary, standby, links, synchronous=True):
        self.lock = threading.Lock()
        self.primary = primary
        self.standby = standby
        self.links = links
        self.synchronous = synchronous

    def failover(self, rng, log):
        """kill -9 the primary, promote the standby, make the old primary a fresh standby
        of the new one (pg_basebackup), and wait until it is synchronous again, so that the
        next failover can come. With an asynchronous standby (a plant), the replication
        link first goes silent for a moment, so that the primary dies ahead of its standby."""
        old, new = self.primary, self.standby
        lagged = None
        if not self.synchronous:
            lagged = rng.uniform(1.0, 3.0)
            for link in self.links.values():
                link.set_mode("blackhole")
            time.sleep(lagged)
        old.kill()
        time.sleep(rng.uniform(0.5, 2.0))
        new.promote()
        for link in self.links.values():
            link.set_mode("pass")
        with self.lock:
            self.primary, self.standby = new, old
        # The promoted standby keeps synchronous_standby_names: its commits wait until the
        # rebuilt standby is streaming. That is the price of losing nothing acknowledged.
        old.make_standby_of(new, via_port=self.links[new.name].port)
        if not new.wait_sync_standby(timeout=120, synchronous=self.synchronous):
            log(f"failover: {old.name} did not become a standby of {new.name}")
        return (f"{old.name} killed{f' {lagged:.1f} s into a silent link' if lagged else ''}, "
                f"{new.name} promoted, {old.name} rebuilt as its standby")


class Nemesis(threading.Thread):
    def __init__(self, nodes, proxies_by_node, database, history, seed, stop,
                 min_gap=1.0, max_gap=6.0, failover_every=40.0, log=print,
                 previous_binary=None):
        super().__init__(name="nemesis", daemon=True)
        self.nodes = nodes
        # With the previous version's binary, a node may be restarted on the other version:
        # the old nodes of a rolling upgrade, both ways, while only additive migrations ran.
        self.versions = ({"new": nodes[0].binary, "previous": previous_binary}
                         if previous_binary else None)
        self.proxies_by_node = proxies_by_node
        self.database = database
        self.history = history
        self.rng = random.Random(seed)
        self.stop = stop
        self.min_gap, self.max_gap = min_gap, max_gap
        self.failover_every = failover_every
        self.log = log
        self.busy = set()
        self.busy_lock = threading.Lock()
        self.threads = []
        self.last_failover = time.monotonic()
        self.counts = {}

    def run(self):
        while not self.stop.wait(self.rng.uniform(self.min_gap, self.max_gap)):
            choice = self._choose()
            if choice is None:
                continue
            kind, target, nodes, action = choice
            thread = threading.Thread(target=self._run_fault,
                                      args=(kind, target, nodes, action),
                                      name=f"fault-{kind}-{target}", daemon=True)
            self.threads.append(thread)
            thread.start()

    def wait_faults_over(self, timeout=300):
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self.threads)

    def _options(self):
        """[(kind, target, nodes, action, weight)] of the faults this nemesis may inject."""
        options = []
        for node in self.nodes:
            i = node.index
            options += [
                ("kill_node", f"node{i}", [i], self._kill_node(node), 3),
                ("proxy_reset", f"proxy{i}", [i], self._reset(i), 3),
                ("proxy_stall", f"proxy{i}", [i], self._mode(i, "stall"), 2),
                ("proxy_blackhole", f"proxy{i}", [i], self._mode(i, "blackhole"), 2),
                ("commit_cut", f"proxy{i}", [i], self._commit_cut(i), 3),
            ]
            if self.versions:
                options.append(("upgrade", f"node{i}", [i], self._switch_version(node), 2))
        everyone = [n.index for n in self.nodes]
        options.append(("replication_stall", "replication", everyone,
                        self._replication_stall, 2))
        if time.monotonic() - self.last_failover > self.failover_every:
            options.append(("failover", "database", everyone, self._failover, 4))
        return options

    def _choose(self):
        """A fault whose target is free, or None."""
        options = self._options()
        with self.busy_lock:
            options = [o for o in options if o[1] not in self.busy]
            if not options:
                return None
            kind, target, nodes, action, _ = self.rng.choices(
                options, [o[4] for o in options])[0]
            self.busy.add(target)
            if kind == "failover":
                self.last_failover = time.monotonic()
        return kind, target, nodes, action

    def _run_fault(self, kind, target, nodes, action):
        start = time.time()
        detail, failed = None, None
        try:
            detail = action()
        except Exception as err:  # a fault that failed is reported, never hidden
            failed = f"{type(err).__name__}: {err}"
            self.log(f"nemesis: {kind} on {target} failed: {failed}")
            traceback.print_exc()
        end = time.time()
        self.history.write({"t": "fault", "kind": kind, "target": target, "nodes": nodes,
                            "start": round(start, 4), "end": round(end, 4),
                            "detail": detail, "failed": failed})
        self.counts[kind] = self.counts.get(kind, 0) + 1
        with self.busy_lock:
            self.busy.discard(target)

    def _kill_node(self, node):
        def kill():
            node.kill()
            down = self.rng.uniform(0.5, 4.0)
            time.sleep(down)
            node.start()
            if not node.wait_listening(timeout=60):
                raise RuntimeError(f"node{node.index} did not listen again within 60 s")
            return f"down {down:.1f} s"
        return kill

    def _switch_version(self, node):
        def switch():
            was = "new" if node.binary == self.versions["new"] else "previous"
            becomes = "previous" if was == "new" else "new"
            # As an operator rolls: SIGTERM, the drain, then the other binary.
            node.terminate()
            node.binary = self.versions[becomes]
            node.start()
            if not node.wait_listening(timeout=60):
                raise RuntimeError(f"node{node.index} did not listen on {becomes} within 60 s")
            return f"node{node.index}: {was} -> {becomes}"
        return switch

    def _reset(self, i):
        def reset():
            for proxy in self.proxies_by_node[i]:
                proxy.reset()
            return "every connection reset"
        return reset

    def _mode(self, i, mode):
        def hold():
            seconds = self.rng.uniform(1.0, 8.0)
            for proxy in self.proxies_by_node[i]:
                proxy.set_mode(mode)
            time.sleep(seconds)
            for proxy in self.proxies_by_node[i]:
                proxy.set_mode("pass")
            return f"{seconds:.1f} s"
        return hold

    def _commit_cut(self, i):
        def cut():
            seconds = self.rng.uniform(2.0, 8.0)
            before = [proxy.set_cutting(True) for proxy in self.proxies_by_node[i]]
            time.sleep(seconds)
            after = [proxy.set_cutting(False) for proxy in self.proxies_by_node[i]]
            made = {v: sum(a[v] - b[v] for a, b in zip(after, before))
                    for v in ("before", "after")}
            return (f"{seconds:.1f} s: {made['before']} cut before a COMMIT, "
                    f"{made['after']} after")
        return cut

    def _replication_stall(self):
        """The standby's link to the primary holds every byte for a few seconds: commits
        wait for the synchronous standby, then go on. Nothing is lost."""
        seconds = self.rng.uniform(1.0, 6.0)
        links = list(self.database.links.values())
        for link in links:
            link.set_mode("stall")
        time.sleep(seconds)
        for link in links:
            link.set_mode("pass")
        return f"{seconds:.1f} s"

    def _failover(self):
        return self.database.failover(self.rng, self.log)
