"""SCRAM credentials as Kafka keeps them in ZooKeeper, and every broker's cache of them.

Znode ``/config/users/<sanitized user>`` holds the user's entity config,
``{"version":1,"config":{"SCRAM-SHA-512":"<credential>","SCRAM-SHA-256":"<credential>"}}``,
a credential being ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``
(Kafka's ScramCredentialUtils; salt is the bytes of a random base-36 string, as
ScramFormatter makes it).  The user name in the path is Kafka's Sanitizer form (URL
encoding with ``%20`` for space and ``%2A`` for ``*``).  Keys are written in the order
Kafka's ``java.util.Properties`` (a ConcurrentHashMap) iterates them, so the bytes equal
what kafka-configs.sh writes.  Other keys of the user (quotas) are kept untouched.  A
change writes the znode (or deletes it once empty with no children, as Kafka's
AdminZkClient does for quota entities) and then a ``/config/changes`` notification
``{"version":2,"entity_path":"users/<sanitized user>"}``.

``CredentialCache`` (one per broker, made by the server once the store is open and
handed to what uses it): loaded from every ``/config/users`` child on first use, then
kept current by ``user_changed(sanitized)`` for each ``users/<name>`` notification
``TopicConfigs`` follows (Kafka's UserConfigHandler updating the CredentialCache) and
for each user ``alter`` writes.

``alter`` / ``describe`` are Kafka's ZkAdminManager.alterUserScramCredentials /
describeUserScramCredentials: checks, error codes and messages, and result order.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from typing import TYPE_CHECKING

import structlog
from kazoo.exceptions import NoNodeError, NotEmptyError

from kafkapy.jvm import string_hash
from kafkapy.metadata import paths
from kafkapy.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kafkapy.metadata.store import MetadataStore

_log = structlog.get_logger("kafkapy.scram_credentials")

# Kafka's ScramMechanism type bytes (clients/admin/ScramMechanism).
MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
TYPE_OF = {name: code for code, name in MECHANISM_TYPES.items()}
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_string(self) -> str:
        b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
        return (f"salt={b64(self.salt)},stored_key={b64(self.stored_key)},"
                f"server_key={b64(self.server_key)},iterations={self.iterations}")

    @classmethod
    def from_string(cls, text: str) -> "ScramCredential":
        """Kafka's credentialFromString: exactly the four keys, else ValueError."""
        props: dict[str, str] = {}
        for token in text.split(","):
            index = token.find("=")
            if index <= 0:
                raise ValueError(f"Credentials not valid: {text}")
            props[token[:index]] = token[index + 1:]
        if set(props) != {"salt", "stored_key", "server_key", "iterations"}:
            raise ValueError(f"Credentials not valid: {text}")
        try:
            return cls(base64.b64decode(props["salt"], validate=True),
                       base64.b64decode(props["stored_key"], validate=True),
                       base64.b64decode(props["server_key"], validate=True),
                       int(props["iterations"]))
        except (ValueError, TypeError) as err:
            raise ValueError(f"Credentials not valid: {text}") from err


# -- Kafka's ScramFormatter ----------------------------------------------------------

def hash_name(mechanism: str) -> str:
    return _HASHES[mechanism]


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(_HASHES[mechanism], password.encode("utf-8"), salt, iterations)


def client_key(mechanism: str, salted: bytes) -> bytes:
    return hmac.new(salted, b"Client Key", _HASHES[mechanism]).digest()


def server_key(mechanism: str, salted: bytes) -> bytes:
    return hmac.new(salted, b"Server Key", _HASHES[mechanism]).digest()


def random_string() -> str:
    """Kafka's secureRandomString: a random 130-bit number in base 36."""
    number = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if number == 0:
            return out


def credential_from_salted(mechanism: str, salt: bytes, salted: bytes,
                           iterations: int) -> ScramCredential:
    stored = hashlib.new(_HASHES[mechanism], client_key(mechanism, salted)).digest()
    return ScramCredential(salt, stored, server_key(mechanism, salted), iterations)


