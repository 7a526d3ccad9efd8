"""The `petstore` processes: started, killed with SIGKILL, restarted on the same port."""

import os
import socket
import subprocess
import threading
import time

from api import send
from pg import CLOSING


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Webhooks reach the tool's receiver on 127.0.0.1, which a node refuses unless the operator
# allows private targets; retries come back fast (5 s doubling to an hour by default), and a
# killed node's subscriptions wait out a short lease, so the backlog drains in the quiet time.
WEBHOOK_FLAGS = ["--webhook-allow-private-targets", "--webhook-first-retry-ms", "200",
                 "--webhook-max-retry-delay-ms", "2000", "--webhook-timeout-ms", "3000",
                 "--webhook-lease-ms", "5000", "--webhook-poll-ms", "200"]


# How often each node's sweeper ends the holds whose expiry has come: the nodes' default
# `--hold-sweep-ms`, not given (the previous version knows no such flag). A hold is ended
# within it and a second of its expiry (docs/api.md); the checker holds the soak to that.
HOLD_SWEEP_MS = 1000


# The currency every node of both shops prices in (docs/deployment.md: the first start on a
# database writes it as the shop's, and a node started with another refuses to serve). Given
# through the environment, which the previous version ignores, not as a flag it would refuse;
# the setup checks GET /v1 says it (shops.py).
CURRENCY = "EUR"


class Node:
    def __init__(self, index, binary, database_url, workdir, admin_key, name=None,
                 env=None, replicas=(), replica_wait_ms=50, legacy_binary=None):
        self.index = index
        # Read standbys' URLs (`--database-replica`), unless the node runs `legacy_binary`
        # (the previous version, which has no such flag).
        self.replicas = list(replicas)
        self.replica_wait_ms = replica_wait_ms
        self.legacy_binary = legacy_binary
        self.name = name or f"node{index}"
        self.binary = binary
        self.database_url = database_url
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.workdir = workdir
        self.admin_key = admin_key
        self.extra_env = env or {}
        self.log_path = os.path.join(workdir, f"{self.name}.log")
        self.process = None
        self.starts = 0
        self._lock = threading.Lock()

    def start(self):
        with self._lock:
            if CLOSING.is_set():
                return
            log = open(self.log_path, "ab")
            env = {
                **os.environ,
                # Every node bootstraps the same admin key; the first to start creates it
                # (docs/deployment.md). The key file is ours, never the working directory's.
                "PETSTORE_BOOTSTRAP_ADMIN_KEY": self.admin_key,
                "RUST_LOG": os.environ.get("CHAOS_NODE_LOG", "warn"),
                "PETSTORE_CURRENCY": CURRENCY,
                **self.extra_env,
            }
            self.process = subprocess.Popen(
                [self.binary, "serve", "--database", self.database_url,
                 "--bind", self.address,
                 "--admin-key-file", os.path.join(self.workdir, f"{self.name}.admin-key"),
                 # The soak measures faults, not the rate limiter.
                 "--rate-limit", "1000000",
                 "--db-connections", "8", *WEBHOOK_FLAGS, *self.replica_args()],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.workdir, env=env,
                # Its own session: a Ctrl-C on the terminal reaches the runner only, whose
                # cleanup then ends every node.
                start_new_session=True)
            log.close()
            self.starts += 1

    def replica_args(self):
        if not self.replicas or (self.legacy_binary and self.binary == self.legacy_binary):
            return []
        args = []
        for url in self.replicas:
            args += ["--database-replica", url]
        return args + ["--replica-wait-ms", str(self.replica_wait_ms)]

    def terminate(self, timeout=45):
        """SIGTERM, and the drain it starts; kill -9 if it is not over within `timeout`."""
        with self._lock:
            if self.process is not None and self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()

    def kill(self):
        """kill -9: no drain, no goodbye."""
        with self._lock:
            if self.process is not None and self.process.poll() is None:
                self.process.kill()
                self.process.wait()

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def wait_listening(self, timeout=60):
        """True once /healthz answers; restarts a process that exited (a node refuses to
        start while no database takes writes, e.g. in the middle of a failover)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not CLOSING.is_set():
            if not self.alive():
                time.sleep(0.5)
                self.start()
                continue
            if send(self.address, "GET", "/healthz", timeout=2).status == 200:
                return True
            time.sleep(0.1)
        return False

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not CLOSING.is_set():
            if not self.alive():
                self.wait_listening(max(1, deadline - time.monotonic()))
            if send(self.address, "GET", "/readyz", timeout=2).status == 200:
                return True
            time.sleep(0.2)
        return False
