"""The setup under test, and its teardown: PostgreSQL clusters (a primary and its
synchronous standby, the failover pair, which streams through a proxy of its own: the
replication link; and an asynchronous standby for reads, through a link of its own that
follows the primary), a proxy per node per cluster, and the `petstore` nodes, each reaching
the primary through its own proxies with a multi-host URL, and every cluster as a read
standby (the pair's primary of the moment is none)."""

import os
import shutil
import subprocess
import tempfile
import time

from nemesis import Database
from nodes import Node, free_port
from pg import CLOSING, Cluster, give_to_postgres, pg_bin_dir, replica_url, url_for
from proxy import ProxyHub
from standbys import ReadStandby

# What the nodes' `replica-N` series stand for: `--database-replica` in this order. Both
# clusters of the failover pair are given, each by a URL of its own (the flag's values are
# split at commas, so a multi-host URL cannot name "whichever is in recovery"): the one that
# is the synchronous standby serves reads, and the one that is the primary must be seen as no
# standby (petstore_db_replica_up 0), before and after each failover.
REPLICA_SERVERS = {"replica-1": "pg-c, the asynchronous read standby",
                   "replica-2": "pg-a, of the failover pair (a standby when pg-b is primary)",
                   "replica-3": "pg-b, of the failover pair (a standby when pg-a is primary)"}


class World:
    def __init__(self, binary, out_dir, node_count, admin_key, log=print, synchronous=True,
                 seed=0, replicas=True, replica_wait_ms=50, previous_binary=None,
                 pair_reads=True):
        self.binary = binary
        self.synchronous = synchronous
        self.replicas = replicas
        # Whether the nodes read the failover pair's standby too (else pg-c alone).
        self.pair_reads = pair_reads
        self.replica_wait_ms = replica_wait_ms
        # The previous version knows no --database-replica: a node restarted on it runs
        # without read standbys (its reads go to the primary).
        self.previous_binary = previous_binary
        self.seed = seed
        self.out_dir = out_dir
        self.node_count = node_count
        self.admin_key = admin_key
        self.log = log
        self.root = None
        self.clusters = []
        self.pair = []  # the primary and its synchronous standby, whichever is which
        self.hub = None
        self.proxies_by_node = {}
        self.nodes = []
        self.database = None

    def start(self):
        bin_dir = pg_bin_dir()
        if bin_dir is None:
            raise RuntimeError("no PostgreSQL programs under /usr/lib/postgresql/*/bin")
        self.root = tempfile.mkdtemp(prefix="petstore-chaos-")
        give_to_postgres(self.root)
        primary = Cluster("pg-a", self.root, free_port(), bin_dir)
        standby = Cluster("pg-b", self.root, free_port(), bin_dir)
        self.pair = [primary, standby]
        self.clusters = list(self.pair)
        reader = None
        if self.replicas:
            reader = Cluster("pg-c", self.root, free_port(), bin_dir)
            self.clusters.append(reader)
        self.log(f"clusters: primary {primary.name} on {primary.port}, "
                 f"standby {standby.name} on {standby.port}"
                 + (f", read standby {reader.name} on {reader.port}" if reader else "")
                 + f" (in {self.root})")
        self.hub = ProxyHub()
        links = {c.name: self.hub.add(f"replication-{c.name}", c.port) for c in self.pair}
        primary.init_primary(synchronous=self.synchronous,
                             sync_names=[c.name for c in self.pair])
        primary.start()
        standby.make_standby_of(primary, via_port=links[primary.name].port)
        if not primary.wait_sync_standby(timeout=60, synchronous=self.synchronous,
                                         name=standby.name):
            raise RuntimeError("the standby never became synchronous")
        read_standby = None
        if reader is not None:
            # Named after the standby, not its upstream: it leads to the primary of the
            # moment (a failover moves it).
            read_standby = ReadStandby(reader, self.hub.add(f"replication-{reader.name}",
                                                            primary.port))
            read_standby.make(primary)
        self.database = Database(primary, standby, links, synchronous=self.synchronous,
                                 read_standby=read_standby)

        if self.previous_binary:
            # As in a rolling upgrade, the previous version made the database: its nodes may
            # run beside this version's until the upgrade is finished, which the soak never
            # does (a database this version made is finished at once).
            made = subprocess.run([self.previous_binary, "migrate", "--database",
                                   url_for([c.port for c in self.pair])],
                                  capture_output=True, text=True, timeout=120)
            if made.returncode != 0:
                raise RuntimeError(f"the previous version could not make the database: "
                                   f"{made.stderr[-2000:]}")
            self.log("the previous version made the database: its upgrade stays unfinished")
        for i in range(self.node_count):
            self.proxies_by_node[i] = [
                self.hub.add(f"node{i}-{c.name}", c.port, watch_commits=True,
                             seed=self.seed * 100 + i * 10 + k)
                for k, c in enumerate(self.clusters)]
        for i in range(self.node_count):
            ports = {c.name: p.port for c, p in zip(self.clusters, self.proxies_by_node[i])}
            url = url_for([ports[c.name] for c in self.pair])
            replicas = []
            if reader is not None:
                # In REPLICA_SERVERS' order, each through the node's own proxy.
                readers = [reader] + (self.pair if self.pair_reads else [])
                replicas = [replica_url(ports[c.name]) for c in readers]
            node = Node(i, self.binary, url, self.out_dir, self.admin_key,
                        replicas=replicas, replica_wait_ms=self.replica_wait_ms,
                        legacy_binary=self.previous_binary)
            self.nodes.append(node)
            node.start()
            # One at a time: the first migrates the database and creates the admin key.
            if not node.wait_ready(timeout=90):
                raise RuntimeError(f"node{i} did not become ready; see {node.log_path}")
            self.log(f"node{i}: {node.address}, database through proxies {ports}")

    def addresses(self):
        return [node.address for node in self.nodes]

    def direct_url(self):
        """The failover pair without proxies, for the final `petstore check`."""
        return url_for([cluster.port for cluster in self.pair])

    def stop(self):
        """Ends everything started, whatever state it is in; keeps the servers' logs."""
        CLOSING.set()
        if self.hub is not None:
            self.hub.close()
        # Twice: a fault thread may have been starting a node or a server as the first
        # round ran; CLOSING stops it from starting anything after that.
        for round_ in range(2):
            for node in self.nodes:
                try:
                    node.kill()
                except Exception as err:
                    self.log(f"cleanup: node{node.index}: {err}")
            for cluster in self.clusters:
                try:
                    cluster.stop()
                except Exception as err:
                    self.log(f"cleanup: {cluster.name}: {err}")
            if round_ == 0:
                time.sleep(1)
        for cluster in self.clusters:
            if os.path.exists(cluster.log):
                shutil.copy(cluster.log, os.path.join(self.out_dir, f"{cluster.name}.log"))
        if self.root is not None:
            # A backend may take a moment to let go of its folder after a kill.
            for _ in range(20):
                shutil.rmtree(self.root, ignore_errors=True)
                if not os.path.exists(self.root):
                    break
                time.sleep(0.2)