def generate(mechanism: str, password: str, iterations: int,
             salt: bytes | None = None) -> ScramCredential:
    salt = random_string().encode("ascii") if salt is None else salt
    return credential_from_salted(mechanism, salt,
                                  salted_password(mechanism, password, salt, iterations),
                                  iterations)


# -- Kafka's Sanitizer ---------------------------------------------------------------

_URL_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


def sanitize(name: str) -> str:
    """URLEncoder.encode (UTF-8), then ``+`` -> ``%20`` and ``*`` -> ``%2A``."""
    return "".join(chr(b) if b in _URL_SAFE else f"%{b:02X}" for b in name.encode("utf-8"))


def desanitize(name: str) -> str:
    """URLDecoder.decode: ``%XX`` bytes (UTF-8) and ``+`` as space."""
    out = bytearray()
    i = 0
    raw = name.encode("utf-8")
    while i < len(raw):
        ch = raw[i]
        if ch == ord("%") and i + 2 < len(raw) and _is_hex(raw[i + 1:i + 3]):
            out.append(int(raw[i + 1:i + 3], 16))
            i += 3
            continue
        out.append(ord(" ") if ch == ord("+") else ch)
        i += 1
    return out.decode("utf-8", errors="replace")


def _is_hex(two: bytes) -> bool:
    return len(two) == 2 and all(c in b"0123456789abcdefABCDEF" for c in two)


# -- the znode bytes -----------------------------------------------------------------

def _java_hash(text: str) -> int:
    return string_hash(text) & 0xFFFFFFFF


def java_properties_order(keys) -> list[str]:
    """``keys`` in the order a java.util.Properties (ConcurrentHashMap) iterates them:
    by bin ``spread(hashCode) & (n - 1)`` (n = 16, doubled past 3/4 full), then insertion."""
    keys = list(keys)
    size = 16
    while len(keys) > size * 3 // 4:
        size *= 2

    def bin_of(key: str) -> int:
        h = _java_hash(key)
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (size - 1)
    return sorted(keys, key=bin_of)        # stable: insertion order within a bin


def encode_user_config(config: dict[str, str]) -> bytes:
    ordered = {k: config[k] for k in java_properties_order(config)}
    return paths.encode_entity_config(ordered)


def user_path(user: str) -> str:
    return paths.config_entity_path(paths.CONFIG_TYPE_USER, sanitize(user))


def read_user_config(store, user: str) -> dict[str, str]:
    """``/config/users/<user>``'s config; {} when absent (Kafka's fetchEntityConfig)."""
    try:
        data, _ = store.get(user_path(user))
    except NoNodeError:
        return {}
    return paths.decode_entity_config(data)


def write_user_config(store, user: str, config: dict[str, str]) -> None:
    """AdminZkClient.changeEntityConfig for a user: write (or drop an empty leaf) + notify."""
    path = user_path(user)
    written = False
    if not config:
        try:
            if not store.get_children(path):
                store.delete(path)
                written = True
        except NoNodeError:
            written = True
        except NotEmptyError:
            pass
    if not written:
        data = encode_user_config(config)
        if store.exists(path):
            store.set(path, data)
        else:
            store.create(path, data, makepath=True)
    store.create(paths.CONFIG_CHANGE_SEQ_PATH,
                 paths.encode_config_change(f"{paths.CONFIG_TYPE_USER}/{sanitize(user)}"),
                 sequence=True, makepath=True)


# -- the broker's cache --------------------------------------------------------------

