"""Read standbys (docs/deployment.md's topology): the asynchronous standby that only serves
reads, how it follows the primary across failovers, and the nodes' `/metrics` of reads per
server, scraped during the run so that the report shows which servers served reads."""

import http.client
import re
import threading
import time

from pg import CLOSING


class ReadStandby:
    """An asynchronous hot standby that serves reads. It streams from the current primary
    through a link of its own: a proxy whose target a failover moves to the promoted
    cluster, so the standby follows it, and the nemesis can stall this link alone."""

    def __init__(self, cluster, link):
        self.cluster = cluster
        self.link = link

    @property
    def name(self):
        return self.cluster.name

    def make(self, primary, timeout=60):
        """A fresh copy of `primary` (pg_basebackup -R through the link), streaming."""
        self.link.retarget(primary.port)
        self.cluster.make_standby_of(primary, via_port=self.link.port)
        if not self.wait_streaming(primary, timeout):
            raise RuntimeError(f"{self.name} did not stream from {primary.name} within "
                               f"{timeout} s")

    def streaming_from(self, primary):
        """True when it streams from `primary`, on the primary's timeline."""
        if primary.sync_standbys(synchronous=False, name=self.name) < 1:
            return False
        timeline = primary.timeline()
        return timeline is not None and self.cluster.timeline() == timeline

    def wait_streaming(self, primary, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not CLOSING.is_set():
            if self.streaming_from(primary):
                return True
            time.sleep(0.3)
        return False

    def follow(self, primary, log, timeout=30):
        """After a failover: the link leads to the promoted `primary`, and the standby must
        stream on its new timeline (recovery_target_timeline = 'latest', PostgreSQL's
        default). A standby that received WAL past the point where the promoted one's
        history forks cannot (an asynchronous standby may be ahead of the synchronous one
        when the primary dies): it is made again from the new primary. Returns what
        happened."""
        self.link.retarget(primary.port)
        if self.wait_streaming(primary, timeout):
            return f"{self.name} followed"
        log(f"failover: {self.name} did not follow {primary.name} within {timeout} s: "
            "made again from it")
        self.make(primary)
        return f"{self.name} made again (it did not follow within {timeout} s)"


# The series of the interface (issue #58): reads per server, each standby's lag and health.
SERIES = {"petstore_db_reads_total": "reads", "petstore_db_replica_lag_bytes": "lag",
          "petstore_db_replica_up": "up", "petstore_db_replica_synchronous": "synchronous"}
SAMPLE = re.compile(r"^([a-z_]+)\{([^}]*)\}\s+(\S+)")
SERVER = re.compile(r'server="([^"]*)"')


def parse_metrics(text):
    """{"reads": {server: n}, "lag": {...}, "up": {...}, "synchronous": {...}} of a /metrics page (classic text
    format); a series with more labels than `server` is summed over them."""
    found = {field: {} for field in SERIES.values()}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if not match or match.group(1) not in SERIES:
            continue
        server = SERVER.search(match.group(2))
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        if server:
            field = found[SERIES[match.group(1)]]
            field[server.group(1)] = field.get(server.group(1), 0) + value
    return found


def fetch_metrics(address, timeout=3.0):
    """The text of a node's /metrics (no key needed), or None."""
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("GET", "/metrics", headers={"Connection": "close"})
        response = conn.getresponse()
        body = response.read()
        return body.decode("utf-8", "replace") if response.status == 200 else None
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


class MetricsScraper(threading.Thread):
    """Every few seconds, each node's reads per server, replay lag and standby health, as
    "metrics" lines of the history. A node's counters start again at 0 when it restarts:
    each line carries the node's process count (`starts`), so the report adds them up."""

    def __init__(self, nodes, history, stop, every=3.0):
        super().__init__(name="metrics", daemon=True)
        self.nodes = nodes
        self.history = history
        self.stop = stop
        self.every = every

    def run(self):
        while not self.stop.wait(self.every):
            self.scrape()

    def scrape(self):
        for node in self.nodes:
            starts = node.starts
            text = fetch_metrics(node.address)
            if text is None:
                continue
            self.history.write({"t": "metrics", "node": node.index, "at": round(time.time(), 4),
                                "starts": starts, **parse_metrics(text)})
