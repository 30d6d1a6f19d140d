"""SASL/PLAIN on the broker (RFC 4616), as Kafka's PlainSaslServer with its
PlainServerCallbackHandler.

The one client message is ``[authzid] NUL authcid NUL passwd`` (UTF-8).  Users and
passwords come from the listener's JAAS config, ``user_<name>="<password>"`` options of
``org.apache.kafka.common.security.plain.PlainLoginModule``.  Failures raise
``SaslAuthenticationError`` with Kafka's messages, which Kafka sends to the client as
they are.  Passwords are compared in constant time.
"""
from __future__ import annotations

import hmac

from kafkapy.security.sasl import PLAIN, SaslAuthenticationError
from kafkapy.security.sasl.jaas import PLAIN_LOGIN_MODULE, parse

_USER_PREFIX = "user_"


def users_from_jaas(text: str | None) -> dict[str, str]:
    """``user_<name>`` options of the PlainLoginModule entries (later entries win)."""
    if not text:
        return {}
    try:
        entries = parse(text)
    except ValueError:
        return {}
    users: dict[str, str] = {}
    for module, _flag, options in entries:
        if module != PLAIN_LOGIN_MODULE:
            continue
        for key, value in options.items():
            if key.startswith(_USER_PREFIX):
                users.setdefault(key[len(_USER_PREFIX):], value)
    return users


class PlainServer:
    mechanism = PLAIN

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self.complete = False
        self.principal_name = ""

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationError("Authentication exchange has already completed")
        text = bytes(token).decode("utf-8", errors="replace")
        authzid, username, password = _tokens(text)
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(password.encode("utf-8"),
                                                        expected.encode("utf-8")):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an "
                                          "authorization id that is different from username")
        self.principal_name = username
        self.complete = True
        return b""


def _tokens(text: str) -> tuple[str, str, str]:
    """Kafka's extractTokens: split at NUL at most three times; exactly 3 parts expected."""
    parts = text.split("\0", 3)
    if len(parts) != 3:
        # Kafka stops after four pieces: "a\0b\0c\0d\0e" counts as 4.
        raise SaslAuthenticationError(
            f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}")
    return parts[0], parts[1], parts[2]
