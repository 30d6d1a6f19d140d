"""DescribeClientQuotas (key 48, v0-1): the client quotas stored in ZooKeeper (written by
AlterClientQuotas, ``kafkapy.config.client_quotas``; enforced by ``kafkapy.quota``).

Answered as Kafka's ZooKeeper-mode broker does
(ZkAdminManager.describeClientQuotas): the quota keys (``producer_byte_rate``,
``consumer_byte_rate``, ``request_percentage``, ``controller_mutation_rate``; for ips
``connection_creation_rate``) of ``/config/users/<u>``, ``/config/clients/<c>``,
``/config/users/<u>/clients/<c>`` and ``/config/ips/<ip>`` matching the filter.  Names
are Kafka's Sanitizer form in the paths, ``<default>`` the default entity (a null name).
Filter errors are Kafka's: INVALID_REQUEST for an empty or duplicated entity type or an
ip component mixed with user/client-id ones, UNSUPPORTED_VERSION for another entity type,
UNKNOWN_SERVER_ERROR (no message) for an unknown match type or an exact match of null.
"""
from __future__ import annotations

from kafkapy.config.client_quotas import (CLIENT_KEYS, DEFAULT, IP_KEYS, children,
                                         read_znode_config)
from kafkapy.security import authz
from kafkapy.metadata import paths
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security.sasl.credentials import desanitize, java_properties_order, sanitize

API_KEY = 48
MIN_VERSION = 0
MAX_VERSION = 1

_USER, _CLIENT, _IP = "user", "client-id", "ip"
_QUOTA_KEYS = frozenset(CLIENT_KEYS)
_IP_KEYS = frozenset(IP_KEYS)
_UNSET = object()       # Scala's None; a component's match may be Some(null) (the default)


class _Refused(Exception):
    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def handle(ctx, request):
    if not authz.cluster(ctx, authz.DESCRIBE_CONFIGS):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            error_message="Cluster authorization failed.", entries=None)
    try:
        entries = _describe(ctx.services.store, request.components, request.strict)
    except _Refused as err:
        return ctx.response(throttle_time_ms=0, error_code=err.code, error_message=err.message,
                            entries=None)
    return ctx.response(throttle_time_ms=0, error_code=0, error_message="", entries=[
        ([(t, n) for t, n in entity], [(k, v) for k, v in values]) for entity, values in entries])


def _component_match(component):
    """Kafka's ClientQuotaFilterComponent match: a name, None (default) or _UNSET (any)."""
    if component.match_type == 0:
        if component.match is None:         # Optional.of(null): a NullPointerException
            raise _Refused(int(ErrorCode.UNKNOWN), None)
        return component.match
    if component.match_type == 1:
        return None
    if component.match_type == 2:
        return _UNSET
    raise _Refused(int(ErrorCode.UNKNOWN), None)


def _describe(store, components, strict: bool) -> list:
    found: dict[str, object] = {}
    for component in components:
        match = _component_match(component)
        kind = component.entity_type
        if kind in (_USER, _CLIENT, _IP):
            if kind in found:
                word = {"user": "user", "client-id": "client", "ip": "ip"}[kind]
                raise _Refused(int(ErrorCode.INVALID_REQUEST),
                               f"Duplicate {word} filter component entity type")
            found[kind] = match
        elif kind == "":
            raise _Refused(int(ErrorCode.INVALID_REQUEST),
                           "Unexpected empty filter component entity type")
        else:
            raise _Refused(int(ErrorCode.UNSUPPORTED_VERSION),
                           f"Custom entity type '{kind}' not supported")
    if (_USER in found or _CLIENT in found) and _IP in found:
        raise _Refused(int(ErrorCode.INVALID_REQUEST),
                       "Invalid entity filter component combination, IP filter component "
                       "should not be used with user or clientId filter component.")
    entries: list = []
    if _IP not in found:
        entries += _user_client_quotas(store, found, strict)
    if _USER not in found and _CLIENT not in found:
        entries += _ip_quotas(store, found, strict)
    return entries


