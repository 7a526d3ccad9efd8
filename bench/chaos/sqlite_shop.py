"""The SQLite shop: one more node on a SQLite file of its own, with its own faults.

- kill -9 and a restart;
- a full disk (as root): the database lives on a small tmpfs; a ballast file fills it,
  then goes (the node answers 503 `unavailable` to writes meanwhile, and takes them again
  once there is room);
- a failing fsync: the node runs with LD_PRELOAD of tests/fixtures/fail_sync.c (built here
  with `cc`), which fails every fsync while a flag file exists; after a failed sync the
  node answers `outcome_unknown`, then refuses writes until it is restarted, so the fault
  ends with a restart, as an operator's would.
What cannot be set up (not root, no `cc`) is skipped and said in the run's log and report.
"""

import errno
import os
import shutil
import subprocess
import tempfile
import time

from nemesis import Nemesis
from nodes import Node
from pg import as_root

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAIL_SYNC_C = os.path.join(REPO, "crates", "petstore-http", "tests", "fixtures",
                           "fail_sync.c")
DISK_SIZE = "64m"


class SqliteShop:
    def __init__(self, binary, out_dir, admin_key, log=print):
        self.binary = binary
        self.out_dir = out_dir
        self.admin_key = admin_key
        self.log = log
        self.dir = None
        self.disk = None
        self.mounted = False
        self.library = None
        self.flag = None
        self.node = None
        self.skipped = []

    @property
    def ballast(self):
        return os.path.join(self.disk, "ballast")

    @property
    def database(self):
        return os.path.join(self.disk, "shop.db")

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="petstore-chaos-sqlite-")
        self.disk = os.path.join(self.dir, "disk")
        os.makedirs(self.disk)
        if not as_root():
            self.skipped.append("full_disk: not root, no tmpfs to fill")
        else:
            out = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs",
                                  self.disk], capture_output=True, text=True)
            self.mounted = out.returncode == 0
            if not self.mounted:
                self.skipped.append(f"full_disk: mount failed: {out.stderr.strip()}")
        self.library = os.path.join(self.dir, "fail_sync.so")
        out = subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", self.library,
                              FAIL_SYNC_C, "-ldl"], capture_output=True, text=True)
        env = {}
        if out.returncode != 0:
            self.skipped.append(f"fail_sync: cc failed: {out.stderr.strip()[-300:]}")
            self.library = None
        else:
            self.flag = os.path.join(self.dir, "fail-syncs-now")
            env = {"LD_PRELOAD": self.library, "PETSTORE_FAIL_SYNC_WHILE": self.flag}
        for reason in self.skipped:
            self.log(f"sqlite shop: skipped {reason}")
        self.node = Node(0, self.binary, self.database, self.out_dir, self.admin_key,
                         name="sqlite0", env=env)
        self.node.start()
        if not self.node.wait_ready(timeout=60):
            raise RuntimeError(f"sqlite0 did not become ready; see {self.node.log_path}")
        self.log(f"sqlite0: {self.node.address}, database {self.database}"
                 f"{' on a ' + DISK_SIZE + ' tmpfs' if self.mounted else ''}")

    def stop(self):
        """Ends the node, empties and unmounts the disk; safe to call twice."""
        if self.node is not None:
            self.node.kill()
        if self.flag and os.path.exists(self.flag):
            os.remove(self.flag)
        if self.mounted:
            subprocess.run(["umount", "-l", self.disk], capture_output=True)
            self.mounted = False
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def fill(self):
        """Writes the ballast until the disk refuses; returns the bytes written."""
        written = 0
        fd = os.open(self.ballast, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for size in (1 << 20, 4096, 64):
                chunk = b"\xa5" * size
                while True:
                    try:
                        written += os.write(fd, chunk)
                    except OSError as err:
                        if err.errno != errno.ENOSPC:
                            raise
                        break
        finally:
            os.close(fd)
        return written

    def empty(self):
        if os.path.exists(self.ballast):
            os.remove(self.ballast)


class SqliteNemesis(Nemesis):
    """kill -9, a full disk, a failing fsync, on the SQLite shop's node."""

    def __init__(self, shop, history, seed, stop, log=print):
        super().__init__([shop.node], {}, None, history, seed, stop, min_gap=2.0,
                         max_gap=8.0, log=log)
        self.shop = shop

    def _options(self):
        node = self.shop.node
        options = [("kill_node", "sqlite0", [0], self._kill_node(node), 3)]
        if self.shop.mounted:
            options.append(("full_disk", "sqlite-disk", [0], self._full_disk, 2))
        if self.shop.library:
            options.append(("fail_sync", "sqlite0", [0], self._fail_sync, 2))
        return options

    def _full_disk(self):
        seconds = self.rng.uniform(1.0, 6.0)
        try:
            written = self.shop.fill()
            time.sleep(seconds)
        finally:
            self.shop.empty()
        return f"full for {seconds:.1f} s ({written >> 20} MiB of ballast)"

    def _fail_sync(self):
        seconds = self.rng.uniform(1.0, 5.0)
        with open(self.shop.flag, "w"):
            pass
        try:
            time.sleep(seconds)
        finally:
            os.remove(self.shop.flag)
        node = self.shop.node
        node.kill()
        node.start()
        if not node.wait_listening(timeout=60):
            raise RuntimeError("sqlite0 did not listen again within 60 s")
        return f"syncs failed for {seconds:.1f} s, then a restart"
