"""Kafka error codes, by Kafka's numbers and names.

The table comes from kafka-python's ``kafka.errors`` (it mirrors Kafka's
``Errors`` enum) so there is one source of truth.  ``KafkaError`` is the
exception handlers raise to answer a request (or a partition) with a code.
"""
from __future__ import annotations

import enum

import kafka.errors as _kerrors


def _codes() -> dict[str, int]:
    names: dict[str, int] = {}
    for cls in vars(_kerrors).values():
        if (isinstance(cls, type) and issubclass(cls, _kerrors.BrokerResponseError)
                and cls.errno is not None):
            names.setdefault(cls.message, cls.errno)
    # Kafka's own spellings where kafka-python uses older names; both work.
    names["NOT_LEADER_OR_FOLLOWER"] = names["NOT_LEADER_FOR_PARTITION"]
    names["MESSAGE_TOO_LARGE"] = names["MESSAGE_SIZE_TOO_LARGE"]
    names["INVALID_TOPIC_EXCEPTION"] = names["INVALID_TOPIC"]
    names["INVALID_REPLICA_ASSIGNMENT"] = names["INVALID_REPLICATION_ASSIGNMENT"]
    return dict(sorted(names.items(), key=lambda kv: kv[1]))


ErrorCode = enum.IntEnum("ErrorCode", _codes())


def error_name(code: int) -> str:
    """The code's name, or the number when Kafka has no such code (for logs)."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class KafkaError(Exception):
    """Raised to answer with a Kafka error code and an optional message."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or ErrorCode(code).name)
        self.code = int(code)
        self.message = message
