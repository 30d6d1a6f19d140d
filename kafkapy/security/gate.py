"""The SASL gate of one connection on a SASL_PLAINTEXT / SASL_SSL listener.

Kafka's SaslServerAuthenticator, as a state machine the connection consults for every
frame before it is dispatched:

- ``HANDSHAKE_OR_VERSIONS``: ApiVersions (then ``HANDSHAKE``) or SaslHandshake;
- ``HANDSHAKE``: SaslHandshake only;
- ``AUTHENTICATE``: after a v1 handshake, SaslAuthenticate requests only;
- ``AUTHENTICATE_RAW``: after a v0 handshake, each frame is a raw token (no Kafka request
  header), answered by a size-prefixed raw token;
- ``COMPLETE``: every API is served; when the session has a lifetime
  (``connections.max.reauth.ms``) a request arriving after it expired closes the
  connection, unless it is a SaslHandshake, which begins re-authentication (same
  mechanism, same principal, as Kafka requires);
- ``FAILED``: the error answer is sent, then the connection closes
  (``connection.failed.authentication.delay.ms`` later, reading nothing meanwhile).

Anything else before authentication (another API, ApiVersions out of turn, a frame larger
than ``sasl.server.max.receive.size``, a frame that is no Kafka request) closes the
connection without an answer (IllegalSaslStateException / InvalidReceiveException).

The SaslHandshake / SaslAuthenticate handlers, which drive the mechanism servers
(``kafkapy.security.sasl``), talk to the gate through the ``ConnectionAuth`` object put on
their context only: ``begin(server)``, ``authenticated(principal_name)``, ``failed()``,
``server``.

Invariants: only ``COMPLETE`` lets a request other than the three through; the session's
principal changes only in ``authenticated``; the expiry is measured on the monotonic
clock from the end of the authentication.
"""
from __future__ import annotations

import time

import structlog

from kafkapy.api.principal import USER_TYPE, KafkaPrincipal
from kafkapy.security.sasl import SaslAuthenticationError, session_lifetime_ms

_log = structlog.get_logger("kafkapy.security.gate")

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36

HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS_REQUEST"
HANDSHAKE = "HANDSHAKE_REQUEST"
AUTHENTICATE = "AUTHENTICATE"
AUTHENTICATE_RAW = "AUTHENTICATE_RAW"
COMPLETE = "COMPLETE"
FAILED = "FAILED"
REAUTH_BAD_MECHANISM = "REAUTH_BAD_MECHANISM"

# verdicts of ``SaslGate.admit``
SERVE = 0           # dispatch as usual (no connection_auth)
SERVE_AUTH = 1      # dispatch with ``connection_auth``
RAW_TOKEN = 2       # a raw v0 token: ``raw_token(frame)``
CLOSE = 3           # close the connection, no answer

_DEFAULT_MAX_RECEIVE = 524288


