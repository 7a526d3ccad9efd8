"""The nemesis: faults at random times, each in a thread of its own, so they overlap.

A target (a node's process, a node's database path, the database pair, the read standby)
takes one fault at a time; different targets are hit at once (a failover holds the read
standby too: it must follow the new primary). Each fault is written to the history when it ends,
with its start and end: the checker measures healing from the end.
"""

import random
import threading
import time
import traceback


class Database:
    """The primary/standby pair and which is which; `links` are the replication links'
    proxies by the name of the cluster they lead to (a standby streams through them);
    `read_standby` the asynchronous standby that only serves reads (standbys.py), or None."""

    def __init__(self, primary, standby, links, synchronous=True, read_standby=None):
        self.lock = threading.Lock()
        self.primary = primary
        self.standby = standby
        self.links = links
        self.synchronous = synchronous
        self.read_standby = read_standby

    def failover(self, rng, log):
        """kill -9 the primary, promote the standby, make the old primary a fresh standby
        of the new one (pg_basebackup), and wait until it is synchronous again, so that the
        next failover can come; the read standby follows the new primary (or is made again
        from it). With an asynchronous standby (a plant), the replication link first goes
        silent for a moment, so that the primary dies ahead of its standby."""
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
        # The read standby's link leads to the new primary from now on: its WAL receiver
        # reconnects there while the old primary is rebuilt.
        if self.read_standby is not None:
            self.read_standby.link.retarget(new.port)
        # The promoted standby keeps synchronous_standby_names: its commits wait until the
        # rebuilt standby is streaming. That is the price of losing nothing acknowledged.
        old.make_standby_of(new, via_port=self.links[new.name].port)
        if not new.wait_sync_standby(timeout=120, synchronous=self.synchronous,
                                     name=old.name):
            log(f"failover: {old.name} did not become a standby of {new.name}")
        followed = ""
        if self.read_standby is not None:
            followed = ", " + self.read_standby.follow(new, log)
        return (f"{old.name} killed{f' {lagged:.1f} s into a silent link' if lagged else ''}, "
                f"{new.name} promoted, {old.name} rebuilt as its standby{followed}")


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
            kind, target, nodes, action, holds = choice
            thread = threading.Thread(target=self._run_fault,
                                      args=(kind, target, nodes, action, holds),
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
        reader = self.database.read_standby if self.database else None
        if reader is not None:
            # Faults of the read standbys' own: each makes a standby lag behind, or go away,
            # while nodes send it reads (which must then wait for it, or go elsewhere).
            options += [
                ("kill_standby", "read-standby", everyone, self._kill_standby, 2),
                ("standby_link_stall", "read-standby", everyone, self._standby_link_stall, 3),
                ("replay_pause", "read-standby", everyone, self._replay_pause(None), 3),
                # The synchronous standby serves reads too; a failover must not promote it
                # while its replay is paused, so this holds the pair. Its commits wait for
                # the replay (remote_apply) meanwhile.
                ("replay_pause", "database", everyone, self._replay_pause("pair"), 2),
                # Every read standby behind at once: a node sends a read to a standby that has
                # replayed far enough when there is one, so only then must it wait for one
                # (at most --replica-wait-ms) or read the primary. A node that skips that
                # check (the replica-unchecked plant) serves stale reads only then.
                ("replay_pause_all", "database", everyone,
                 self._replay_pause("all", unwaited=self.database.synchronous), 3,
                 ("read-standby",)),
            ]
        if reader is not None and self.database.synchronous:
            # The nodes read the synchronous standby asking the primary nothing; the primary
            # stops waiting for it while reads run, and it falls behind.
            options.append(("sync_off", "database", everyone,
                            self._replay_pause("pair", unwaited=True), 3))
        if time.monotonic() - self.last_failover > self.failover_every:
            # The read standby must follow the new primary: no fault of its own meanwhile.
            options.append(("failover", "database", everyone, self._failover, 4,
                            ("read-standby",) if reader is not None else ()))
        return options

    def _choose(self):
        """A fault whose target (and whatever else it holds) is free, or None."""
        options = self._options()
        with self.busy_lock:
            options = [o for o in options
                       if o[1] not in self.busy and not self.busy & set(_holds(o))]
            if not options:
                return None
            option = self.rng.choices(options, [o[4] for o in options])[0]
            kind, target, nodes, action = option[:4]
            self.busy.add(target)
            self.busy.update(_holds(option))
            if kind == "failover":
                self.last_failover = time.monotonic()
        return kind, target, nodes, action, _holds(option)

    def _run_fault(self, kind, target, nodes, action, holds=()):
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
            self.busy.difference_update(holds)

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

    def _kill_standby(self):
        """kill -9 of the read standby, and its start 1 to 6 s later; it must stream from
        the primary again."""
        reader = self.database.read_standby
        reader.cluster.kill()
        down = self.rng.uniform(1.0, 6.0)
        time.sleep(down)
        reader.cluster.start_again()
        if not reader.wait_streaming(self.database.primary, timeout=60):
            raise RuntimeError(f"{reader.name} did not stream again within 60 s")
        return f"{reader.name} down {down:.1f} s"

    def _standby_link_stall(self):
        """The read standby's replication link holds every byte for 1 to 8 s: it falls
        behind (the primary does not wait for it), then catches up."""
        reader = self.database.read_standby
        seconds = self.rng.uniform(1.0, 8.0)
        reader.link.set_mode("stall")
        try:
            time.sleep(seconds)
        finally:
            reader.link.set_mode("pass")
        return f"{reader.name}'s link {seconds:.1f} s"

    def _replay_pause(self, which, unwaited=False):
        """pg_wal_replay_pause() on read standbys for 1 to 8 s, then
        pg_wal_replay_resume(): each keeps receiving WAL but shows nothing new meanwhile.
        `which` is None for the asynchronous read standby, "pair" for the synchronous one
        (whose commits wait meanwhile: they wait for its replay, remote_apply), "all" for
        both. `unwaited`: the primary's commits stop waiting for the synchronous standby
        meanwhile (synchronous_commit = local, reloaded; reset after the resume), so that it
        falls behind while writes go on: the nodes, which read it asking the primary nothing
        while it is synchronous, must stop once it is not (sync_off), and every standby is
        behind at once (replay_pause_all)."""
        def pause():
            with self.database.lock:
                primary, pair_standby = self.database.primary, self.database.standby
            reader = self.database.read_standby.cluster
            clusters = {None: [reader], "pair": [pair_standby],
                        "all": [pair_standby, reader]}[which]
            seconds = self.rng.uniform(1.0, 8.0)
            paused = []
            if unwaited and not primary.set_synchronous_commit("local"):
                raise RuntimeError(f"{primary.name}: synchronous_commit = local not taken")
            try:
                for cluster in clusters:
                    paused.append(cluster)
                    if cluster.query("SELECT pg_wal_replay_pause()") is None \
                            or not cluster.replay_paused():
                        raise RuntimeError(f"{cluster.name}: pg_wal_replay_pause() did not "
                                           "pause")
                time.sleep(seconds)
            finally:
                stuck = [cluster.name for cluster in paused if not _resume(cluster)]
                if unwaited and not primary.set_synchronous_commit(None):
                    stuck.append(f"{primary.name}'s synchronous_commit")
                if stuck:
                    raise RuntimeError(f"not restored: {', '.join(stuck)}")
            return (f"{' and '.join(c.name for c in clusters)} {seconds:.1f} s"
                    + (f", {primary.name} not waiting" if unwaited else ""))
        return pause


def _resume(cluster):
    """pg_wal_replay_resume() until the standby replays again (10 s at most)."""
    for _ in range(20):
        if cluster.query("SELECT pg_wal_replay_resume()") is not None \
                and cluster.replay_paused() is False:
            return True
        time.sleep(0.5)
    return False


def _holds(option):
    """The targets a fault holds besides its own (a failover holds the read standby)."""
    return tuple(option[5]) if len(option) > 5 else ()
