"""The live stream's listener: follows GET /v1/events/stream on one node and reconnects
with `Last-Event-ID` (the last id it received, 0 at first) after any failure: a killed
node, a reset, an error answer, a stream that went silent past its heartbeat.

What it receives goes to the history as "sse" lines (the ids of a stretch of one
connection, in order, and the Last-Event-ID that connection sent); the checker replays them.
"""

import http.client
import threading
import time


class SseListener(threading.Thread):
    def __init__(self, name, address, node, history, staff_key, stop):
        super().__init__(name=name, daemon=True)
        self.address = address
        self.node = node
        self.history = history
        self.staff_key = staff_key
        self.stop = stop
        self.last = 0
        self.connections = 0
        self._conn = None

    def run(self):
        while not self.stop.is_set():
            self._follow()
            self.stop.wait(0.2)

    def close(self):
        """Ends a connection blocked on a read (the run is over)."""
        conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(2)
            except OSError:
                pass

    def _follow(self):
        host, port = self.address.rsplit(":", 1)
        # Past the 15 s heartbeat with room to spare: silence longer than this is a dead
        # stream (a stalled node), ended and resumed.
        conn = http.client.HTTPConnection(host, int(port), timeout=25)
        self._conn = conn
        self.connections += 1
        sent = self.last
        ids, flushed, error = [], time.monotonic(), None
        try:
            conn.request("GET", "/v1/events/stream", headers={
                "Authorization": f"Bearer {self.staff_key}", "Accept": "text/event-stream",
                "Last-Event-ID": str(sent)})
            response = conn.getresponse()
            if response.status != 200:
                error = f"status {response.status}"
                response.read()
                return
            event_id = None
            while not self.stop.is_set():
                line = response.readline()
                if not line:
                    error = "ended"
                    break
                line = line.rstrip(b"\r\n")
                if line.startswith(b"id:"):
                    event_id = line[3:].strip().decode()
                elif not line and event_id is not None:
                    ids.append(int(event_id))
                    self.last = int(event_id)
                    event_id = None
                if ids and time.monotonic() - flushed > 0.5:
                    self._write(sent, ids)
                    ids, flushed = [], time.monotonic()
        except (OSError, http.client.HTTPException, ValueError) as err:
            error = type(err).__name__
        finally:
            if ids:
                self._write(sent, ids)
            if error and not self.stop.is_set():
                self.history.write({"t": "sse_end", "client": self.name, "node": self.node,
                                    "conn": self.connections, "at": round(time.time(), 4),
                                    "error": error})
            conn.close()

    def _write(self, sent, ids):
        self.history.write({"t": "sse", "client": self.name, "node": self.node,
                            "conn": self.connections, "last_event_id": sent,
                            "at": round(time.time(), 4), "ids": ids})