class CredentialCache:
    """user -> mechanism -> ScramCredential, from ZooKeeper (see module docstring)."""

    def __init__(self, store: MetadataStore | None) -> None:
        self._store = store
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self._loaded = False

    def get(self, mechanism: str, user: str) -> ScramCredential | None:
        if not self._loaded:
            self.load()
        return self._users.get(user, {}).get(mechanism)

    def load(self) -> None:
        self._loaded = True
        try:
            children = self._store.get_children(
                paths.config_entity_type_path(paths.CONFIG_TYPE_USER))
        except NoNodeError:
            children = []
        for child in children:
            self.reload(child)

    def reload(self, sanitized: str) -> None:
        """Re-read one user (its sanitized name, as in the znode path and notification)."""
        user = desanitize(sanitized)
        if "/" in sanitized:            # <user>/clients/<id>: quotas only
            return
        try:
            data, _ = self._store.get(paths.config_entity_path(paths.CONFIG_TYPE_USER, sanitized))
            config = paths.decode_entity_config(data)
        except NoNodeError:
            config = {}
        except ValueError:
            _log.exception("unreadable user config", user=user)
            return
        creds: dict[str, ScramCredential] = {}
        for mechanism in _HASHES:
            text = config.get(mechanism)
            if text is None:
                continue
            try:
                creds[mechanism] = ScramCredential.from_string(text)
            except ValueError:
                _log.warning("ignoring an invalid SCRAM credential", user=user, mechanism=mechanism)
        if creds:
            self._users[user] = creds
        else:
            self._users.pop(user, None)

    def user_changed(self, sanitized: str) -> None:
        """A ``users/<sanitized>`` config change: re-read it once the cache is loaded
        (until then the first use reads every user)."""
        if self._loaded:
            self.reload(sanitized)


# -- ZkAdminManager ------------------------------------------------------------------

_EMPTY_USER = "Username must not be empty"
# Errors.UNKNOWN_SERVER_ERROR's own text (what Kafka reports for an unexpected failure).
_UNEXPECTED = "The server experienced an unexpected error when processing the request."
_UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"


def alter(store: MetadataStore, cache: CredentialCache, upsertions: list,
          deletions: list) -> list[tuple[str, int, str | None]]:
    """Kafka's alterUserScramCredentials: ``(user, error_code, error_message)`` results;
    ``cache`` (this broker's) re-reads each user written.

    ``upsertions``: (name, mechanism type, iterations, salt, salted_password);
    ``deletions``: (name, mechanism type).
    """
    results: list[tuple[str, int, str | None]] = []
    bad: dict[str, str] = {}             # user -> message, insertion-ordered
    for name, mechanism in deletions:
        if not name:
            bad[name] = _EMPTY_USER
        elif mechanism not in MECHANISM_TYPES:
            bad[name] = _UNKNOWN_MECHANISM
    for name, mechanism, iterations, _salt, _salted in upsertions:
        if not name:
            bad[name] = _EMPTY_USER
        elif mechanism not in MECHANISM_TYPES:
            bad[name] = _UNKNOWN_MECHANISM
        elif iterations < MIN_ITERATIONS or iterations > MAX_ITERATIONS:
            bad[name] = "Too many iterations" if iterations > MAX_ITERATIONS else "Too few iterations"
    # Scala's immutable Map keeps insertion order up to 4 entries; past that a HashMap's
    # order is not worth copying (clients look results up by user).
    for user, message in bad.items():
        code = (ErrorCode.UNSUPPORTED_SASL_MECHANISM if message == _UNKNOWN_MECHANISM
                else ErrorCode.UNACCEPTABLE_CREDENTIAL)
        results.append((user, int(code), message))

    pairs = [(u[0], u[1]) for u in upsertions if u[0] not in bad] + \
            [(d[0], d[1]) for d in deletions if d[0] not in bad]
    seen: set = set()
    duplicated: list[str] = []
    for pair in pairs:
        if pair in seen and pair[0] not in duplicated:
            duplicated.append(pair[0])
        seen.add(pair)
    for user in duplicated:
        results.append((user, int(ErrorCode.DUPLICATE_RESOURCE),
                        "A user credential cannot be altered twice in the same request"))

    candidates = list(dict.fromkeys(u for u, _ in pairs if u not in duplicated))
    configs = {user: read_user_config(store, user) for user in candidates}
    missing = list(dict.fromkeys(
        name for name, mechanism in deletions
        if name in configs and MECHANISM_TYPES[mechanism] not in configs[name]))
    for user in missing:
        results.append((user, int(ErrorCode.RESOURCE_NOT_FOUND),
                        "Attempt to delete a user credential that does not exist"))

    to_alter = [u for u in candidates if u not in missing]
    for name, mechanism in deletions:
        if name in to_alter:
            configs[name].pop(MECHANISM_TYPES[mechanism], None)
    for name, mechanism, iterations, salt, salted in upsertions:
        if name in to_alter:
            mech = MECHANISM_TYPES[mechanism]
            configs[name][mech] = credential_from_salted(mech, bytes(salt), bytes(salted),
                                                         iterations).to_string()
    failed: list[tuple[str, int, str | None]] = []
    for user in to_alter:
        try:
            write_user_config(store, user, configs[user])
            cache.user_changed(sanitize(user))
        except Exception:               # reported per user, as Kafka does
            _log.exception("altering user SCRAM credentials failed", user=user)
            failed.append((user, int(ErrorCode.UNKNOWN), _UNEXPECTED))
    results.extend(failed)
    failed_users = {f[0] for f in failed}
    results.extend((u, 0, "") for u in to_alter if u not in failed_users)   # default ""
    return results


