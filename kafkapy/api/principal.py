"""Who sent a request: Kafka's ``KafkaPrincipal`` and the connection's ``Session``.

A principal is ``<type>:<name>``; Kafka's only built-in type is ``User``.  A
connection that has not authenticated (PLAINTEXT, or SSL without a client
certificate) is ``User:ANONYMOUS``; SASL sets the authenticated user name; an SSL
client certificate gives its distinguished name (``ssl.principal.mapping.rules``
``DEFAULT``).  The text form is what ACLs and ``super.users`` name.

Invariants: immutable; ``str(principal)`` is ``type:name`` exactly as Kafka prints it;
``Session`` is fixed for a connection once authentication completed (re-authentication
replaces it).
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str
    # SCRAM with a delegation token (Kafka's tokenAuthenticated); not part of equality
    token_authenticated: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> "KafkaPrincipal":
        """``User:alice`` -> KafkaPrincipal("User", "alice"); Kafka's SecurityUtils.parseKafkaPrincipal."""
        kind, sep, name = text.partition(":")
        if not sep or not kind:
            raise ValueError(f"Expected a string in format principalType:principalName but got {text}")
        return cls(kind, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")


@dataclass(frozen=True, slots=True)
class Session:
    """The connection a request came on: its principal, the client's address, and the
    listener (name and security protocol) it arrived through."""
    principal: KafkaPrincipal = ANONYMOUS
    client_address: str = ""
    listener_name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"


PLAINTEXT_SESSION = Session()


def host_address(host: str) -> str:
    """A peer address as Java's ``InetAddress.getHostAddress()`` prints it, the form
    Kafka's ACL hosts are matched against: IPv4 as is, IPv6 uncompressed without leading
    zeros (``::1`` -> ``0:0:0:0:0:0:0:1``), an IPv4-mapped IPv6 address as its IPv4."""
    if ":" not in host:
        return host
    text, sep, scope = host.partition("%")
    try:
        ip = ipaddress.IPv6Address(text)
    except ValueError:
        return host
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    java = ":".join(format(int(group, 16), "x") for group in ip.exploded.split(":"))
    return java + sep + scope
