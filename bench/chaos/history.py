"""The run's history: one JSON object per line, appended by every thread.

Line types (the "t" field):
  meta   what was run (seed, nodes, times); `load_ended`: when the clients were told to stop
  call   one HTTP attempt: op id, kind, node, sent/answered times, request, status, answer
  op     one logical operation once its client stopped retrying: kind and what it meant
         (the pet, the idempotency key, the value set...), so the checker can judge attempts
  fault  one fault of the nemesis: kind, target, affected nodes, start and end
  webhook a subscription (its id, types, secret, deliveredThrough when made)
  delivery one webhook delivery the receiver got: headers, raw body, the answer it gave
  sse    ids one SSE listener received on one connection, and the Last-Event-ID it sent
  sse_end a listener's connection ended (why)
  drain  the wait for a shop's webhooks after the load: when it ended (`until`) and whether
         every subscription had caught up (`caught_up`) or the wait gave up
  replicas the read standbys the shop's nodes were given (`servers`: the metrics' names)
  metrics one node's /metrics: reads per server, each standby's lag, health and whether the
         primary's commits wait for it, and how
         many times the node was started (its counters restart at 0 each time)
  key    an API key made at setup: its id, name, role, and the client it is for (never the
         secret)
A call's `headers` are those the client sent (a read's Consistency-Token or Max-Staleness);
its `token` the Consistency-Token its answer carried; its `keyId` the key it was sent with.
Every line but meta carries its shop ("pg" or "sqlite"; "pg" when absent): each shop is
checked alone against its own final state.
The checker reads only this file and the final state; nothing else of a run is trusted.
"""

import itertools
import json
import threading
import time


class History:
    def __init__(self, path):
        self._file = open(path, "w", encoding="utf-8")
        self._lock = threading.Lock()
        self._op_ids = itertools.count(1)
        self._last_flush = time.monotonic()

    def next_op_id(self):
        # itertools.count is atomic under the GIL; a lock would only add contention.
        return next(self._op_ids)

    def write(self, record):
        line = json.dumps(record, separators=(",", ":"), sort_keys=True)
        with self._lock:
            if self._file.closed:
                return  # a straggler thread after the run ended: the history is sealed
            self._file.write(line + "\n")
            # Flushed about once a second: a run killed hard keeps almost all of its history.
            now = time.monotonic()
            if now - self._last_flush > 1.0:
                self._file.flush()
                self._last_flush = now

    def close(self):
        with self._lock:
            if not self._file.closed:
                self._file.flush()
                self._file.close()


class ShopHistory:
    """One shop's side of the run's history: every line it writes carries the shop."""

    def __init__(self, history, shop):
        self.history = history
        self.shop = shop

    def next_op_id(self):
        return self.history.next_op_id()

    def write(self, record):
        self.history.write({**record, "shop": self.shop})


def read_history(path):
    """Every record of a history file, in file order."""
    records = []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                # A run killed mid-write leaves a torn last line; anything else is a real fault.
                raise ValueError(f"{path}:{number}: not a JSON line")
    return records
