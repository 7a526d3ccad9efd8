"""TCP proxies between the nodes and the database, all on one asyncio loop in one thread.

Modes of a proxy:
  pass        forward bytes both ways
  stall       hold every byte (new connections too) until the mode ends, then deliver them:
              a database that went silent and came back
  blackhole   take bytes and drop them; when the mode ends, every connection that lost bytes
              is reset (it is broken beyond repair): a silent route that a TCP timeout ends
  reset       (an action, not a mode) close every connection now with a TCP RST

A proxy that watches commits (the nodes' proxies) reads the frontend's PostgreSQL stream
message by message (pgwire.py); while `cutting`, it cuts a connection at a simple query
that is a COMMIT, at random just before forwarding it or just after, before the server's
answer is relayed (the client never learns what became of its transaction).
"""

import asyncio
import random
import socket
import struct
import threading

from pgwire import FrontendStream


def _abort(writer):
    """Close with RST: SO_LINGER 0 makes close() reset instead of a polite FIN."""
    try:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    except (OSError, RuntimeError, AttributeError):
        pass


class _Connection:
    def __init__(self, client_writer):
        self.client_writer = client_writer
        self.server_writer = None
        self.lost_bytes = False
        self.cut_on_reply = False  # a COMMIT went through: cut at the server's answer
        self.stream = FrontendStream()

    def abort(self):
        _abort(self.client_writer)
        if self.server_writer is not None:
            _abort(self.server_writer)


class Proxy:
    def __init__(self, hub, name, target_port, watch_commits=False, seed=0):
        self.hub = hub
        self.name = name
        self.target_port = target_port
        self.watch_commits = watch_commits
        self.rng = random.Random(seed)
        self.cutting = False
        self.cuts = {"before": 0, "after": 0}
        self.port = None
        self.mode = "pass"
        self.connections = set()
        self._flowing = None  # asyncio.Event, set while bytes may flow; made on the loop

    # Called from other threads: each hops onto the proxies' loop and waits for it there.
    def set_mode(self, mode):
        self.hub.call(self._set_mode, mode)

    def reset(self):
        self.hub.call(self._reset)

    def retarget(self, port):
        """New connections go to `port` from now on; the ones open now are reset (the read
        standby's link, when a failover gives the pair another primary)."""
        self.target_port = port
        self.hub.call(self._reset)

    async def _set_mode(self, mode):
        previous, self.mode = self.mode, mode
        if mode == "stall":
            self._flowing.clear()
        else:
            self._flowing.set()
        if previous == "blackhole" and mode != "blackhole":
            for conn in list(self.connections):
                if conn.lost_bytes:
                    conn.abort()

    def set_cutting(self, on):
        """Starts or stops cutting at COMMITs; returns the cuts made so far."""
        self.cutting = on
        return dict(self.cuts)

    async def _reset(self):
        for conn in list(self.connections):
            conn.abort()

    async def _start(self):
        self._flowing = asyncio.Event()
        self._flowing.set()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._server = server

    async def _handle(self, client_reader, client_writer):
        conn = _Connection(client_writer)
        self.connections.add(conn)
        try:
            if self.mode == "blackhole":
                # A silent route: the client's connect works, nothing reaches the server.
                conn.lost_bytes = True
                await self._pump(client_reader, None, conn)
                return
            try:
                server_reader, server_writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", self.target_port), 5)
            except (OSError, asyncio.TimeoutError):
                # The server is down: the client sees its connection refused, as it would.
                _abort(client_writer)
                return
            conn.server_writer = server_writer
            frontend = self._pump_frontend if self.watch_commits else self._pump
            await asyncio.gather(frontend(client_reader, server_writer, conn),
                                 self._pump(server_reader, client_writer, conn))
        finally:
            self.connections.discard(conn)
            conn.abort()

    async def _pump(self, reader, writer, conn):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                await self._flowing.wait()
                if conn.cut_on_reply:
                    break  # the server answered a COMMIT the client must never hear of
                if self.mode == "blackhole" or writer is None:
                    conn.lost_bytes = True
                    continue
                if conn.lost_bytes:
                    continue
                writer.write(data)
                await writer.drain()
            if writer is not None and not conn.lost_bytes and not conn.cut_on_reply:
                writer.write_eof()
        except (OSError, RuntimeError):
            pass
        finally:
            # One side ended: end the other, as a real connection would.
            conn.abort()

    async def _pump_frontend(self, reader, writer, conn):
        """Client to server, whole messages at a time, cutting at a COMMIT while asked."""
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                await self._flowing.wait()
                if self.mode == "blackhole":
                    conn.lost_bytes = True
                    continue
                if conn.lost_bytes or conn.cut_on_reply:
                    continue
                out = bytearray()
                for message, is_commit in conn.stream.feed(data):
                    if is_commit and self.cutting and self.rng.random() < 0.5:
                        variant = self.rng.choice(["before", "after"])
                        self.cuts[variant] += 1
                        if variant == "after":
                            out += message
                            conn.cut_on_reply = True
                            # The answer may never come (a stalled server): cut anyway.
                            asyncio.get_running_loop().call_later(3, conn.abort)
                        writer.write(bytes(out))
                        await writer.drain()
                        if variant == "before":
                            return
                        out = None
                        break
                    out += message
                if out:
                    writer.write(bytes(out))
                    await writer.drain()
            if not conn.lost_bytes and not conn.cut_on_reply:
                writer.write_eof()
        except (OSError, RuntimeError):
            pass
        finally:
            if not conn.cut_on_reply:
                conn.abort()


class ProxyHub:
    """Owns the event loop thread of all proxies."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.proxies = []
        self._thread = threading.Thread(target=self.loop.run_forever, name="proxies",
                                        daemon=True)
        self._thread.start()

    def call(self, coroutine_function, *args, timeout=10):
        future = asyncio.run_coroutine_threadsafe(coroutine_function(*args), self.loop)
        return future.result(timeout)

    def add(self, name, target_port, watch_commits=False, seed=0):
        proxy = Proxy(self, name, target_port, watch_commits, seed)
        self.call(proxy._start)
        self.proxies.append(proxy)
        return proxy

    def close(self):
        async def shut():
            for proxy in self.proxies:
                proxy._server.close()
                proxy.mode = "pass"
                proxy._flowing.set()  # a stalled pump wakes up and finds its socket gone
                await proxy._reset()
            # Connections still pumping end by themselves now, not as warnings when the
            # loop is dropped.
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if others:
                await asyncio.wait(others, timeout=2)
        try:
            self.call(shut, timeout=5)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