def describe(store: MetadataStore, users: list[str] | None) -> tuple[int, str | None, list]:
    """Kafka's describeUserScramCredentials: (error_code, error_message, results); a result
    is (user, error_code, error_message, [(mechanism type, iterations)])."""
    found: dict[str, tuple] = {}

    def add(user: str, config: dict[str, str], explicit: bool) -> None:
        mechanisms = [m for m in ("SCRAM-SHA-256", "SCRAM-SHA-512") if m in config]
        if mechanisms:
            try:
                infos = [(TYPE_OF[m], ScramCredential.from_string(config[m]).iterations)
                         for m in mechanisms]
                found[user] = (user, 0, "", infos)   # Kafka leaves the default ""
            except ValueError:
                found[user] = (user, int(ErrorCode.UNKNOWN), None, [])   # ApiError: no message
        elif explicit:
            found[user] = (user, int(ErrorCode.RESOURCE_NOT_FOUND),
                           f"Attempt to describe a user credential that does not exist: {user}", [])

    try:
        if not users:
            try:
                children = store.get_children(paths.config_entity_type_path(paths.CONFIG_TYPE_USER))
            except NoNodeError:
                children = []
            for child in children:
                try:
                    data, _ = store.get(paths.config_entity_path(paths.CONFIG_TYPE_USER, child))
                except NoNodeError:
                    continue
                add(desanitize(child), paths.decode_entity_config(data), False)
            return 0, "", [found[u] for u in sorted(found)]
        illegal = {u for u in users if not u}
        for user in illegal:
            found[user] = (user, int(ErrorCode.RESOURCE_NOT_FOUND), _EMPTY_USER, [])
        counts: dict[str, int] = {}
        for user in users:
            counts[user] = counts.get(user, 0) + 1
        duplicated = {u for u, n in counts.items() if n > 1 and u not in illegal}
        for user in duplicated:
            found[user] = (user, int(ErrorCode.DUPLICATE_RESOURCE),
                           "Cannot describe SCRAM credentials for the same user twice in a "
                           f"single request: {user}", [])
        for user in users:
            if user in illegal or user in duplicated:
                continue
            add(user, read_user_config(store, user), True)
        return 0, "", [found[u] for u in dict.fromkeys(users)]
    except Exception:
        _log.exception("Error processing describe user SCRAM credential configs request")
        return int(ErrorCode.UNKNOWN), _UNEXPECTED, []
