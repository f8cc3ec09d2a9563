"""The links between nodes, timed while the job trains: a node's first rank sends a message to the next node's first
rank over TCP, once a window, and times it. Touches sockets.

A link that slows mid-run slows every rank alike (gloo's ring, NCCL's rings and trees wait on their slowest link),
so no rank's own work shows it. The preflight times each link before training with a pair of collectives on a
group of its own; repeating those while the job trains would need every rank at an agreed step (a collective) or
a second communicator beside the job's (NCCL kernels of two communicators can deadlock each other on one GPU). So
the watch times each link out of band instead: each node's first rank listens on a port of its own
(:class:`Listener`, a thread), puts its address in the job's store, and each window sends :data:`MESSAGE_BYTES`
to the next node's first rank over one kept connection and waits for its one-byte answer (:class:`Prober`).
Nothing waits for a rank in step: a peer that is gone costs the probe's budget, in the watch's thread.

It times the path TCP takes between the nodes (``GLOO_SOCKET_IFNAME``'s, or the route to ``MASTER_ADDR``): gloo's
own path. On a cluster whose NCCL runs over InfiniBand or EFA, that is not NCCL's path (docs/watch.md, what the
watch cannot see).
"""

from __future__ import annotations

import secrets
import socket
import struct
import threading
import time
from typing import Optional, Tuple

MESSAGE_BYTES = 1 << 20  # the preflight's link message (measure.LINK_MB): 0.17 s at 50 Mbit/s, about 1 ms unshaped
TOKEN_BYTES = 16
CHUNK = 1 << 16
HELLO = struct.Struct(f"<{TOKEN_BYTES}sQ")  # the job's token, then the message's size


def local_address(towards: Optional[str]) -> str:
    """The address this host reaches ``towards`` from (the route's source; no packet is sent), or the loopback."""
    if not towards:
        return "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((towards, 9))
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def _receive(connection: socket.socket, size: int) -> bool:
    left = size
    while left > 0:
        data = connection.recv(min(CHUNK, left))
        if not data:
            return False
        left -= len(data)
    return True


class Listener:
    """The first rank of a node: answers the previous node's probes, one connection at a time, each message with
    one byte once it has all of it. A connection that does not begin with the job's token is closed."""

    def __init__(self, host: str, idle_s: float):
        self.token = secrets.token_bytes(TOKEN_BYTES)
        self.idle_s = idle_s  # the most a connection waits for its next message (the job's timeout)
        self._server = socket.create_server((host, 0))
        self._server.settimeout(0.5)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="bootstrap-watch-probe", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        """``host:port:token`` as the store carries it."""
        host, port = self._server.getsockname()[:2]
        return f"{host}:{port}:{self.token.hex()}"

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self._server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with connection:
                connection.settimeout(self.idle_s)
                try:
                    self._answer(connection)
                except OSError:
                    continue

    def _answer(self, connection: socket.socket) -> None:
        while not self._stopped.is_set():
            hello = bytearray()
            while len(hello) < HELLO.size:
                data = connection.recv(HELLO.size - len(hello))
                if not data:
                    return
                hello += data
            token, size = HELLO.unpack(bytes(hello))
            if token != self.token or size > 64 * MESSAGE_BYTES or not _receive(connection, size):
                return
            connection.sendall(b"\1")

    def stop(self) -> None:
        self._stopped.set()
        self._server.close()
        self._thread.join(timeout=1.0)


def parse_address(text: str) -> Optional[Tuple[str, int, bytes]]:
    """``host:port:token`` as a listener puts it; None when it is not one."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3:
        return None
    host, port_text, token_text = parts
    try:
        port, token = int(port_text), bytes.fromhex(token_text)
    except ValueError:
        return None
    if not host or not 0 < port < 65536 or len(token) != TOKEN_BYTES:
        return None
    return host, port, token


class Prober:
    """A node's first rank: times its link to the next node's first rank, over one connection kept open."""

    def __init__(self, address: Tuple[str, int, bytes], budget_s: float):
        self.host, self.port, self.token = address
        self.budget_s = budget_s
        self._connection: Optional[socket.socket] = None
        self._message = bytes(MESSAGE_BYTES)

    def time(self) -> Optional[float]:
        """GB/s one way over the link, or None when the peer did not answer within the budget."""
        try:
            if self._connection is None:
                self._connection = socket.create_connection((self.host, self.port), timeout=self.budget_s)
                self._connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection = self._connection
            started = time.perf_counter()
            connection.sendall(HELLO.pack(self.token, len(self._message)) + self._message)
            if connection.recv(1) != b"\1":
                raise OSError("the peer closed the link's probe")
            seconds = time.perf_counter() - started
        except OSError:
            self.close()
            return None
        return len(self._message) / seconds / 1e9 if seconds > 0 else None

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            finally:
                self._connection = None
