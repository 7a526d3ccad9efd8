"""Throwaway PostgreSQL clusters in a temporary folder: a primary, its synchronous standby
(the failover pair), and an asynchronous standby that only serves reads.

initdb and postgres refuse to run as root, so when we are root every PostgreSQL program runs
as the `postgres` OS user (as crates/petstore-http/tests/http/cluster/mod.rs does).
"""

import glob
import os
import shutil
import signal
import subprocess
import threading
import time

# Set once cleanup begins: a fault still running must not start a server cleanup just ended.
CLOSING = threading.Event()


def pg_bin_dir():
    """The newest installed PostgreSQL's programs, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return os.path.dirname(found[-1]) if found else None


def as_root():
    return os.geteuid() == 0


def give_to_postgres(path):
    if as_root():
        shutil.chown(path, "postgres", "postgres")


def process_alive(pid):
    """True while `pid` runs (a zombie nobody reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("State:"):
                    return "Z" not in line.split()[1]
    except OSError:
        return False
    return False


class Cluster:
    """One cluster in `root/name`, always served on the same port, whatever its role: the
    proxies in front of it keep their target across failovers."""

    def __init__(self, name, root, port, bin_dir):
        self.name = name
        self.dir = os.path.join(root, name)
        self.port = port
        self.bin_dir = bin_dir

    @property
    def data(self):
        return os.path.join(self.dir, "data")

    @property
    def log(self):
        return os.path.join(self.dir, "server.log")

    def _command(self, program, *args):
        path = os.path.join(self.bin_dir, program)
        if as_root():
            return ["runuser", "-u", "postgres", "--", path, *args]
        return [path, *args]

    def run(self, program, *args, timeout=120):
        # The postgres user may not enter our working directory; its own folder it may.
        cwd = self.dir if os.path.isdir(self.dir) else "/"
        out = subprocess.run(self._command(program, *args), capture_output=True, text=True,
                             timeout=timeout, cwd=cwd)
        if out.returncode != 0:
            raise RuntimeError(f"{self.name}: {program} failed: {out.stderr.strip()[-800:]}")
        return out.stdout

    def configure(self, settings):
        # Later lines of postgresql.conf win, so appending overrides what a copy brought.
        with open(os.path.join(self.data, "postgresql.conf"), "a") as conf:
            conf.write(settings)

    def _own_settings(self):
        return (f"port = {self.port}\n"
                f"listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.dir}'\n"
                # A standby's WAL receiver names itself after its cluster (its
                # application_name on the primary), which synchronous_standby_names matches.
                f"cluster_name = '{self.name}'\n"
                # A standby whose upstream went away (a failover, a killed standby's restart)
                # tries again every second, not every 5 s.
                "wal_retrieve_retry_interval = '1s'\n")

    def init_primary(self, synchronous=True, sync_names=("*",)):
        os.makedirs(self.dir, exist_ok=True)
        give_to_postgres(self.dir)
        self.run("initdb", "-A", "trust", "-U", "postgres", "--no-sync", "-D", self.data)
        self.configure(
            self._own_settings()
            # A commit is acknowledged only once a standby has it: a killed primary loses
            # nothing acknowledged. Copied to every standby, so a promoted one waits too.
            # (The async-standby plant sets it empty: the standby then trails behind.)
            # Only the failover pair's clusters are named: the read standby streams too, and
            # must never be the one a commit waits for (nor the one a failover promotes).
            + "synchronous_standby_names = "
            + f"'{sync_standby_names(sync_names) if synchronous else ''}'\n"
            # And it waits for the standby to apply it, not only to flush it: the nodes read
            # the synchronous standby asking the primary nothing (docs/deployment.md), and the
            # nemesis's sync_off turns this off for a while.
            + "synchronous_commit = remote_apply\n"
            # A crash of a process keeps the page cache; fsync would only load the disk
            # another engineer's builds share.
            + "fsync = off\n"
            + "max_connections = 100\n"
            + "wal_keep_size = '256MB'\n")

    def make_standby_of(self, primary, via_port=None):
        """A fresh copy of `primary` (running) that follows it, started: `pg_basebackup -R`.
        Through `via_port` (the replication link's proxy) when given: `-R` writes the port
        it copied through into `primary_conninfo`, so the standby streams through it too."""
        self.kill()
        if CLOSING.is_set():
            raise RuntimeError(f"{self.name}: not rebuilt, the run is ending")
        if os.path.exists(self.data):
            shutil.rmtree(self.data)
        os.makedirs(self.dir, exist_ok=True)
        give_to_postgres(self.dir)
        port = via_port or primary.port
        self.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                 "-R", "-X", "stream", "--no-sync",
                 # A spread checkpoint could take minutes; the next failover waits for this.
                 "--checkpoint=fast", "-D", self.data, timeout=120)
        self.configure(self._own_settings())
        self._remove_stale_locks()
        self.start()

    def _remove_stale_locks(self):
        """A killed postmaster leaves lock files naming its pid, its socket's and its data
        folder's (postmaster.pid); until the machine's init reaps it (where init reaps at
        all), that pid still answers kill(pid, 0), and a new postmaster refuses to start on
        either. We know it is dead: we killed it; and the locks go only once no process
        runs in the data folder, so no backend of it is left either."""
        if any(self._cwd_is_data(entry) for entry in os.listdir("/proc") if entry.isdigit()):
            raise RuntimeError(f"{self.name}: processes still run in its data folder")
        for path in (os.path.join(self.dir, f".s.PGSQL.{self.port}.lock"),
                     os.path.join(self.dir, f".s.PGSQL.{self.port}"),
                     os.path.join(self.data, "postmaster.pid")):
            if os.path.lexists(path):
                os.remove(path)

    def start_again(self):
        """Starts a server this tool killed (kill -9): its stale locks go first."""
        self._remove_stale_locks()
        self.start()

    def start(self):
        if CLOSING.is_set():
            raise RuntimeError(f"{self.name}: not started, the run is ending")
        self.run("pg_ctl", "-w", "-t", "60", "-D", self.data, "-l", self.log, "start",
                 timeout=90)

    def promote(self):
        self.run("pg_ctl", "-w", "-t", "60", "-D", self.data, "promote", timeout=90)

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as pid_file:
                return int(pid_file.readline().strip())
        except (OSError, ValueError):
            return None

    def kill(self):
        """kill -9 of the postmaster, as a crash; waits until it and its backends are gone."""
        pid = self.postmaster_pid()
        if pid is None or not process_alive(pid):
            return
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        # Backends notice their postmaster died and exit on their own within moments.
        self._wait_backends_gone(deadline)

    def _wait_backends_gone(self, deadline):
        # Every backend runs with the data folder as its working directory.
        while time.monotonic() < deadline:
            if not any(self._cwd_is_data(entry) for entry in os.listdir("/proc")
                       if entry.isdigit()):
                return
            time.sleep(0.1)

    def _cwd_is_data(self, pid):
        try:
            return os.readlink(f"/proc/{pid}/cwd") == self.data and process_alive(pid)
        except OSError:
            return False

    def stop(self):
        """Ends the server whatever state it is in (cleanup)."""
        if os.path.exists(self.data):
            subprocess.run(self._command("pg_ctl", "-w", "-t", "10", "-m", "immediate",
                                         "-D", self.data, "stop"),
                           capture_output=True, timeout=30, cwd="/")
        self.kill()

    def query(self, sql, timeout=5):
        """One value of `sql`, or None if the server cannot answer now."""
        try:
            out = subprocess.run(
                ["psql", "-X", "-q", "-At", "-h", "127.0.0.1", "-p", str(self.port),
                 "-U", "postgres", "-d", "postgres", "-c", sql],
                capture_output=True, text=True, timeout=timeout,
                env={**os.environ, "PGCONNECT_TIMEOUT": "3"})
        except subprocess.TimeoutExpired:
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    def in_recovery(self):
        value = self.query("SELECT pg_is_in_recovery()")
        return None if value is None else value == "t"

    def sync_standbys(self, synchronous=True, name=None):
        """Standbys that are synchronous (streaming, for an asynchronous pair); only the one
        whose WAL receiver is `name` (its cluster_name) when given."""
        value = self.query(
            "SELECT count(*) FROM pg_stat_replication WHERE "
            + ("sync_state = 'sync'" if synchronous else "state = 'streaming'")
            + (f" AND application_name = '{name}'" if name else ""))
        return int(value) if value and value.isdigit() else 0

    def wait_sync_standby(self, timeout=60, synchronous=True, name=None):
        """Until a standby (`name`, when given) is synchronous (streaming, for an asynchronous
        pair)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.sync_standbys(synchronous, name) >= 1:
                return True
            time.sleep(0.2)
        return False

    def timeline(self):
        """The timeline this server writes (a primary) or receives (a standby), or None."""
        value = self.query("SELECT CASE WHEN pg_is_in_recovery() "
                           "THEN (SELECT received_tli FROM pg_stat_wal_receiver "
                           "      WHERE status = 'streaming') "
                           "ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))"
                           "::bit(32)::int END")
        return int(value) if value and value.isdigit() else None

    def set_synchronous_commit(self, value):
        """ALTER SYSTEM SET synchronous_commit to `value` (None: back to postgresql.conf's),
        and a reload; False if the server did not take it."""
        setting = ("ALTER SYSTEM RESET synchronous_commit" if value is None
                   else f"ALTER SYSTEM SET synchronous_commit = '{value}'")
        return (self.query(setting) is not None
                and self.query("SELECT pg_reload_conf()") is not None)

    def replay_paused(self):
        """True when this standby's replay is paused (or asked to pause), None if it cannot
        say."""
        value = self.query("SELECT pg_get_wal_replay_pause_state()")
        return None if value is None else value != "not paused"


def sync_standby_names(names):
    """synchronous_standby_names naming `names` (cluster names, quoted: they hold a '-'); the
    first of them streaming is the synchronous one."""
    if list(names) == ["*"]:
        return "*"
    return "FIRST 1 (" + ", ".join(f'"{name}"' for name in names) + ")"


def replica_url(port):
    """A libpq URL of a read standby through `port` on 127.0.0.1 (one host: a node's
    `--database-replica` values are split at commas)."""
    return f"postgres://postgres@127.0.0.1:{port}/postgres?sslmode=disable"


def url_for(ports):
    """A libpq multi-host URL over `ports` on 127.0.0.1 that keeps only a server taking
    writes: how docs/deployment.md tells nodes to follow a promoted standby."""
    hosts = ",".join(f"127.0.0.1:{port}" for port in ports)
    return (f"postgres://postgres@{hosts}/postgres"
            "?target_session_attrs=read-write&sslmode=disable")
