"""The setup under test, and its teardown: two PostgreSQL clusters (a primary and its
synchronous standby, which streams through a proxy of its own: the replication link), a
proxy per node per cluster, and the `petstore` nodes, each reaching the database through its
own proxies with a multi-host URL."""

import os
import shutil
import tempfile
import time

from nemesis import Database
from nodes import Node, free_port
from pg import CLOSING, Cluster, give_to_postgres, pg_bin_dir, url_for
from proxy import ProxyHub


class World:
    def __init__(self, binary, out_dir, node_count, admin_key, log=print, synchronous=True,
                 seed=0):
        self.binary = binary
        self.synchronous = synchronous
        self.seed = seed
        self.out_dir = out_dir
        self.node_count = node_count
        self.admin_key = admin_key
        self.log = log
        self.root = None
        self.clusters = []
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
        self.clusters = [primary, standby]
        self.log(f"clusters: primary {primary.name} on {primary.port}, "
                 f"standby {standby.name} on {standby.port} (in {self.root})")
        self.hub = ProxyHub()
        links = {c.name: self.hub.add(f"replication-{c.name}", c.port) for c in self.clusters}
        primary.init_primary(synchronous=self.synchronous)
        primary.start()
        standby.make_standby_of(primary, via_port=links[primary.name].port)
        if not primary.wait_sync_standby(timeout=60, synchronous=self.synchronous):
            raise RuntimeError("the standby never became synchronous")
        self.database = Database(primary, standby, links, synchronous=self.synchronous)

        for i in range(self.node_count):
            self.proxies_by_node[i] = [
                self.hub.add(f"node{i}-{c.name}", c.port, watch_commits=True,
                             seed=self.seed * 100 + i * 10 + k)
                for k, c in enumerate(self.clusters)]
        for i in range(self.node_count):
            url = url_for([proxy.port for proxy in self.proxies_by_node[i]])
            node = Node(i, self.binary, url, self.out_dir, self.admin_key)
            self.nodes.append(node)
            node.start()
            # One at a time: the first migrates the database and creates the admin key.
            if not node.wait_ready(timeout=90):
                raise RuntimeError(f"node{i} did not become ready; see {node.log_path}")
            self.log(f"node{i}: {node.address}, database through proxies "
                     f"{[p.port for p in self.proxies_by_node[i]]}")

    def addresses(self):
        return [node.address for node in self.nodes]

    def direct_url(self):
        """Both clusters without proxies, for the final `petstore check`."""
        return url_for([cluster.port for cluster in self.clusters])

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
