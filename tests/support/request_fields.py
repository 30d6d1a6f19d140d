"""Build kafka-python request fields from plain dicts and lists, for raw wire tests.

``fields(api_key, topics=[{"name": "t", "partitions": [0]}], ...)`` turns every nested dict
into the data class the request's schema declares at that place, so a test can write a
request as it reads in Kafka's message JSON.  The result is passed to
``WireClient.request(api_key, version, **fields(...))``.
"""
from __future__ import annotations

from kafkapy.protocol.messages import REQUESTS


def fields(api_key: int, **values) -> dict:
    schema = {f.name: f for f in REQUESTS[api_key]._struct._fields}
    return {name: _convert(schema[name], value) for name, value in values.items()}


def _convert(field, value):
    if isinstance(value, list) and field.is_struct_array():
        inner = getattr(field, "array_of", field)
        return [_struct(inner, v) if isinstance(v, dict) else v for v in value]
    if isinstance(value, dict) and field.is_struct():
        return _struct(field, value)
    return value


def _struct(struct_field, values: dict):
    schema = {f.name: f for f in struct_field._fields}
    return struct_field.data_class(**{k: _convert(schema[k], v) for k, v in values.items()})
