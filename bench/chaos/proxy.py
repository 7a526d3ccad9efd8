"""TCP proxies between the nodes and the database, all on one asyncio loop in one thread.

Modes of a proxy:
  pass        forward bytes both ways
  stall       hold every byte (new connections too) until the mode ends, then deliver them:
              a database that went silent and came back
  blackhole   take bytes and drop them; when the mode ends, every connection that lost bytes
              is reset (it is broken beyond repair): a silent route that a TCP timeout ends
  reset       (an action, not a mode) close every connection now with a TCP RST
"""

import asyncio
import socket
import struct
import threading


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

    def abort(self):
        _abort(self.client_writer)
        if self.server_writer is not None:
            _abort(self.server_writer)


class Proxy:
    def __init__(self, hub, name, target_port):
        self.hub = hub
        self.name = name
        self.target_port = target_port
        self.port = None
        self.mode = "pass"
        self.connections = set()
        self._flowing = None  # asyncio.Event, set while bytes may flow; made on the loop

    # Called from other threads: each hops onto the proxies' loop and waits for it there.
    def set_mode(self, mode):
        self.hub.call(self._set_mode, mode)

    def reset(self):
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
            await asyncio.gather(self._pump(client_reader, server_writer, conn),
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
                if self.mode == "blackhole" or writer is None:
                    conn.lost_bytes = True
                    continue
                if conn.lost_bytes:
                    continue
                writer.write(data)
                await writer.drain()
            if writer is not None and not conn.lost_bytes:
                writer.write_eof()
        except (OSError, RuntimeError):
            pass
        finally:
            # One side ended: end the other, as a real connection would.
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

    def add(self, name, target_port):
        proxy = Proxy(self, name, target_port)
        self.call(proxy._start)
        self.proxies.append(proxy)
        return proxy

    def close(self):
        async def shut():
            for proxy in self.proxies:
                proxy._server.close()
                await proxy._reset()
        try:
            self.call(shut, timeout=5)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
