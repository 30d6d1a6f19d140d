"""The SASL server for one authentication: PLAIN or SCRAM, when the listener enables it.

``server_for(mechanism, config, credentials, listener_name, tokens)`` is what SaslHandshake begins
an exchange with: a fresh server (``plain.PlainServer`` over the listener's JAAS users,
``scram.ScramServer`` over the broker's ``CredentialCache`` and, for ``tokenauth``, its
``DelegationTokenManager``), or None for a mechanism that
is not enabled on the listener or that kafkapy lacks (e.g. GSSAPI).  It stands above the
mechanisms, which know only the package's own names (``kafkapy.security.sasl``).
"""
from __future__ import annotations

from kafkapy.security.sasl import (PLAIN, SCRAM_MECHANISMS, SaslServer, enabled_mechanisms,
                                   jaas_config)
from kafkapy.security.sasl.credentials import CredentialCache
from kafkapy.security.sasl.plain import PlainServer, users_from_jaas
from kafkapy.security.sasl.scram import ScramServer


def server_for(mechanism: str, config, credentials: CredentialCache,
               listener_name: str | None, tokens=None) -> SaslServer | None:
    """A new server for one authentication with ``mechanism`` on the listener, or None
    (``config``: the broker's; ``credentials``: its SCRAM credential cache; ``tokens``: its
    ``DelegationTokenManager``, for SCRAM's ``tokenauth``)."""
    if mechanism not in enabled_mechanisms(config, listener_name):
        return None
    if mechanism == PLAIN:
        return PlainServer(users_from_jaas(jaas_config(config, listener_name, PLAIN)))
    if mechanism in SCRAM_MECHANISMS:
        token_lookup = (None if tokens is None
                        else lambda token_id: tokens.credential(mechanism, token_id))
        return ScramServer(mechanism, lambda user: credentials.get(mechanism, user),
                           token_lookup=token_lookup)
    return None
