"""Request and response classes by API key.

kafka-python (>= 3.0) generates its message classes from Kafka's JSON schemas;
we collect them here by API key.  Messages it lacks (inter-broker APIs,
internal-topic records) get schemas of our own in ``protocol/`` and are loaded
by the same machinery with ``load_json=ensure_schema_package()``.
"""
from __future__ import annotations

import importlib
import pkgutil

import kafka.protocol as _kp
from kafka.protocol.api_message import ApiMessage

_SKIPPED_MODULES = (".old", "generate_stubs")


def _collect() -> tuple[dict[int, type], dict[int, type]]:
    requests: dict[int, type] = {}
    responses: dict[int, type] = {}
    for info in pkgutil.walk_packages(_kp.__path__, _kp.__name__ + "."):
        if any(part in info.name for part in _SKIPPED_MODULES):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, ApiMessage)
                    and value is not ApiMessage
                    and getattr(value, "_json", None) is not None
                    and value._class_version is None):
                table = requests if value.is_request() else responses
                table[value.API_KEY] = value
    return requests, responses


REQUESTS, RESPONSES = _collect()


def register(request_cls: type, response_cls: type) -> None:
    """Add a message pair defined from our own schemas."""
    REQUESTS[request_cls.API_KEY] = request_cls
    RESPONSES[response_cls.API_KEY] = response_cls


def is_flexible(api_key: int, version: int) -> bool:
    """Whether (api, version) uses compact encodings and tagged fields."""
    return REQUESTS[api_key].flexible_version_q(version)
