"""A loopback TCP proxy that a test can cut and heal: a network partition on one link.

``TcpProxy(target_port).start()`` listens on ``127.0.0.1:<proxy.port>`` and forwards every
accepted connection, both ways, to ``127.0.0.1:<target_port>``.  ``cut()`` closes every
forwarded connection and, until ``heal()``, closes each new one at once (the client sees
its connection reset, as it would behind a broken link: nothing reaches the target, so a
ZooKeeper server behind it expires the client's session after its timeout).  ``heal()``
forwards again.  ``stop()`` ends everything.

Invariants: traffic only between loopback addresses; one daemon thread accepts, one per
connection pumps (``select`` with a short timeout, so ``cut``/``stop`` take effect within
``_TICK`` seconds); while cut no byte is forwarded in either direction.
"""
from __future__ import annotations

import select
import socket
import threading

_TICK = 0.1
_CHUNK = 65536


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(_TICK)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._cut = False
        self._stopped = False
        self.accepted = 0          # connections forwarded so far (for test diagnostics)
        self.refused = 0           # connections closed at once while cut
        self._thread = threading.Thread(target=self._accept_loop, name="tcp-proxy", daemon=True)

    @property
    def is_cut(self) -> bool:
        return self._cut

    def start(self) -> "TcpProxy":
        self._thread.start()
        return self

    def cut(self) -> None:
        """Drop every forwarded connection; refuse (accept and close) new ones."""
        with self._lock:
            self._cut = True
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            _close(a)
            _close(b)

    def heal(self) -> None:
        with self._lock:
            self._cut = False

    def stop(self) -> None:
        self._stopped = True
        self.cut()
        self._thread.join(5)
        _close(self._listener)

    # -- threads ----------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            if self._cut or self._stopped:
                self.refused += 1
                _reset(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _close(client)
                continue
            with self._lock:
                if self._cut:           # cut while connecting: this one goes too
                    _reset(client)
                    _close(upstream)
                    continue
                self._pairs.append((client, upstream))
                self.accepted += 1
            threading.Thread(target=self._pump, args=(client, upstream),
                             name="tcp-proxy-pump", daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peer = {a: b, b: a}
        try:
            while not self._stopped and not self._cut:
                try:
                    readable, _, _ = select.select([a, b], [], [], _TICK)
                except (OSError, ValueError):
                    return
                for s in readable:
                    data = s.recv(_CHUNK)
                    if not data or self._cut:
                        return
                    peer[s].sendall(data)
        except OSError:
            return
        finally:
            with self._lock:
                if (a, b) in self._pairs:
                    self._pairs.remove((a, b))
            _close(a)
            _close(b)


def _close(s: socket.socket) -> None:
    try:
        s.close()
    except OSError:
        pass


def _reset(s: socket.socket) -> None:
    """Close with RST rather than FIN (SO_LINGER 0): the client sees its link broken."""
    try:
        import struct
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    _close(s)
