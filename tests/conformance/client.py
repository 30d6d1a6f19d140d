"""Raw-socket request/answer for the differential suite.

``Connection.exchange(api_key, version, fields)`` frames one request (int32 size, request
header, body, encoded by kafka-python's class for ``api_key``), sends it and reads one
answer frame, decoded by the same class's response for that version.  The outcome is an
``Answer``: the decoded response, or ``DROPPED`` when the broker closed the connection,
``NO ANSWER`` when it sent nothing within the case's timeout, or ``UNDECODABLE`` with the
frame's first body bytes when the schema of the requested version cannot read it.
Both brokers' answers go through this one path, so a decoding quirk affects both alike.

Invariant: after a dropped or undecodable answer the socket is reopened before the next
request, so one case's failure never leaks into the next case.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from kafkapy.protocol.messages import REQUESTS, RESPONSES
from tests.support.wire import recv_frame

CLIENT_ID = "conformance"
READ_TIMEOUT_S = 15.0


@dataclass
class Answer:
    """One broker's outcome for one request: ``response`` or ``failure`` is set."""
    response: Any = None
    failure: str | None = None      # "DROPPED" | "UNDECODABLE: ..."


def materialise(struct: Any, version: int, fields: dict) -> dict:
    """Keyword arguments for ``struct``'s data class from a plain dict: nested dicts and lists
    of dicts become the schema's classes, and fields the version lacks are dropped, so one
    case can describe a request for every version."""
    out = {}
    for name, value in fields.items():
        field = struct.fields.get(name)
        if field is None:
            raise KeyError(f"{struct.name} has no field {name}")
        if not field.for_version_q(version):
            continue
        if field.is_struct_array() and value is not None:
            value = [field.data_class(version=version, **materialise(field, version, v))
                     for v in value]
        elif field.is_struct() and value is not None:
            value = field.data_class(version=version, **materialise(field, version, value))
        out[name] = value
    return out


class Connection:
    """One lazily (re)opened socket to one broker."""

    def __init__(self, host: str, port: int) -> None:
        self.address = (host, port)
        self._sock: socket.socket | None = None
        self._correlation = 0

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _socket(self) -> socket.socket:
        if self._sock is None:
            self._sock = socket.create_connection(self.address, timeout=READ_TIMEOUT_S)
        return self._sock

    def send(self, api_key: int, version: int, fields: dict) -> int:
        """Frame and send one request; returns its correlation id."""
        self._correlation += 1
        cls = REQUESTS[api_key]
        request = cls(version=version, **materialise(cls._struct, version, fields))
        request.with_header(correlation_id=self._correlation, client_id=CLIENT_ID)
        data = bytes(request.encode(header=True, framed=True))
        try:
            self._socket().sendall(data)
        except OSError:
            self.close()
        return self._correlation

    def receive(self, api_key: int, version: int, correlation: int,
                timeout: float = READ_TIMEOUT_S) -> Answer:
        """Read and decode the answer to ``correlation``; never raises for broker faults."""
        if self._sock is None:
            return Answer(failure="DROPPED")
        try:
            self._sock.settimeout(timeout)
            frame = recv_frame(self._sock)
        except socket.timeout:
            self.close()
            return Answer(failure=f"NO ANSWER within {timeout}s")
        except (OSError, ConnectionError):
            self.close()
            return Answer(failure="DROPPED")
        try:
            response = RESPONSES[api_key].decode(frame, version=version, header=True)
        except Exception:  # noqa: BLE001 - any decoder complaint is the finding
            self.close()
            # The body bytes after the correlation id, so two equally odd answers compare equal.
            return Answer(failure=f"UNDECODABLE as v{version}: {bytes(frame[4:])[:96].hex()}")
        if response.header.correlation_id != correlation:
            self.close()
            return Answer(failure=f"WRONG CORRELATION {response.header.correlation_id}")
        return Answer(response=response)

    def exchange(self, api_key: int, version: int, fields: dict) -> Answer:
        return self.receive(api_key, version, self.send(api_key, version, fields))
