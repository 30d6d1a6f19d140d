"""Client quota entities in ZooKeeper, written as Kafka 3.9's ZooKeeper mode writes them
(ZkAdminManager.alterClientQuotas, AdminZkClient.changeConfigs).

Entities and their znodes (names in Kafka's Sanitizer form, ``<default>`` for the default
entity, a null name on the wire):
``{user}`` -> ``/config/users/<u>``, ``{user, client-id}`` -> ``/config/users/<u>/clients/<c>``,
``{client-id}`` -> ``/config/clients/<c>``, ``{ip}`` -> ``/config/ips/<ip>``.
Each holds ``{"version":1,"config":{...}}``; a change writes the znode (or, once its config
is empty and it has no children, deletes it: for a user/client-id node also its
``clients`` parent and the user node when those become empty, as Kafka's
tryCleanQuotaNodes), then a ``/config/changes`` notification
``{"version":2,"entity_path":"<type>/<path>"}``.

Keys and how a value (a double on the wire) is stored: ``producer_byte_rate``,
``consumer_byte_rate`` (LONG: must be integral within 1e-6, stored as an integer),
``request_percentage``, ``controller_mutation_rate`` (DOUBLE: Java's Double.toString);
ips: ``connection_creation_rate`` (INT).  A user node also holds SCRAM credentials, which
AlterClientQuotas cannot set (Kafka answers UNKNOWN_SERVER_ERROR for them).

``alter(store, entries, validate_only)`` returns ``[(entity, code, message)]`` in Kafka's
order: one result per distinct entity (a later duplicate's result replaces the earlier
one, in the earlier one's place).  ``entity`` is ``{entity_type: name or None}``.
"""
from __future__ import annotations

import ipaddress
import math
import socket
from typing import Iterable

from kazoo.exceptions import NoNodeError

from kafkapy.config.types import java_double_str
from kafkapy.metadata import paths
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security.sasl.credentials import java_properties_order, sanitize

USER, CLIENT_ID, IP = "user", "client-id", "ip"
DEFAULT = "<default>"

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

_LONG, _INT, _DOUBLE, _STRING = "LONG", "INT", "DOUBLE", "STRING"
#: QuotaConfig.userAndClientQuotaConfigs
CLIENT_KEYS = {PRODUCER_BYTE_RATE: _LONG, CONSUMER_BYTE_RATE: _LONG,
               REQUEST_PERCENTAGE: _DOUBLE, CONTROLLER_MUTATION_RATE: _DOUBLE}
#: QuotaConfig.scramMechanismsPlusUserAndClientQuotaConfigs
USER_KEYS = {**CLIENT_KEYS, "SCRAM-SHA-256": _STRING, "SCRAM-SHA-512": _STRING}
#: QuotaConfig.ipConfigs
IP_KEYS = {CONNECTION_CREATION_RATE: _INT}
_EPSILON = 1e-6
_LONG_MAX = 2 ** 63 - 1
_INT_MAX = 2 ** 31 - 1


class QuotaError(Exception):
    """A refused entity: Kafka's error code and message (None: no message)."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code, self.message = int(code), message


def _invalid(message: str) -> QuotaError:
    return QuotaError(ErrorCode.INVALID_REQUEST, message)


def entity_znode(entity: dict) -> tuple[str, str, dict, bool]:
    """(config type, sanitized path under it, the keys it takes, is user/client-id);
    QuotaError as ZkAdminManager.parseAndSanitizeQuotaEntity and alterEntityQuotas."""
    if not entity:
        raise _invalid("Invalid empty client quota entity")
    parts: dict[str, str] = {}
    for kind, name in entity.items():
        if kind not in (USER, CLIENT_ID, IP):
            raise _invalid(f"Unhandled client quota entity type: {kind}")
        parts[kind] = DEFAULT if name is None else sanitize(name)
        if name is not None and name == "":
            raise _invalid(f"Empty {kind} not supported")
    user, client, ip = parts.get(USER), parts.get(CLIENT_ID), parts.get(IP)
    if ip is not None and user is None and client is None:
        if not _valid_ip_entity(ip):
            raise _invalid(f"{ip} is not a valid IP or resolvable host.")
        return paths.CONFIG_TYPE_IP, ip, IP_KEYS, False
    if ip is not None:
        raise _invalid("Invalid quota entity combination, IP entity should not be used with "
                       "user/client ID entity.")
    if user is not None and client is not None:
        return paths.CONFIG_TYPE_USER, f"{user}/clients/{client}", USER_KEYS, True
    if user is not None:
        return paths.CONFIG_TYPE_USER, user, USER_KEYS, False
    return paths.CONFIG_TYPE_CLIENT, client, CLIENT_KEYS, False


def _valid_ip_entity(ip: str) -> bool:
    """DynamicConfig.Ip.isValidIpEntity: the default, an address, or a resolvable host."""
    if ip == DEFAULT:
        return True
    try:
        ipaddress.ip_address(ip)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(ip, None)
        return True
    except (OSError, UnicodeError):
        return False


def read_config(store, config_type: str, path: str) -> dict[str, str]:
    return read_znode_config(store, paths.config_entity_path(config_type, path))


def read_znode_config(store, znode: str) -> dict[str, str]:
    """The entity config at ``znode``; empty when there is none."""
    try:
        data, _ = store.get(znode)
    except NoNodeError:
        return {}
    return paths.decode_entity_config(data)


def _apply_ops(props: dict[str, str], ops: Iterable[tuple[str, float | None]],
               keys: dict) -> None:
    for key, value in ops:
        if value is None:
            props.pop(key, None)
            continue
        kind = keys.get(key)
        if kind is None:
            raise _invalid(f"Invalid configuration key {key}")
        if kind == _DOUBLE:
            props[key] = java_double_str(value)
        elif kind in (_LONG, _INT):
            whole = _java_narrow(value + _EPSILON, _LONG_MAX if kind == _LONG else _INT_MAX)
            if abs(float(whole) - value) > _EPSILON:
                raise _invalid(f"Configuration {key} must be a {kind} value")
            props[key] = str(whole)
        else:                                   # IllegalStateException
            raise QuotaError(ErrorCode.UNKNOWN, None)


def _java_narrow(value: float, bound: int) -> int:
    """Scala's Double.toLong / toInt: truncate toward zero, clamp, NaN -> 0."""
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return bound if value > 0 else -bound - 1
    return max(-bound - 1, min(bound, int(value)))


