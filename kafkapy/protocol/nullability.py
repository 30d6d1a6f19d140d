"""Reject decoded requests that carry null where Kafka's schema forbids it.

kafka-python's decoders read a length of -1 as ``None`` whatever the field's
``nullableVersions`` say; Kafka's parser refuses such a request ("non-nullable field
... was serialized as null") and closes the connection.  ``null_field(request, version)``
finds the first such field so the connection can do the same with one log line instead
of a handler tripping over ``None``.

The check plan for an (API, version) is compiled once from the message's schema: only
strings, bytes, arrays and structs can be null, and only non-nullable, non-tagged ones are
checked, also inside a nullable struct (array) that is not null (Kafka reads its elements
with the same checks), and so are the elements of string and bytes arrays (which Kafka never
lets be null), so the walk costs a few attribute reads per topic and partition, nothing per
record.
"""
from __future__ import annotations

_NULLABLE_KINDS = ("string", "bytes", "records")
_PLANS: dict[tuple[type, int], tuple] = {}


def null_field(request, version: int) -> str | None:
    """The path of the first non-nullable field that is null, or None.  A request a
    handler decoded itself (no kafka-python schema) has none: its decoder refuses them."""
    key = (type(request), version)
    plan = _PLANS.get(key)
    if plan is None:
        schema = getattr(type(request), "_struct", None)
        if schema is None:
            return None
        plan = _PLANS[key] = _plan(schema, version)
    return _walk(request, plan, "")


def _walk(obj, plan, prefix: str) -> str | None:
    for name, children, is_list, nullable, scalar_items in plan:
        value = getattr(obj, name, None)
        path = f"{prefix}{name}"
        if value is None:
            if nullable:
                continue
            return path
        if scalar_items:
            missing = next((i for i, item in enumerate(value) if item is None), None)
            if missing is not None:
                return f"{path}[{missing}]"
        if not children:
            continue
        for i, item in enumerate(value if is_list else (value,)):
            if item is None:
                return f"{path}[{i}]"
            found = _walk(item, children, f"{path}[{i}]." if is_list else f"{path}.")
            if found:
                return found
    return None


def _plan(struct, version: int) -> tuple:
    """(attribute, child plan, is a list of structs, may be null, its items are strings or
    bytes) for each field that must not be null or holds one that must not."""
    out = []
    for field in struct._fields:
        if not field.for_version_q(version) or field.tagged_field_q(version):
            continue
        can_be_null = field.is_array() or field.is_struct() or field.type_str in _NULLABLE_KINDS
        if not can_be_null:
            continue
        nullable = field.nullable_for_version_q(version)
        children = ()
        if field.is_struct_array() or field.is_struct():
            children = _plan(field, version)
        scalar_items = (field.is_array() and not field.is_struct_array()
                        and field.array_of.type_str in _NULLABLE_KINDS)
        if nullable and not children and not scalar_items:
            continue
        out.append((field.name, children, field.is_struct_array(), nullable, scalar_items))
    return tuple(out)
