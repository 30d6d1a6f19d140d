"""``kafkapy-configs`` for client quota entities, as Kafka 3.9's ConfigCommand with
``--bootstrap-server``: ``--entity-type users|clients|ips`` (``users`` then ``clients`` for a
(user, client-id) entity), each with ``--entity-name`` or ``--entity-default``.

- ``--describe``: DescribeClientQuotas with a strict filter of the given components (a name,
  the default, or any entity of the type without one); per entity "Quota configs for
  user-principal 'U', client-id 'C' are k=v, ..." ("the default client-id" for a default),
  entities and keys in the order of the Java HashMaps the admin client fills, values as Java
  doubles.
- ``--alter``: the entity's current quotas are read first (deleting one that is not set:
  "Invalid config(s): k"); one AlterClientQuotas of the added values (doubles) and the
  deleted keys; "Completed updating config for client C." (or "... default config for
  clients in the cluster.").  Only quota keys: the refusals use ConfigCommand's words.
"""
from __future__ import annotations

from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from kafkapy.cli import _common as common
from kafkapy.cli._common import UsageError
from kafkapy.config.client_quotas import CLIENT_KEYS, IP_KEYS
from kafkapy.config.types import java_double_str
from kafkapy.jvm import java_hash_order, sized_map_capacity, string_hash

_ENTITY = {"users": "user", "clients": "client-id", "ips": "ip"}
_WORDS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
_EXACT, _DEFAULT, _ANY = 0, 1, 2
_SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def is_quota_alter(entity_types: list[str], added: dict, deleted: list) -> bool:
    """Whether an alter of users goes here (quota keys) rather than to SCRAM credentials."""
    return (entity_types != ["users"]
            or any(k in CLIENT_KEYS for k in list(added) + list(deleted)))


def describe(admin, entity_types: list[str], names: list[str | None]) -> None:
    """``names``: per type a name, "" (the default) or None (any)."""
    for entity, values in _described(admin, entity_types, names):
        text = ", ".join(f"{k}={java_double_str(v)}" for k, v in values)
        print(f"Quota configs for {_entity_text(entity)} are {text}")


def _entity_text(entity: dict) -> str:
    parts = []
    for kind in ("user", "client-id", "ip"):
        if kind in entity:
            name = entity[kind]
            parts.append(f"the default {_WORDS[kind]}" if name is None
                         else f"{_WORDS[kind]} '{name}'")
    return ", ".join(parts)


def _described(admin, entity_types, names) -> list[tuple[dict, list]]:
    components = []
    for kind, name in zip(entity_types, list(names) + [None] * len(entity_types)):
        if name is None:
            components.append((_ENTITY[kind], _ANY, None))
        elif name == "":
            components.append((_ENTITY[kind], _DEFAULT, None))
        else:
            components.append((_ENTITY[kind], _EXACT, name))
    request = DescribeClientQuotasRequest(components=components, strict=True,
                                          min_version=0, max_version=1)
    answer = common.send(admin, request)
    common.check_error(answer.error_code, answer.error_message)
    entries = []
    for entry in answer.entries or ():
        entity = {e.entity_type: e.entity_name for e in entry.entity}
        values = {v.key: v.value for v in entry.values}
        ordered = [(k, values[k]) for k in java_hash_order(values, string_hash,
                                                           sized_map_capacity(len(values)))]
        entries.append((entity, ordered))
    return _entity_order(entries)


def _entity_hash(entity: dict) -> int:
    """ClientQuotaEntity.hashCode: Objects.hash(its map), 31 + the sum of key ^ value hashes."""
    total = 31
    for key, value in entity.items():
        total += string_hash(key) ^ (0 if value is None else string_hash(value))
    return total & 0xFFFFFFFF


def _entity_order(entries: list) -> list:
    if len(entries) < 2:
        return entries
    index = {id(e): e for e in entries}
    order = java_hash_order([id(e) for e in entries],
                            lambda key: _entity_hash(index[key][0]),
                            sized_map_capacity(len(entries)))
    return [index[key] for key in order]


def alter(admin, entity_types: list[str], names: list[str], added: dict[str, str],
          deleted: list[str]) -> None:
    _check_keys(entity_types, added, deleted)
    current = _described(admin, entity_types, names)
    present = {k for _, values in current for k, _ in values}
    missing = [k for k in deleted if k not in present]
    if missing:
        raise UsageError(f"Invalid config(s): {','.join(missing)}")
    ops = []
    for key, value in added.items():
        try:
            ops.append((key, float(value), False))
        except ValueError:
            raise UsageError(f"Cannot parse quota configuration value for {key}: {value}") from None
    ops += [(key, 0.0, True) for key in deleted]
    entity = [(_ENTITY[kind], name or None) for kind, name in zip(entity_types, names)]
    request = AlterClientQuotasRequest(entries=[(entity, ops)], validate_only=False,
                                       min_version=0, max_version=1)
    answer = common.send(admin, request)
    for entry in answer.entries:
        common.check_error(entry.error_code, entry.error_message)
    head_type, head_name = entity_types[0], names[0]
    if head_name:
        print(f"Completed updating config for {head_type[:-1]} {head_name}.")
    else:
        print(f"Completed updating default config for {head_type} in the cluster.")


def _check_keys(entity_types: list[str], added: dict, deleted: list) -> None:
    if entity_types == ["ips"]:
        unknown = [k for k in list(added) + deleted if k not in IP_KEYS]
        if unknown:
            raise UsageError("Only connection quota configs can be added for 'ips' using "
                             f"--bootstrap-server. Unexpected config names: {','.join(unknown)}")
        return
    if entity_types == ["users"]:
        keys = list(added) + deleted
        unknown = [k for k in keys if k not in CLIENT_KEYS and k not in _SCRAM]
        if unknown:
            raise UsageError("Only quota and SCRAM credential configs can be added for 'users' "
                             "using --bootstrap-server. Unexpected config names: "
                             f"Set({', '.join(unknown)})")
        if any(k in _SCRAM for k in keys):
            raise UsageError("Cannot alter both quota and SCRAM credential configs "
                             "simultaneously for 'users' using --bootstrap-server.")
        return
    word = "client"
    unknown_added = [k for k in added if k not in CLIENT_KEYS]
    if unknown_added:
        raise UsageError(f"Only quota configs can be added for '{word}s' using "
                         f"--bootstrap-server. Unexpected config names: "
                         f"Set({', '.join(unknown_added)})")
    unknown_deleted = [k for k in deleted if k not in CLIENT_KEYS]
    if unknown_deleted:
        raise UsageError(f"Only quota configs can be deleted for '{word}s' using "
                         f"--bootstrap-server. Unexpected config names: "
                         f"List({', '.join(unknown_deleted)})")