def _validate(config_type: str, path: str, props: dict[str, str]) -> None:
    """DynamicConfig.{User,Client,Ip}.validate: known keys only, each value parses."""
    if config_type == paths.CONFIG_TYPE_USER and path != DEFAULT and "/clients" not in path:
        keys = USER_KEYS
    elif config_type == paths.CONFIG_TYPE_IP:
        keys = IP_KEYS
    else:
        keys = CLIENT_KEYS
    for key, value in props.items():
        kind = keys.get(key)
        if kind is None:
            raise QuotaError(ErrorCode.UNKNOWN, None)
        try:
            if kind in (_LONG, _INT):
                int(value.strip())
            elif kind == _DOUBLE:
                float(value.strip())
        except ValueError:
            raise QuotaError(ErrorCode.UNKNOWN, None) from None


def write_config(store, config_type: str, path: str, props: dict[str, str],
                 user_client: bool) -> None:
    """AdminZkClient.changeEntityConfig: write or clean up the node, then notify."""
    znode = paths.config_entity_path(config_type, path)
    if not props and _clean_quota_nodes(store, config_type, path, user_client):
        pass
    else:
        ordered = {k: props[k] for k in java_properties_order(props)}
        data = paths.encode_entity_config(ordered)
        try:
            store.set(znode, data)
        except NoNodeError:
            store.create(znode, data, makepath=True)
    store.create(paths.CONFIG_CHANGE_SEQ_PATH, paths.encode_config_change(f"{config_type}/{path}"),
                 sequence=True, makepath=True)


def children(store, znode: str) -> list[str]:
    """The children of ``znode``; empty when it does not exist."""
    try:
        return list(store.get_children(znode))
    except NoNodeError:
        return []


def _clean_quota_nodes(store, config_type: str, path: str, user_client: bool) -> bool:
    znode = paths.config_entity_path(config_type, path)
    if children(store, znode):
        return False
    doomed = znode
    if user_client:
        user, client = path.split("/", 1)[0], path.rsplit("/", 1)[1]
        clients = paths.config_entity_path(paths.CONFIG_TYPE_USER, f"{user}/clients")
        if children(store, clients) == [client]:
            doomed = clients
            user_znode = paths.config_entity_path(paths.CONFIG_TYPE_USER, user)
            if (not read_config(store, paths.CONFIG_TYPE_USER, user)
                    and children(store, user_znode) == ["clients"]):
                doomed = user_znode
    try:
        store.delete(doomed, recursive=True)
    except NoNodeError:
        pass
    return True


def _alter_one(store, entity: dict, ops: list, validate_only: bool) -> None:
    config_type, path, keys, user_client = entity_znode(entity)
    props = read_config(store, config_type, path)
    _apply_ops(props, ops, keys)
    if not validate_only:
        _validate(config_type, path, props)
        write_config(store, config_type, path, props, user_client)


def alter(store, entries: list[tuple[dict, list]], validate_only: bool) -> list[tuple[dict, int, str | None]]:
    """Kafka's alterClientQuotas: ``entries`` are (entity, [(key, value or None)])."""
    results: dict[tuple, tuple[dict, int, str | None]] = {}
    for entity, ops in entries:
        try:
            _alter_one(store, entity, ops, validate_only)
            code, message = 0, None
        except QuotaError as err:
            code, message = err.code, err.message
        results[tuple(sorted(entity.items(), key=lambda kv: kv[0]))] = (entity, code, message)
    return list(results.values())
