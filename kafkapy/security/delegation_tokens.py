"""Delegation tokens in ZooKeeper mode: Kafka's DelegationTokenManagerZk and token cache.

A token is ``TokenInformation`` (id, owner, requester, renewers, issue / max / expiry
timestamps, epoch ms) plus its HMAC: HmacSHA512 keyed by the UTF-8 bytes of
``delegation.token.secret.key`` (alias ``delegation.token.master.key``) over the UTF-8
token id.  The id is a random UUID in unpadded URL-safe base64 (22 characters).  Without a
secret key tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED).

ZooKeeper (as Kafka writes it):

- ``/delegation_token/tokens/<id>``: ``{"version":3,"owner":"<sanitized User:alice>",
  "tokenRequester":..., "renewers":[...], "issueTimestamp":n, "maxTimestamp":n,
  "expiryTimestamp":n, "tokenId":"<id>"}``; principals are ``type:name`` in Kafka's
  Sanitizer form; keys in the order a Scala immutable HashMap iterates them; the HMAC is
  never stored (each broker derives it from the shared secret).
- ``/delegation_token/token_changes/token_change_<10 digits>``: the UTF-8 token id, written
  after each create, renew, expire or removal; every broker re-reads that token (gone: it
  leaves the cache).

The broker that receives a request changes the znode (ZooKeeper mode forwards nothing).
Each broker's cache maps id -> token, base64 HMAC -> id, and id -> SCRAM credentials
(SCRAM-SHA-256 and -512, password = base64 HMAC, 4096 iterations, a random salt of its
own), which is what ``tokenauth=true`` SCRAM authentication checks.  ``expire_tokens``
(every ``delegation.token.expiry.check.interval.ms``) removes every token past its expiry
or max timestamp.

Invariants: cache changes run on the event loop; the cache holds exactly the tokens read
from ZooKeeper or written by this broker, each with the HMAC of this broker's secret.
"""
from __future__ import annotations

import base64
import hashlib
import hmac as _hmac
import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Callable

import structlog
from kazoo.exceptions import NodeExistsError, NoNodeError

from kafkapy.api.principal import KafkaPrincipal
from kafkapy.metadata.change_notifications import ChangeNotificationListener
from kafkapy.metadata.paths import immutable_map_order
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security.sasl import SCRAM_MECHANISMS
from kafkapy.security.sasl.credentials import (MIN_ITERATIONS, ScramCredential, desanitize,
                                               generate, sanitize)

_log = structlog.get_logger("kafkapy.delegation_tokens")

