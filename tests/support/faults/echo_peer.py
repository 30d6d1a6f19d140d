"""A line-based echo server that can also talk to other peers, to prove partitions on real
sockets: ``python -m tests.support.faults.echo_peer <port>`` (run under a group of its own).

Every connection speaks lines; answers are one line each:

* ``ECHO <x>`` -> ``ECHO <x>``; ``x`` is remembered as received;
* ``SEEN <x>`` -> ``YES`` or ``NO``: whether an ``ECHO <x>`` ever arrived here;
* ``OPEN <port>`` -> ``CONN <id>`` (a connection of this process to 127.0.0.1:port, kept
  open) or ``ERR <why>``;
* ``SEND <id> <x>`` -> ``OK`` if ``ECHO <x>`` came back over connection ``<id>`` within
  ``WAIT_S``, else ``TIMEOUT``;
* ``NEW <port> <x>`` -> the same over a new connection (connect included in ``WAIT_S``);
* ``CLOSE <id> <x>`` -> ``CLOSED``: sends ``ECHO <x>`` over connection ``<id>`` and closes it
  at once (the kernel goes on retransmitting for the closed socket).

Replies that arrive late (after a TIMEOUT) are skipped by the next ``SEND`` on that
connection, which waits for its own token.
"""
from __future__ import annotations

import socket
import sys
import threading

WAIT_S = 1.5


class _Line:
    """A socket read line by line, with a deadline per read."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def readline(self, timeout: float | None) -> str | None:
        self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            try:
                data = self.sock.recv(4096)
            except (socket.timeout, OSError):
                return None
            if not data:
                return None
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()


class Peer:
    def __init__(self, port: int) -> None:
        self.server = socket.create_server(("127.0.0.1", port))
        self.seen: set[str] = set()
        self.conns: dict[int, _Line] = {}
        self.lock = threading.Lock()

    def serve(self) -> None:
        while True:
            sock, _ = self.server.accept()
            threading.Thread(target=self._session, args=(sock,), daemon=True).start()

    def _session(self, sock: socket.socket) -> None:
        reader = _Line(sock)
        while True:
            line = reader.readline(None)
            if line is None:
                sock.close()
                return
            try:
                sock.sendall((self._answer(line) + "\n").encode())
            except OSError:
                return

    def _answer(self, line: str) -> str:
        verb, _, rest = line.partition(" ")
        if verb == "ECHO":
            with self.lock:
                self.seen.add(rest)
            return line
        if verb == "SEEN":
            with self.lock:
                return "YES" if rest in self.seen else "NO"
        if verb == "OPEN":
            try:
                sock = socket.create_connection(("127.0.0.1", int(rest)), timeout=WAIT_S)
            except OSError as e:
                return f"ERR {e}"
            with self.lock:
                cid = len(self.conns) + 1
                self.conns[cid] = _Line(sock)
            return f"CONN {cid}"
        if verb == "SEND":
            cid, _, token = rest.partition(" ")
            return self._exchange(self.conns[int(cid)], token)
        if verb == "CLOSE":
            cid, _, token = rest.partition(" ")
            with self.lock:
                conn = self.conns.pop(int(cid))
            try:
                conn.sock.sendall(f"ECHO {token}\n".encode())
            finally:
                conn.sock.close()
            return "CLOSED"
        if verb == "NEW":
            port, _, token = rest.partition(" ")
            try:
                sock = socket.create_connection(("127.0.0.1", int(port)), timeout=WAIT_S)
            except OSError:
                return "TIMEOUT"
            try:
                return self._exchange(_Line(sock), token)
            finally:
                sock.close()
        return f"ERR unknown {verb}"

    @staticmethod
    def _exchange(conn: _Line, token: str) -> str:
        import time
        try:
            conn.sock.sendall(f"ECHO {token}\n".encode())
        except OSError:
            return "TIMEOUT"
        deadline = time.monotonic() + WAIT_S
        while (left := deadline - time.monotonic()) > 0:
            line = conn.readline(left)
            if line is None:
                return "TIMEOUT"
            if line == f"ECHO {token}":
                return "OK"
        return "TIMEOUT"


if __name__ == "__main__":
    Peer(int(sys.argv[1])).serve()
