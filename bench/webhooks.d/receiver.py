#!/usr/bin/env python3
"""The webhook receiver of bench/webhooks: an HTTP/1.1 server on 127.0.0.1 that answers 204.

    python3 bench/webhooks.d/receiver.py --port 8099 [--delay-ms 20]

A raw asyncio.Protocol (no http.server: its per-request cost would be the ceiling measured).
Connections are kept alive; a request's body is read by its Content-Length. Paths:

- POST /hook/deliver: a delivery. Answered 204 at once, or `--delay-ms` after it arrived.
  Each is timestamped on arrival (time.monotonic) and its `webhook-id` checked against the
  ones before it: a repeat (an id seen before) or an id lower than the highest seen
  (out of order) is counted. Once the subscription's secret is known (POST /_bench/secret),
  its `webhook-signature` is checked too, after the answer is written.
- POST /hook/ceiling: the same work under another count: what the ceiling client
  (bench.py ceiling) sends, a copy of a delivery, to measure this receiver's own rate.
- POST /_bench/secret: the subscription's `whsec_…` secret, as the body.
- GET /_bench/stats: what it counted, as JSON (bench.py reads it).

Python's standard library only.
"""

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import time

RESPONSE_204 = b"HTTP/1.1 204 No Content\r\n\r\n"
# The longest header block accepted; a delivery's is about 300 bytes.
MAX_HEAD = 64 * 1024


class Tally:
    """What arrived on one path."""

    def __init__(self):
        self.count = 0
        self.first = None
        self.last = None
        self.seen = set()
        self.highest = None
        self.repeats = 0
        self.out_of_order = 0
        self.without_id = 0
        self.body_bytes = 0
        self.bad_signatures = 0
        self.verified = 0
        self.types = {}
        self.sample_head = None
        self.connections = 0

    def record(self, now, head, msg_id, body):
        self.count += 1
        if self.first is None:
            self.first = now
            self.sample_head = head
        self.last = now
        self.body_bytes += len(body)
        if msg_id is None:
            self.without_id += 1
        elif msg_id in self.seen:
            self.repeats += 1
        else:
            self.seen.add(msg_id)
            if self.highest is not None and msg_id < self.highest:
                self.out_of_order += 1
        if msg_id is not None and (self.highest is None or msg_id > self.highest):
            self.highest = msg_id
        # The CloudEvent's type, without parsing the JSON: `"type":"order.placed"`.
        start = body.find(b'"type":"')
        if start >= 0:
            start += 8
            kind = body[start : body.find(b'"', start)].decode("ascii", "replace")
            self.types[kind] = self.types.get(kind, 0) + 1

    def report(self):
        ids = sorted(self.seen)
        gaps = []
        missing_inside = 0
        for before, after in zip(ids, ids[1:]):
            if after - before > 1:
                missing_inside += after - before - 1
                if len(gaps) < 100:
                    gaps.append([before + 1, after - 1])
        return {
            "count": self.count,
            "distinct": len(ids),
            "first_at": self.first,
            "last_at": self.last,
            "lowest_id": ids[0] if ids else None,
            "highest_id": ids[-1] if ids else None,
            "repeats": self.repeats,
            "out_of_order": self.out_of_order,
            "without_id": self.without_id,
            "missing_inside": missing_inside,
            "gaps": gaps,
            "mean_body_bytes": self.body_bytes / self.count if self.count else None,
            "bad_signatures": self.bad_signatures,
            "verified_signatures": self.verified,
            "types": self.types,
            "connections": self.connections,
            "sample_head": self.sample_head.decode("latin-1") if self.sample_head else None,
        }


class Receiver:
    def __init__(self, delay):
        self.delay = delay
        self.key = None
        self.tallies = {"deliver": Tally(), "ceiling": Tally()}

    def verify(self, tally, headers, body):
        if self.key is None:
            return
        try:
            signed = b"%s.%s." % (headers[b"webhook-id"], headers[b"webhook-timestamp"]) + body
            expected = base64.b64encode(hmac.new(self.key, signed, hashlib.sha256).digest())
            signatures = headers[b"webhook-signature"].split(b" ")
        except KeyError:
            tally.bad_signatures += 1
            return
        if any(
            entry.startswith(b"v1,") and hmac.compare_digest(entry[3:], expected)
            for entry in signatures
        ):
            tally.verified += 1
        else:
            tally.bad_signatures += 1

    def stats(self):
        return {
            "delay_ms": self.delay * 1000,
            "secret_known": self.key is not None,
            **{name: tally.report() for name, tally in self.tallies.items()},
        }


class Connection(asyncio.Protocol):
    def __init__(self, receiver):
        self.receiver = receiver
        self.buffer = b""
        self.transport = None
        self.counted = set()

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD:
                    self.transport.close()
                return
            head = self.buffer[: end + 4]
            lines = head[:end].split(b"\r\n")
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get(b"content-length", b"0"))
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            self.handle(time.monotonic(), lines[0], head, headers, body)

    def handle(self, now, request_line, head, headers, body):
        method, _, rest = request_line.partition(b" ")
        path = rest.partition(b" ")[0]
        receiver = self.receiver
        kind = path.rpartition(b"/")[2].decode("latin-1")
        tally = receiver.tallies.get(kind)
        if tally is not None and method == b"POST":
            if receiver.delay:
                asyncio.get_running_loop().call_later(receiver.delay, self.answer, RESPONSE_204)
            else:
                self.transport.write(RESPONSE_204)
            raw_id = headers.get(b"webhook-id")
            msg_id = int(raw_id) if raw_id is not None and raw_id.isdigit() else None
            tally.record(now, head, msg_id, body)
            if kind not in self.counted:
                self.counted.add(kind)
                tally.connections += 1
            receiver.verify(tally, headers, body)
        elif path == b"/_bench/stats":
            self.answer_json(200, receiver.stats())
        elif path == b"/_bench/secret" and method == b"POST":
            receiver.key = base64.b64decode(body.strip().decode().removeprefix("whsec_"))
            self.answer_json(200, {"ok": True})
        else:
            self.answer_json(404, {"error": "no such path"})

    def answer(self, response):
        if not self.transport.is_closing():
            self.transport.write(response)

    def answer_json(self, status, value):
        body = json.dumps(value).encode()
        reason = {200: b"OK", 404: b"Not Found"}[status]
        self.answer(
            b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (status, reason, len(body))
            + body
        )


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=0.0, help="answer this long after arrival")
    args = parser.parse_args()
    receiver = Receiver(args.delay_ms / 1000)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(receiver), "127.0.0.1", args.port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
