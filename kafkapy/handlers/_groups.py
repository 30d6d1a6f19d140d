"""Helpers shared by the group-coordinator handlers (not an API module itself)."""
from __future__ import annotations

import asyncio


def coordinator(ctx):
    return ctx.services.groups.coordinator


def client_host(ctx) -> str:
    """Kafka reports a member's host as ``InetAddress.toString``: ``/127.0.0.1``."""
    host = ctx.peer.rsplit(":", 1)[0] if ctx.peer and ctx.peer != "?" else ""
    return "/" + host


def callback_future():
    """A future and a callback that completes it once (later calls are ignored)."""
    future = asyncio.get_running_loop().create_future()

    def respond(result) -> None:
        if not future.done():
            future.set_result(result)
    return future, respond