class SaslGate:
    """Per-connection SASL state (see module docstring)."""

    __slots__ = ("state", "server", "mechanism", "principal", "expires_at", "_config",
                 "_listener", "_max_receive", "_reauthenticating", "_on_principal",
                 "close_reason", "failed_close_delay_ms")

    def __init__(self, config, listener_name: str, on_principal) -> None:
        """``config``: the broker's (``sasl.*`` and listener settings)."""
        self.state = HANDSHAKE_OR_VERSIONS
        self.server = None
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal | None = None
        self.expires_at: float | None = None
        self.close_reason = ""
        self._config = config
        self._listener = listener_name
        self._reauthenticating = False
        self._on_principal = on_principal     # the connection's session setter
        self._max_receive = _int_setting(config, "sasl.server.max.receive.size",
                                         _DEFAULT_MAX_RECEIVE)
        self.failed_close_delay_ms = _int_setting(
            config, "connection.failed.authentication.delay.ms", 100)

    @property
    def max_receive(self) -> int:
        return self._max_receive

    def admit(self, api_key: int, frame_size: int, now: float | None = None) -> int:
        """What to do with the next frame (its api key as peeked; -1 if it has none)."""
        state = self.state
        if state == COMPLETE:
            if self.expires_at is None:
                return SERVE
            if api_key == SASL_HANDSHAKE:
                self._begin_reauthentication()
                return SERVE_AUTH
            if (time.monotonic() if now is None else now) >= self.expires_at:
                return self._close("authentication session expired")
            return SERVE
        if state == REAUTH_BAD_MECHANISM:
            return self._close(self.close_reason)
        if frame_size > self._max_receive:
            return self._close("Failing SASL authentication due to invalid receive size")
        if state == AUTHENTICATE_RAW:
            return RAW_TOKEN
        if state == HANDSHAKE_OR_VERSIONS:
            if api_key == API_VERSIONS:
                return SERVE      # HANDSHAKE once answered (``versions_answered``)
            if api_key == SASL_HANDSHAKE:
                return SERVE_AUTH
            return self._close(f"Unexpected Kafka request of type {api_key} during SASL handshake.")
        if state == HANDSHAKE:
            if api_key == SASL_HANDSHAKE:
                return SERVE_AUTH
            return self._close(f"Unexpected Kafka request of type {api_key} during SASL handshake.")
        if state == AUTHENTICATE:
            if api_key == SASL_AUTHENTICATE:
                return SERVE_AUTH
            return self._close(f"Unexpected Kafka request of type {api_key} during SASL authentication.")
        return self._close("SASL authentication failed")

    def versions_answered(self) -> None:
        """An ApiVersions of a supported version was dispatched: only a handshake may
        follow (an unsupported version is answered and the state stays)."""
        if self.state == HANDSHAKE_OR_VERSIONS:
            self.state = HANDSHAKE

    def auth_for(self, api_version: int) -> "ConnectionAuth":
        return ConnectionAuth(self, api_version)

    def raw_token(self, token: bytes) -> bytes | None:
        """A v0 (unframed) token: the size-prefixed answer, or None to close."""
        server = self.server
        try:
            answer = server.evaluate(token)
        except SaslAuthenticationError as err:
            self.state = FAILED
            self.close_reason = f"SASL authentication failed: {err}"
            return None
        if server.complete:
            if self._complete(server.principal_name,
                              getattr(server, "token_authenticated", False),
                              getattr(server, "credential_left_ms", None)) is None:
                return None
        answer = answer or b""
        return len(answer).to_bytes(4, "big") + answer

    # -- called through ConnectionAuth -----------------------------------------------
    def _begin(self, server, version: int) -> None:
        if self._reauthenticating and server.mechanism != self.mechanism:
            # Kafka answers the handshake and refuses the next token (REAUTH_BAD_MECHANISM)
            self.state = REAUTH_BAD_MECHANISM
            self.close_reason = (f"SASL mechanism '{server.mechanism}' requested by client is not "
                                 f"supported for re-authentication of mechanism '{self.mechanism}'")
            return
        self.server = server
        self.mechanism = server.mechanism
        self.state = AUTHENTICATE if version >= 1 else AUTHENTICATE_RAW

    def _complete(self, principal_name: str, token_authenticated: bool = False,
                  credential_left_ms: int | None = None) -> int | None:
        """The session's lifetime in ms (0: none), or None when a re-authentication names
        another principal.  The lifetime is the listener's ``connections.max.reauth.ms``
        for the mechanism, bounded by ``credential_left_ms`` (the time left until a delegation
        token expires, by the broker's clock) as Kafka's credential expiration bounds it."""
        principal = KafkaPrincipal(USER_TYPE, principal_name, token_authenticated)
        if self._reauthenticating and principal != self.principal:
            prev = self.principal
            self._fail(f"Cannot change principals during re-authentication from "
                       f"{prev.principal_type}.{prev.name}: {principal.principal_type}.{principal.name}")
            return None
        lifetime = session_lifetime_ms(self._config, self._listener, self.mechanism or "")
        if credential_left_ms is not None:
            left = credential_left_ms
            lifetime = left if lifetime <= 0 else min(lifetime, left)
        bounded = lifetime > 0 or credential_left_ms is not None
        self.expires_at = time.monotonic() + lifetime / 1000.0 if bounded else None
        self.principal = principal
        self.state = COMPLETE
        self.server = None
        self._reauthenticating = False
        self._on_principal(principal)
        return lifetime

    def _fail(self, reason: str = "SASL authentication failed") -> None:
        self.state = FAILED
        self.close_reason = reason

    def _begin_reauthentication(self) -> None:
        self._reauthenticating = True
        self.state = HANDSHAKE

    def _close(self, reason: str) -> int:
        self.state = FAILED
        self.close_reason = reason
        return CLOSE


class ConnectionAuth:
    """What SaslHandshake / SaslAuthenticate handlers get as ``ctx.connection_auth``."""

    __slots__ = ("_gate", "_version")

    def __init__(self, gate: SaslGate, version: int) -> None:
        self._gate = gate
        self._version = version

    @property
    def server(self):
        return self._gate.server

    @property
    def reauthenticating(self) -> bool:
        return self._gate._reauthenticating

    def begin(self, mechanism_server) -> None:
        self._gate._begin(mechanism_server, self._version)

    def authenticated(self, principal_name: str, token_authenticated: bool = False,
                      credential_left_ms: int | None = None) -> int:
        """The session's lifetime in ms (0: none) to answer.  Raises
        ``SaslAuthenticationError`` (the connection then closes) when a re-authentication
        names another principal."""
        lifetime = self._gate._complete(principal_name, token_authenticated, credential_left_ms)
        if lifetime is None:
            raise SaslAuthenticationError(self._gate.close_reason)
        return lifetime

    def failed(self) -> None:
        if self._gate.state != FAILED:
            self._gate._fail()


def _int_setting(config, key: str, default: int) -> int:
    try:
        value = config[key]
    except KeyError:
        value = config.originals.get(key)
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default
