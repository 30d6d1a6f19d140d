"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 on the broker (RFC 5802, RFC 7677), as Kafka's
ScramSaslServer with ScramMessages' grammar.

Exchange: client-first ``n,[a=authzid],n=<saslname>,r=<nonce>[,ext=value...]`` ->
server-first ``r=<client nonce><server nonce>,s=<b64 salt>,i=<iterations>`` ->
client-final ``c=<b64 channel binding>,r=<nonce>,p=<b64 proof>`` -> server-final
``v=<b64 server signature>``.  Only the gs2 header ``n`` (no channel binding) is
accepted, as Kafka's pattern has it.  The server nonce is Kafka's secureRandomString.
Extensions are parsed; ``tokenauth=true`` makes the name a delegation token id, checked
against ``token_lookup(token_id)`` -> (credential, owner name, ms left until the token
expires) or None (Kafka's DelegationTokenCredentialCallback): the principal is then the
owner, ``token_authenticated`` is set and ``credential_left_ms`` is the time left.  The AuthMessage is built from the parsed
messages (Kafka's clientFirstMessageBare / clientFinalMessageWithoutProof).

Errors: Kafka sends its SaslAuthenticationException messages to the client verbatim and
replaces every other failure (SaslException: unknown user, bad proof, bad message format)
by "Authentication failed during authentication due to invalid credentials with SASL
mechanism <M>"; ``SaslAuthenticationError`` carries exactly the text the client gets.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from typing import Callable

from kafkapy.security.sasl import SaslAuthenticationError
from kafkapy.security.sasl.credentials import (MIN_ITERATIONS, ScramCredential, hash_name,
                                               random_string)

# ScramMessages' character classes (Java's [\x01-\x7F&&[^=,]] written out).
_VALUE_SAFE = r"[\x01-\x2B\x2D-\x3C\x3E-\x7F]+"
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_B64C = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64C}{{4}})*(?:{_B64C}{{3}}=|{_B64C}{{2}}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_RESERVED}n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})")
SERVER_FIRST = re.compile(
    rf"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+)"
    rf"{_EXTENSIONS}")
CLIENT_FINAL = re.compile(
    rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})")
SERVER_FINAL = re.compile(
    rf"(?:e=(?P<error>{_VALUE_SAFE}))|(?:v=(?P<signature>{_BASE64})){_EXTENSIONS}")

TOKEN_AUTH = "tokenauth"


class _Failure(Exception):
    """Kafka's SaslException: the client only gets the generic message."""


def sasl_name(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def username(saslname: str) -> str:
    """Kafka's ScramFormatter.username; a stray ``=`` is an invalid name."""
    name = saslname.replace("=2C", ",")
    if "=" in name.replace("=3D", ""):
        raise ValueError(f"Invalid username: {saslname}")
    return name.replace("=3D", "=")


def parse_extensions(text: str) -> dict[str, str]:
    """Kafka's Utils.parseMap(text, "=", ","): ``k=v`` pairs (split at the first ``=``)."""
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item:
            continue
        key, _, value = item.partition("=")
        out[key] = value
    return out


def client_first_bare(saslname: str, nonce: str, extensions: dict[str, str]) -> str:
    ext = ",".join(f"{k}={v}" for k, v in extensions.items())
    return f"n={saslname},r={nonce}" + (f",{ext}" if ext else "")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hmac_digest(mechanism: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name(mechanism)).digest()


def xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


class ScramServer:
    """One SCRAM authentication; ``lookup(user)`` gives the user's credential or None."""

    def __init__(self, mechanism: str, lookup: Callable[[str], ScramCredential | None],
                 nonce: Callable[[], str] = random_string,
                 token_lookup: Callable[[str], tuple | None] | None = None) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        self.token_authenticated = False
        self.credential_left_ms: int | None = None
        self._nonce = nonce
        self._state = "first"
        self.complete = False
        self.principal_name = ""
        self.extensions: dict[str, str] = {}
        self._credential: ScramCredential | None = None
        self._client_bare = ""
        self._server_first = ""
        self._full_nonce = ""

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._state == "first":
                return self._first(bytes(token))
            if self._state == "final":
                return self._final(bytes(token))
            raise SaslAuthenticationError(f"Unexpected challenge in Sasl server state "
                                          f"{'COMPLETE' if self.complete else 'FAILED'}")
        except _Failure:
            self._fail()
            raise SaslAuthenticationError(
                "Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self.mechanism}") from None
        except SaslAuthenticationError:
            self._fail()
            raise

    def _fail(self) -> None:
        self._state = "failed"
        self._credential = None

    def _first(self, token: bytes) -> bytes:
        message = token.decode("utf-8", errors="replace")
        match = CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise _Failure(f"Invalid SCRAM client first message format: {message}")
        ext_text = match.group("extensions")
        self.extensions = parse_extensions(ext_text[1:]) if ext_text else {}
        try:
            user = username(match.group("saslname"))
        except ValueError:
            raise _Failure("Authentication failed: Credentials could not be obtained") from None
        principal = user
        if self.extensions.get(TOKEN_AUTH, "").lower() == "true":
            token = self._token_lookup(user) if self._token_lookup is not None else None
            if token is None:
                raise _Failure(f"Token Authentication failed: Invalid tokenId : {user}")
            credential, principal, self.credential_left_ms = token
            self.token_authenticated = True
        else:
            credential = self._lookup(user)
        if credential is None:
            raise _Failure("Authentication failed: Invalid user credentials")
        authzid = match.group("authzid") or ""
        if authzid and authzid != user:
            raise SaslAuthenticationError("Authentication failed: Client requested an "
                                          "authorization id that is different from username")
        if credential.iterations < MIN_ITERATIONS:
            raise _Failure(f"Iterations {credential.iterations} is less than the minimum "
                           f"{MIN_ITERATIONS} for {self.mechanism}")
        self._credential = credential
        self.principal_name = principal
        self._client_bare = client_first_bare(match.group("saslname"), match.group("nonce"),
                                              self.extensions)
        self._full_nonce = match.group("nonce") + self._nonce()
        self._server_first = (f"r={self._full_nonce},s={b64(credential.salt)},"
                              f"i={credential.iterations}")
        self._state = "final"
        return self._server_first.encode("utf-8")

    def _final(self, token: bytes) -> bytes:
        message = token.decode("utf-8", errors="replace")
        match = CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise _Failure(f"Invalid SCRAM client final message format: {message}")
        nonce = match.group("nonce")
        if not nonce.endswith(self._full_nonce):
            raise _Failure("Invalid client nonce in the final client message.")
        try:
            channel = base64.b64decode(match.group("channel"))
            proof = base64.b64decode(match.group("proof"))
        except binascii.Error:
            raise _Failure("Authentication failed: Invalid client final message") from None
        auth_message = ",".join((self._client_bare, self._server_first,
                                 f"c={b64(channel)},r={nonce}")).encode("utf-8")
        credential = self._credential
        assert credential is not None
        signature = hmac_digest(self.mechanism, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise _Failure("Invalid client credentials")
        computed = hashlib.new(hash_name(self.mechanism), xor(signature, proof)).digest()
        if not hmac.compare_digest(computed, credential.stored_key):
            raise _Failure("Invalid client credentials")
        server_signature = hmac_digest(self.mechanism, credential.server_key, auth_message)
        self._credential = None
        self._state = "complete"
        self.complete = True
        return f"v={b64(server_signature)}".encode("ascii")