def _sanitized(name) -> str:
    return DEFAULT if name is None else sanitize(name)


def _desanitized(name: str):
    return None if name == DEFAULT else desanitize(name)


def _user_client_quotas(store, found: dict, strict: bool) -> list:
    users_root = paths.config_entity_type_path(paths.CONFIG_TYPE_USER)
    clients_root = paths.config_entity_type_path(paths.CONFIG_TYPE_CLIENT)
    user, client = found.get(_USER, _UNSET), found.get(_CLIENT, _UNSET)
    exact_user = _USER in found and user is not _UNSET
    exact_client = _CLIENT in found and client is not _UNSET
    exclude_user = strict and _USER not in found
    exclude_client = strict and _CLIENT not in found
    candidates: list[tuple[object, object, dict]] = []       # (user, client, config)
    if exact_user and exclude_client:
        candidates.append((user, _UNSET,
                           read_znode_config(store, f"{users_root}/{_sanitized(user)}")))
    elif not exclude_user and not exact_client:
        candidates += [(_desanitized(n), _UNSET, read_znode_config(store, f"{users_root}/{n}"))
                       for n in children(store, users_root)]
    if exclude_user and exact_client:
        candidates.append((_UNSET, client,
                           read_znode_config(store, f"{clients_root}/{_sanitized(client)}")))
    elif not exact_user and not exclude_client:
        candidates += [(_UNSET, _desanitized(n), read_znode_config(store, f"{clients_root}/{n}"))
                       for n in children(store, clients_root)]
    if exact_user and exact_client:
        candidates.append((user, client, read_znode_config(
            store, f"{users_root}/{_sanitized(user)}/clients/{_sanitized(client)}")))
    elif not exclude_user and not exclude_client:
        for u in children(store, users_root):
            for c in children(store, f"{users_root}/{u}/clients"):
                candidates.append((_desanitized(u), _desanitized(c),
                                   read_znode_config(store, f"{users_root}/{u}/clients/{c}")))
    out = []
    for u, c, config in candidates:
        quotas = {k: v for k, v in config.items() if k in _QUOTA_KEYS}
        if quotas and _matches(found, _USER, u, strict) and _matches(found, _CLIENT, c, strict):
            entity = {}
            if u is not _UNSET:
                entity[_USER] = u
            if c is not _UNSET:
                entity[_CLIENT] = c
            out.append(_entry(entity, quotas))
    return out


def _matches(found: dict, kind: str, name, strict: bool) -> bool:
    if kind in found:
        wanted = found[kind]
        return name is not _UNSET if wanted is _UNSET else name is not _UNSET and name == wanted
    return name is _UNSET or not strict


def _ip_quotas(store, found: dict, strict: bool) -> list:
    root = paths.config_entity_type_path(paths.CONFIG_TYPE_IP)
    ip = found.get(_IP, _UNSET)
    if _IP in found and ip is not _UNSET:
        candidates = [(ip, read_znode_config(store, f"{root}/{_sanitized(ip)}"))]
    elif (_IP in found and ip is _UNSET) or (_IP not in found and not strict):
        candidates = [(_desanitized(n), read_znode_config(store, f"{root}/{n}")) for n in children(store, root)]
    else:
        candidates = []
    return [_entry({_IP: name}, quotas) for name, config in candidates
            if (quotas := {k: v for k, v in config.items() if k in _IP_KEYS})]


def _entry(entity: dict, quotas: dict[str, str]) -> tuple[list, list]:
    values = []
    for key in java_properties_order(quotas):
        try:
            values.append((key, float(quotas[key])))
        except ValueError:
            raise _Refused(int(ErrorCode.UNKNOWN), None) from None
    return [(k, entity[k]) for k in java_properties_order(entity)], values
