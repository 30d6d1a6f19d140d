"""SASL mechanisms on the client side: what a broker sends when it connects to another
broker (inter-broker listener: ``kafkapy/network/client.py``'s SASL login with a
``ClientSecurity``), and what tests use.

``client_for(mechanism, username, password)`` gives a client with ``first()`` (the
initial token), ``evaluate(challenge)`` (the next token; ``b""`` when the exchange needs
no reply) and ``complete``.  ``ScramClient`` verifies the server's signature and raises
``SaslAuthenticationError`` when it is wrong (a server that does not know the password).
``broker_credentials(config, listener_name, mechanism)`` reads the broker's own user and
password from ``listener.name.<l>.<mechanism>.sasl.jaas.config`` (``username`` /
``password`` options, as Kafka's PlainLoginModule / ScramLoginModule take them).
"""
from __future__ import annotations

import base64
import hashlib
import hmac

from kafkapy.security.sasl import PLAIN, SCRAM_MECHANISMS, SaslAuthenticationError, jaas_config
from kafkapy.security.sasl.credentials import (client_key, hash_name, random_string,
                                               salted_password, server_key)
from kafkapy.security.sasl.jaas import single_module
from kafkapy.security.sasl.scram import (SERVER_FINAL, SERVER_FIRST, b64, client_first_bare,
                                         hmac_digest, sasl_name, xor)


class PlainClient:
    mechanism = PLAIN

    def __init__(self, username: str, password: str, authzid: str = "") -> None:
        self._token = f"{authzid}\0{username}\0{password}".encode("utf-8")
        self.complete = False

    def first(self) -> bytes:
        return self._token

    def evaluate(self, challenge: bytes) -> bytes:
        self.complete = True
        return b""


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str,
                 extensions: dict[str, str] | None = None, nonce: str | None = None) -> None:
        if mechanism not in SCRAM_MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self._password = password
        self._nonce = nonce or random_string()
        self._bare = client_first_bare(sasl_name(username), self._nonce, extensions or {})
        self._server_signature = b""
        self.complete = False

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode("utf-8")

    def evaluate(self, challenge: bytes) -> bytes:
        if self._server_signature:
            return self._verify(bytes(challenge))
        message = bytes(challenge).decode("utf-8", errors="replace")
        match = SERVER_FIRST.fullmatch(message)
        if match is None:
            raise SaslAuthenticationError(f"Invalid SCRAM server first message format: {message}")
        nonce, iterations = match.group("nonce"), int(match.group("iterations"))
        if not nonce.startswith(self._nonce) or iterations <= 0:
            raise SaslAuthenticationError("Invalid server nonce: does not start with client nonce")
        salt = base64.b64decode(match.group("salt"))
        salted = salted_password(self.mechanism, self._password, salt, iterations)
        without_proof = f"c=biws,r={nonce}"
        auth = f"{self._bare},{message},{without_proof}".encode("utf-8")
        key = client_key(self.mechanism, salted)
        stored = hashlib.new(hash_name(self.mechanism), key).digest()
        proof = xor(key, hmac_digest(self.mechanism, stored, auth))
        self._server_signature = hmac_digest(self.mechanism, server_key(self.mechanism, salted), auth)
        return f"{without_proof},p={b64(proof)}".encode("ascii")

    def _verify(self, challenge: bytes) -> bytes:
        message = challenge.decode("utf-8", errors="replace")
        match = SERVER_FINAL.fullmatch(message)
        if match is None:
            raise SaslAuthenticationError(f"Invalid SCRAM server final message format: {message}")
        if match.group("error"):
            raise SaslAuthenticationError(f"Sasl authentication using {self.mechanism} failed "
                                          f"with error: {match.group('error')}")
        if not hmac.compare_digest(base64.b64decode(match.group("signature")),
                                   self._server_signature):
            raise SaslAuthenticationError("Invalid server signature in server final message")
        self.complete = True
        return b""


def client_for(mechanism: str, username: str, password: str):
    if mechanism == PLAIN:
        return PlainClient(username, password)
    if mechanism in SCRAM_MECHANISMS:
        return ScramClient(mechanism, username, password)
    raise ValueError(f"kafkapy has no SASL client for mechanism {mechanism}")


def broker_credentials(config, listener_name: str, mechanism: str) -> tuple[str, str]:
    """The broker's own ``username``/``password`` for ``mechanism`` on the listener."""
    text = jaas_config(config, listener_name, mechanism)
    if text is None:
        raise ValueError(f"no listener.name.{listener_name.lower()}.{mechanism.lower()}"
                         ".sasl.jaas.config for the inter-broker SASL client")
    _module, _flag, options = single_module(text)
    if "username" not in options or "password" not in options:
        raise ValueError(f"listener.name.{listener_name.lower()}.{mechanism.lower()}"
                         ".sasl.jaas.config has no username/password")
    return options["username"], options["password"]
