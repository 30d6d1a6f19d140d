"""A loopback TCP proxy that can hold what a client sends: a request delayed in the network.

``HoldingProxy(target_port).start()`` listens on ``127.0.0.1:<proxy.port>`` and forwards
every accepted connection to ``127.0.0.1:<target_port>``, both ways, on an asyncio loop in a
thread of its own.  ``hold()`` keeps every byte the clients send from then on in the proxy
(``held`` counts them) while the target's answers still flow back; ``release()`` sends what
was held, in order, and forwards again.  ``stop()`` closes everything.

Invariants: only loopback addresses; bytes of one connection reach the target in the order
the client sent them; nothing is dropped by holding.
"""
from __future__ import annotations

import asyncio
import threading


class HoldingProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.held = 0                         # client bytes waiting in the proxy
        self._loop = asyncio.new_event_loop()
        self._open: asyncio.Event | None = None
        self._server: asyncio.AbstractServer | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._thread = threading.Thread(target=self._loop.run_forever, name="holding-proxy",
                                        daemon=True)

    def start(self) -> "HoldingProxy":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        return self

    async def _listen(self) -> None:
        self._open = asyncio.Event()
        self._open.set()
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def hold(self) -> None:
        """From its return on, nothing a client sends goes on to the target."""
        self._on_loop(self._open.clear)

    def release(self) -> None:
        self._on_loop(self._open.set)

    def _on_loop(self, fn) -> None:
        async def call():
            fn()
        asyncio.run_coroutine_threadsafe(call(), self._loop).result(10)

    def stop(self) -> None:
        async def close():
            self._server.close()
            for w in self._writers:
                w.close()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter):
        try:
            target_r, target_w = await asyncio.open_connection(*self.target)
        except OSError:
            client_w.close()
            return
        self._writers += [client_w, target_w]
        await asyncio.gather(self._pump(client_r, target_w, holdable=True),
                             self._pump(target_r, client_w, holdable=False))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    holdable: bool) -> None:
        try:
            while data := await reader.read(65536):
                if holdable and not self._open.is_set():
                    self.held += len(data)
                    await self._open.wait()
                    self.held -= len(data)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
