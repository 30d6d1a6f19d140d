"""What a listener and the inter-broker client need from the configuration, built once at
start-up (Kafka's ChannelBuilders): the listener's TLS context and SASL checks, and the
broker's own TLS/SASL settings for reaching other brokers (``ClientSecurity``, which
``kafkapy.network.client`` uses).

Inter-broker: the listener is ``inter.broker.listener.name`` (or the one named like
``security.inter.broker.protocol``); on SSL/SASL_SSL the client context is built from that
listener's ``ssl.*`` settings; on SASL the mechanism is
``sasl.mechanism.inter.broker.protocol`` and the user/password come from
``listener.name.<l>.<mechanism>.sasl.jaas.config`` (``username``/``password``).

Errors are ValueError with a message naming listener and key (the broker reports it as its
start-up failure).
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkapy.security.sasl import check_listener
from kafkapy.security.sasl.client import broker_credentials
from kafkapy.security.ssl import client_context, listener_value, server_context

SSL_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ClientSecurity:
    """How this broker reaches the others (its inter-broker listener's protocol); what
    ``kafkapy.network.client.BrokerConnection`` connects with."""
    protocol: str = "PLAINTEXT"
    ssl_context: object = None
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = None


def listener_ssl_context(config, listener_name: str, protocol: str):
    """The server SSLContext of a listener (None when it has no TLS); SASL entries checked."""
    if protocol in SASL_PROTOCOLS:
        check_listener(config, listener_name)
    if protocol not in SSL_PROTOCOLS:
        return None
    _check_principal_mapping(config, listener_name)
    return server_context(config, listener_name, protocol)


def inter_broker_security(config) -> ClientSecurity | None:
    name = config.inter_broker_listener_name
    protocol = config.listener_security_protocol_map.get(name, "PLAINTEXT")
    if protocol == "PLAINTEXT":
        return None
    ssl_context = None
    if protocol in SSL_PROTOCOLS:
        ssl_context = client_context(config, name)
    mechanism = username = password = None
    if protocol in SASL_PROTOCOLS:
        mechanism = str(config["sasl.mechanism.inter.broker.protocol"])
        username, password = broker_credentials(config, name, mechanism)
    return ClientSecurity(protocol=protocol, ssl_context=ssl_context, sasl_mechanism=mechanism,
                          username=username, password=password)


def _check_principal_mapping(config, listener_name: str) -> None:
    """Only Kafka's DEFAULT mapping (the certificate's whole DN) and the default principal
    builder are served: another setting would name principals the ACLs do not expect."""
    rules = (listener_value(config, listener_name, "ssl.principal.mapping.rules") or "DEFAULT").strip()
    if rules != "DEFAULT":
        raise ValueError(f"ssl.principal.mapping.rules={rules} (listener {listener_name}): kafkapy "
                         "maps SSL principals with DEFAULT only")
    builder = config.originals.get("principal.builder.class")
    if builder and str(builder).strip() != _DEFAULT_BUILDER:
        raise ValueError(f"principal.builder.class={builder}: kafkapy has only Kafka's "
                         f"{_DEFAULT_BUILDER}")


_DEFAULT_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
