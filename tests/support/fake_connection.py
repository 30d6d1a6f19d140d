"""A ``KafkaConnection`` on a fake transport and a fake listener: frames go in by
``data_received`` and what the connection writes is kept, with no socket or event loop
work of the listener's own."""
from __future__ import annotations

from types import SimpleNamespace

from kafkapy.config.broker import BrokerConfig
from kafkapy.network.connection import KafkaConnection
from tests.support.services import services


class FakeTransport:
    def __init__(self) -> None:
        self.closed = False
        self.paused = False
        self.written = b""

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 40000) if name == "peername" else default

    def write(self, data) -> None:
        self.written += bytes(data)

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


def fake_connection(properties: dict | None = None, listener: str = "PLAINTEXT"
                    ) -> tuple[KafkaConnection, FakeTransport]:
    """A connection made on ``listener`` (its name is its security protocol) of a broker
    with ``properties``."""
    config = BrokerConfig.from_properties(properties or {})
    server = SimpleNamespace(config=config, authorizer_enabled=False, services=services(),
                             max_request_bytes=1 << 20, max_inflight=5,
                             zero_copy=False, listener=listener,
                             security_protocol=listener, now=lambda: 0.0,
                             connection_opened=lambda c: None, connection_closed=lambda c: None,
                             apis={}, unsupported_api_versions=None, request_quota=None)
    conn = KafkaConnection(server)
    transport = FakeTransport()
    conn.connection_made(transport)
    return conn, transport
