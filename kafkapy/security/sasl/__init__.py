"""SASL mechanisms on the broker: which are enabled on a listener, and a server for one.

What the connection's SASL gate (``kafkapy/security/gate.py``) and the handlers use:
``enabled_mechanisms(config, listener_name)`` is the list a SaslHandshake answers with;
``server.server_for(mechanism, config, credentials, listener_name, tokens)`` is a fresh ``SaslServer`` for one
authentication (None for a mechanism that is not enabled or that kafkapy lacks, e.g.
GSSAPI).  A server's ``evaluate(token)`` returns the next challenge (``b""`` when there is
none) and raises ``SaslAuthenticationError`` with the message the client is to see
(Kafka's SaslServerAuthenticator: a mechanism's own SaslAuthenticationException message
goes to the client verbatim, any other failure becomes "Authentication failed during
authentication due to invalid credentials with SASL mechanism M").  Once ``complete``,
``principal_name`` is the authenticated user.

``check_listener(config, listener_name)`` is the start-up check of a SASL listener (every
enabled mechanism served by kafkapy and given its JAAS entry, as Kafka requires).
Modules: ``plain``, ``scram`` (servers, on this module's names), ``server`` (the
server for a mechanism), ``client`` (PLAIN/SCRAM clients, the broker's own
inter-broker credentials), ``credentials`` (SCRAM credentials in ZooKeeper, the cache,
AlterUserScramCredentials / DescribeUserScramCredentials), ``jaas`` (JAAS text).

Listener settings are Kafka's: ``listener.name.<listener lower-case>.<key>`` overrides
``<key>`` (``sasl.enabled.mechanisms``); a mechanism's JAAS text is only
``listener.name.<l>.<mechanism lower-case>.sasl.jaas.config`` (Kafka ignores an
unprefixed ``sasl.jaas.config`` on a broker, with a warning).
"""
from __future__ import annotations

from typing import Protocol

from kafkapy.security.sasl.credentials import java_properties_order
from kafkapy.security.sasl.jaas import single_module

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
SCRAM_MECHANISMS = (SCRAM_SHA_256, SCRAM_SHA_512)
SUPPORTED = (PLAIN, *SCRAM_MECHANISMS)


class SaslAuthenticationError(Exception):
    """Authentication failed; ``str(error)`` is what the client is told."""

    @property
    def message(self) -> str:
        return str(self)


class SaslServer(Protocol):
    mechanism: str
    complete: bool
    principal_name: str

    def evaluate(self, token: bytes) -> bytes: ...


def listener_config(config, listener_name: str | None, key: str):
    """``listener.name.<l>.<key>`` (raw text) if set, else the broker's ``key`` (typed)."""
    if listener_name:
        prefixed = f"listener.name.{listener_name.lower()}.{key}"
        originals = config.originals
        if prefixed in originals:
            return originals[prefixed]
    try:
        return config[key]
    except KeyError:
        return config.originals.get(key)


def session_lifetime_ms(config, listener_name: str | None, mechanism: str) -> int:
    """Kafka's connectionsMaxReauthMsByMechanism: >0 is the session lifetime, else none."""
    value = listener_config(config, listener_name,
                            f"{mechanism.lower()}.connections.max.reauth.ms")
    if value is None:
        value = listener_config(config, listener_name, "connections.max.reauth.ms")
    try:
        number = int(value or 0)
    except (TypeError, ValueError):
        return 0
    return max(number, 0)


def enabled_mechanisms(config, listener_name: str | None) -> list[str]:
    """The listener's ``sasl.enabled.mechanisms`` (default GSSAPI), each once, in the order
    Kafka's SaslServerAuthenticator lists them (``new ArrayList<>(new HashSet<>(list))``:
    Java hash order, ties in configured order) -- the SaslHandshake answer."""
    value = listener_config(config, listener_name, "sasl.enabled.mechanisms")
    if value is None:
        return []
    if isinstance(value, str):
        names = [m.strip() for m in value.split(",") if m.strip()]
    else:
        names = [str(m) for m in value]
    return java_properties_order(dict.fromkeys(names))


def jaas_config(config, listener_name: str | None, mechanism: str) -> str | None:
    """The listener's JAAS text for ``mechanism`` (Kafka's JaasContext.loadServerContext)."""
    if not listener_name:
        return None
    key = f"listener.name.{listener_name.lower()}.{mechanism.lower()}.sasl.jaas.config"
    value = config.originals.get(key)
    return None if value is None else str(value)


def check_listener(config, listener_name: str) -> None:
    """Start-up checks for a SASL listener (for the gate's owner to call): every enabled
    mechanism must be one kafkapy serves and have its JAAS entry, as Kafka's
    SaslChannelBuilder requires (JaasContext.loadServerContext's message).  Raises
    ValueError."""
    mechanisms = enabled_mechanisms(config, listener_name)
    if not mechanisms:
        raise ValueError(f"No SASL mechanisms are enabled on listener {listener_name} "
                         "(sasl.enabled.mechanisms)")
    for mechanism in mechanisms:
        if mechanism not in SUPPORTED:
            raise ValueError(f"SASL mechanism {mechanism} (sasl.enabled.mechanisms of listener "
                             f"{listener_name}) is not supported by kafkapy; it supports "
                             f"{', '.join(SUPPORTED)}")
        text = jaas_config(config, listener_name, mechanism)
        if text is None:
            raise ValueError(
                f"Could not find a 'KafkaServer' or '{listener_name.lower()}.KafkaServer' entry "
                "in the JAAS configuration. System property 'java.security.auth.login.config' "
                "is not set")
        single_module(text)             # Kafka's JaasContext.load errors
