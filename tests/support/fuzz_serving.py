"""Serving checks of the frame fuzzer, shared with bench/fuzz_frames.py: a topic, a batch sent,
the broker still serving, a frame answered."""
from __future__ import annotations

import random
import socket

from kafkapy.protocol.messages import REQUESTS
from tests.support.fuzz_frames import TOPIC, mutate, seed_frames
from tests.support.wire import WireClient


_SEEDS = seed_frames()


def send_one(bootstrap: str, frame: bytes) -> None:
    """One frame on a connection of its own, read until the broker answers or closes (or
    0.5 s pass: a long poll), so every frame is really handled, never lost in a socket
    the broker already closed."""
    with socket.create_connection(_address(bootstrap), timeout=2) as sock:
        try:
            sock.sendall(frame)
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(0.5)
            while sock.recv(65536):
                pass
        except OSError:
            pass


def answered(bootstrap: str, frame: bytes, timeout: float = 3.0) -> bool:
    """Whether the broker answers ``frame`` (a whole response frame comes back) on a
    connection of its own within ``timeout`` seconds, rather than closing it or staying
    silent."""
    with socket.create_connection(_address(bootstrap), timeout=timeout) as sock:
        sock.sendall(frame)
        received = b""
        try:
            while len(received) < 4 or len(received) < 4 + int.from_bytes(received[:4], "big"):
                chunk = sock.recv(65536)
                if not chunk:
                    return False
                received += chunk
        except OSError:
            return False
        return True


def _topic():
    return REQUESTS[3].MetadataRequestTopic(version=4, name=TOPIC)


def _address(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


SENT = [0]


def send_batch(bootstrap: str, rng: random.Random, frames: int) -> None:
    for _ in range(frames):
        _, _, seed = rng.choice(_SEEDS)
        send_one(bootstrap, mutate(seed, rng))
        SENT[0] += 1


def assert_serving(bootstrap: str) -> None:
    client = WireClient(bootstrap, timeout=1.0)
    try:
        # The topic may have been deleted by a fuzzed DeleteTopics: any answer will do.
        response = client.request(3, 4, topics=[_topic()], allow_auto_topic_creation=False)
        assert response.brokers
    finally:
        client.close()