ROOT = "/delegation_token"
TOKENS = f"{ROOT}/tokens"
CHANGES = f"{ROOT}/token_changes"
CHANGE_PREFIX = "token_change_"
VERSION = 3
ERROR_TIMESTAMP = -1
DEFAULT_MAX_LIFETIME_MS = 7 * 24 * 3600 * 1000
DEFAULT_EXPIRY_TIME_MS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class TokenInformation:
    token_id: str
    owner: KafkaPrincipal
    requester: KafkaPrincipal
    renewers: tuple[KafkaPrincipal, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int

    def owner_or_renewer(self, principal: KafkaPrincipal) -> bool:
        """Kafka's ownerOrRenewer: the owner, the requester or a renewer."""
        return principal in (self.owner, self.requester) or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        return self.max_timestamp < now_ms or self.expiry_timestamp < now_ms


@dataclass(frozen=True, slots=True)
class CreateResult:
    error: int
    owner: KafkaPrincipal
    requester: KafkaPrincipal
    issue_timestamp: int = -1
    expiry_timestamp: int = -1
    max_timestamp: int = -1
    token_id: str = ""
    hmac: bytes = b""


def create_hmac(token_id: str, secret: str) -> bytes:
    return _hmac.new(secret.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()


def new_token_id() -> str:
    """Kafka's CoreUtils.generateUuidAsBase64."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def encode_token(info: TokenInformation) -> bytes:
    """The ``/delegation_token/tokens/<id>`` payload, byte for byte Kafka's."""
    values = {
        "version": VERSION,
        "owner": sanitize(str(info.owner)),
        "tokenRequester": sanitize(str(info.requester)),
        "renewers": [sanitize(str(r)) for r in info.renewers],
        "issueTimestamp": info.issue_timestamp,
        "maxTimestamp": info.max_timestamp,
        "expiryTimestamp": info.expiry_timestamp,
        "tokenId": info.token_id,
    }
    ordered = {k: values[k] for k in immutable_map_order(values)}
    return json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_token(data: bytes) -> TokenInformation | None:
    """Kafka's DelegationTokenManagerZk.fromBytes (versions 1-3); ValueError if malformed."""
    if not data:
        return None
    try:
        obj = json.loads(data)
        version = int(obj["version"])
        if not 0 < version <= VERSION:
            raise ValueError(f"unsupported token version {version}")
        owner = KafkaPrincipal.parse(desanitize(obj["owner"]))
        requester = (KafkaPrincipal.parse(desanitize(obj["tokenRequester"]))
                     if version >= 3 else owner)
        renewers = tuple(KafkaPrincipal.parse(desanitize(r)) for r in obj["renewers"])
        return TokenInformation(str(obj["tokenId"]), owner, requester, renewers,
                                int(obj["issueTimestamp"]), int(obj["maxTimestamp"]),
                                int(obj["expiryTimestamp"]))
    except (KeyError, TypeError, json.JSONDecodeError) as err:
        raise ValueError(f"invalid delegation token znode: {err}") from None


def filter_token(requester: KafkaPrincipal, owners: list[KafkaPrincipal] | None,
                 token: TokenInformation, authorize_token: Callable[[str], bool],
                 authorize_requester: Callable[[KafkaPrincipal], bool]) -> bool:
    """Kafka's DelegationTokenManager.filterToken: whether DescribeDelegationToken shows it."""
    if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
        return False
    if token.owner_or_renewer(requester):
        return True
    return authorize_token(token.token_id) or authorize_requester(token.owner)


@dataclass(slots=True)
class _Cached:
    info: TokenInformation
    hmac: bytes
    credentials: dict[str, ScramCredential] = field(default_factory=dict)


class DelegationTokenManager:
    """The broker's tokens (see module docstring); ``store`` is the metadata store."""

    def __init__(self, store, clock, secret_key: str | None,
                 max_lifetime_ms: int = DEFAULT_MAX_LIFETIME_MS,
                 expiry_time_ms: int = DEFAULT_EXPIRY_TIME_MS) -> None:
        self._store = store
        self._clock = clock
        self._secret = secret_key or None
        self.max_lifetime_ms = max_lifetime_ms
        self.expiry_time_ms = expiry_time_ms
        self._tokens: dict[str, _Cached] = {}
        self._by_hmac: dict[str, str] = {}
        self._listener: ChangeNotificationListener | None = None

    @classmethod
    def from_config(cls, store, clock, config) -> "DelegationTokenManager":
        """From the broker's ``delegation.token.*`` keys (secret key, else master key)."""
        def secret(key):
            got = config[key]
            return getattr(got, "value", got)     # a Password type keeps its text in .value
        key = secret("delegation.token.secret.key") or secret("delegation.token.master.key")
        return cls(store, clock, str(key) if key else None,
                   int(config["delegation.token.max.lifetime.ms"]),
                   int(config["delegation.token.expiry.time.ms"]))

    @property
    def enabled(self) -> bool:
        return self._secret is not None

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        """Create the paths, load every token, follow the change notifications."""
        if not self.enabled or self._listener is not None:
            return
        self._store.ensure_path(CHANGES)
        self._store.ensure_path(TOKENS)
        for token_id in self._store.get_children(TOKENS):
            self._reload(token_id)
        self._listener = ChangeNotificationListener(
            self._store, CHANGES, CHANGE_PREFIX, self._on_change, now_ms=self._clock.time_ms)
        self._listener.start(skip_existing=True)

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.stop()

    def _on_change(self, _path: str, data: bytes) -> None:
        self._reload(data.decode("utf-8"))

    def _reload(self, token_id: str) -> None:
        try:
            data, _ = self._store.get(f"{TOKENS}/{token_id}")
            info = decode_token(data)
        except NoNodeError:
            info = None
        except ValueError:
            _log.exception("unreadable delegation token", token_id=token_id)
            return
        if info is None:
            self._uncache(token_id)
        else:
            self._cache(info)

    # -- the cache ---------------------------------------------------------------------
    def _cache(self, info: TokenInformation) -> None:
        old = self._tokens.get(info.token_id)
        if old is not None:
            old.info = info
            return
        token_hmac = create_hmac(info.token_id, self._secret)
        password = base64.b64encode(token_hmac).decode("ascii")
        creds = {m: generate(m, password, MIN_ITERATIONS) for m in SCRAM_MECHANISMS}
        self._tokens[info.token_id] = _Cached(info, token_hmac, creds)
        self._by_hmac[password] = info.token_id

    def _uncache(self, token_id: str) -> None:
        cached = self._tokens.pop(token_id, None)
        if cached is not None:
            self._by_hmac.pop(base64.b64encode(cached.hmac).decode("ascii"), None)

    def credential(self, mechanism: str, token_id: str
                   ) -> tuple[ScramCredential, str, int] | None:
        """(SCRAM credential, owner name, ms left until its expiry, at least 0) of a cached
        token, else None."""
        cached = self._tokens.get(token_id)
        if cached is None or mechanism not in cached.credentials:
            return None
        left = max(0, cached.info.expiry_timestamp - self._clock.time_ms())
        return cached.credentials[mechanism], cached.info.owner.name, left

    def tokens(self, eligible: Callable[[TokenInformation], bool]
               ) -> list[tuple[TokenInformation, bytes]]:
        return [(c.info, c.hmac) for c in self._tokens.values() if eligible(c.info)]

    def _by(self, token_hmac: bytes) -> _Cached | None:
        token_id = self._by_hmac.get(base64.b64encode(bytes(token_hmac)).decode("ascii"))
        return None if token_id is None else self._tokens.get(token_id)

    # -- ZooKeeper writes ------------------------------------------------------------
    def _write(self, info: TokenInformation) -> None:
        path = f"{TOKENS}/{info.token_id}"
        data = encode_token(info)
        try:
            self._store.set(path, data)
        except NoNodeError:
            try:
                self._store.create(path, data, makepath=True)
            except NodeExistsError:
                self._store.set(path, data)
        self._cache(info)
        self._notify(info.token_id)

    def _remove(self, token_id: str) -> None:
        try:
            self._store.delete(f"{TOKENS}/{token_id}")
        except NoNodeError:
            pass
        self._uncache(token_id)
        self._notify(token_id)

    def _notify(self, token_id: str) -> None:
        self._store.create(f"{CHANGES}/{CHANGE_PREFIX}", token_id.encode("utf-8"),
                           sequence=True, makepath=True)

    # -- the API operations ------------------------------------------------------------
    def create(self, owner: KafkaPrincipal, requester: KafkaPrincipal,
               renewers: list[KafkaPrincipal], max_lifetime_ms: int) -> CreateResult:
        if not self.enabled:
            return CreateResult(int(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED), owner, requester)
        token_id = new_token_id()
        issued = self._clock.time_ms()
        lifetime = (self.max_lifetime_ms if max_lifetime_ms <= 0
                    else min(max_lifetime_ms, self.max_lifetime_ms))
        max_ts = issued + lifetime
        expiry = min(max_ts, issued + self.expiry_time_ms)
        info = TokenInformation(token_id, owner, requester, tuple(renewers), issued, max_ts,
                                expiry)
        self._write(info)
        _log.info("created a delegation token", token_id=token_id, owner=str(owner))
        return CreateResult(0, owner, requester, issued, expiry, max_ts, token_id,
                            self._tokens[token_id].hmac)

    def renew(self, principal: KafkaPrincipal, token_hmac: bytes,
              renew_period_ms: int) -> tuple[int, int]:
        """(error code, new expiry timestamp or -1)."""
        error, info, now = self._owned(principal, token_hmac)
        if error:
            return error, ERROR_TIMESTAMP
        if info.expired(now):
            return int(ErrorCode.DELEGATION_TOKEN_EXPIRED), ERROR_TIMESTAMP
        period = self.expiry_time_ms if renew_period_ms < 0 else renew_period_ms
        return 0, self._expire_at(info, min(info.max_timestamp, now + period))

    def expire(self, principal: KafkaPrincipal, token_hmac: bytes,
               expiry_period_ms: int) -> tuple[int, int]:
        """(error code, new expiry timestamp or -1); a negative period removes it now."""
        error, info, now = self._owned(principal, token_hmac)
        if error:
            return error, ERROR_TIMESTAMP
        if expiry_period_ms < 0:
            self._remove(info.token_id)
            _log.info("expired a delegation token", token_id=info.token_id)
            return 0, now
        if info.expired(now):
            return int(ErrorCode.DELEGATION_TOKEN_EXPIRED), ERROR_TIMESTAMP
        return 0, self._expire_at(info, min(info.max_timestamp, now + expiry_period_ms))

    def _owned(self, principal: KafkaPrincipal, token_hmac: bytes):
        """(error code, the token, now) for a renew or expire by ``principal``: tokens on,
        the token known, and ``principal`` its owner or a renewer."""
        now = self._clock.time_ms()
        if not self.enabled:
            return int(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED), None, now
        cached = self._by(token_hmac)
        if cached is None:
            return int(ErrorCode.DELEGATION_TOKEN_NOT_FOUND), None, now
        if not _may_renew(principal, cached.info):
            return int(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH), None, now
        return 0, cached.info, now

    def _expire_at(self, info: TokenInformation, expiry: int) -> int:
        self._write(replace(info, expiry_timestamp=expiry))
        return expiry

    def expire_tokens(self) -> list[str]:
        """Remove every token past its expiry or max timestamp; their ids."""
        now = self._clock.time_ms()
        gone = [c.info.token_id for c in self._tokens.values() if c.info.expired(now)]
        for token_id in gone:
            _log.info("delegation token expired", token_id=token_id)
            self._remove(token_id)
        return gone


def _may_renew(principal: KafkaPrincipal, info: TokenInformation) -> bool:
    """Kafka's allowedToRenew: the owner or a renewer (not the requester)."""
    return principal == info.owner or principal in info.renewers
