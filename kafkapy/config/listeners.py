"""Listener URIs and the listener -> security protocol map, parsed like
Kafka's EndPoint.createEndPoint and CoreUtils.parseCsvMap.

Invariants: listener names are upper-cased (ListenerName.normalised); an
empty host means "every interface" and is kept as ""; IPv6 literals lose their
brackets; ports are 0..65535 (0 = ephemeral).
"""
from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple

from kafkapy.config.errors import ConfigError

__all__ = ["Endpoint", "parse_listeners", "parse_protocol_map"]

_URI_RE = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_CSV = re.compile(r"\s*,\s*")
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class Endpoint(NamedTuple):
    name: str
    host: str
    port: int


def parse_protocol_map(key: str, text: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` -> {NAME: PROTOCOL}."""
    result: dict[str, str] = {}
    for item in _csv(text):
        name, sep, proto = (p.strip() for p in item.partition(":"))
        if not sep or not name or proto.upper() not in _PROTOCOLS:
            raise ConfigError.invalid(key, text, f"Error parsing configuration property '{key}': bad entry {item!r}")
        result[name.upper()] = proto.upper()
    return result


def parse_listeners(key: str, text: str | None, protocols: dict[str, str]) -> list[Endpoint]:
    """Parse a listeners value; every listener needs a security protocol."""
    endpoints = [_parse_one(key, item, protocols) for item in _csv(text or "")]
    names = [e.name for e in endpoints]
    if len(set(names)) != len(names):
        raise ConfigError(f"Each listener must have a different name, {key}: {text}", key=key, value=text)
    return endpoints


def check_distinct_ports(key: str, text: str, endpoints: list[Endpoint]) -> None:
    """Listeners must use different ports (0 excepted, IPv4/IPv6 pairs allowed)."""
    seen: dict[int, list[Endpoint]] = {}
    for ep in endpoints:
        if ep.port == 0:
            continue
        for other in seen.get(ep.port, []):
            if not _different_ip_families(ep.host, other.host):
                raise ConfigError(f"Each listener must have a different port, {key}: {text}", key=key, value=text)
        seen.setdefault(ep.port, []).append(ep)


def _parse_one(key: str, item: str, protocols: dict[str, str]) -> Endpoint:
    m = _URI_RE.fullmatch(item)
    if not m:
        raise ConfigError.invalid(key, item, f"Unable to parse {item} to a broker endpoint")
    name, host, port = m.group(1).upper(), m.group(2), int(m.group(3))
    if not 0 <= port <= 65535:
        raise ConfigError.invalid(key, item, f"port {port} out of range")
    if name not in protocols:
        raise ConfigError.invalid(key, item, f"No security protocol defined for listener {m.group(1)}")
    return Endpoint(name, host, port)


def _different_ip_families(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_address(a).version != ipaddress.ip_address(b).version
    except ValueError:
        return False


def _csv(text: str) -> list[str]:
    return [s for s in _CSV.split(text.strip()) if s]
