"""The metadata store interface: a ZooKeeper-shaped tree of znodes.

Kafka in ZooKeeper mode keeps its cluster metadata (brokers, topics, partition
leader/ISR state, configs, controller election) in ZooKeeper znodes.  kafkapy
does the same through ``MetadataStore``, so that topic creation flows as it does
in a cluster (request -> controller -> store -> broker metadata cache) and the
backend can be swapped:

* ``kafkapy.metadata.embedded.EmbeddedStore`` - the tree in memory, persisted to
  one file (a single-broker "cluster"; the process is the session);
* ``kafkapy.metadata.zk_store.ZooKeeperStore`` - a real ZooKeeper via kazoo.

Semantics follow ZooKeeper (and kazoo's Python API), so callers may use either:

* paths are absolute (``/a/b``), no trailing slash, no empty, ``.`` or ``..``
  components (``ValueError`` otherwise);
* errors are kazoo's exceptions: ``NoNodeError``, ``NodeExistsError``,
  ``BadVersionError``, ``NotEmptyError``, ``NoChildrenForEphemeralsError``,
  ``BadArgumentsError``, ``ConnectionClosedError`` (store closed);
* ``version=-1`` matches any version; a data version starts at 0 and grows by one
  on every ``set`` (even of identical bytes); ``cversion`` grows on every child
  create and delete;
* a sequential node's name gets a per-parent counter appended as ten
  zero-padded digits (``config_change_0000000007``); as in ZooKeeper the counter
  is the number of children ever created under the parent (deletes do not
  count, so it differs from ``cversion`` once children were deleted);
* watches are one-shot.  A *data* watch (set by ``get``, or by ``exists`` on an
  existing node) fires ``CHANGED`` on set and ``DELETED`` on delete; an *exists*
  watch (``exists`` on a missing node) fires ``CREATED``; a *child* watch (set by
  ``get_children``) fires ``CHILD`` when a child is created or deleted and
  ``DELETED`` when the node itself is deleted.  The same callable registered
  twice of one kind (data/exists vs child) on one path fires once; a callable
  registered as both kinds gets ``DELETED`` once per kind (kazoo's behaviour).
  ``get``/``get_children`` on a missing node raise ``NoNodeError`` and set no
  watch.  Callbacks receive a ``kazoo.protocol.states.WatchedEvent`` (``type``,
  ``state``, ``path``); a ZooKeeper backend may also deliver ``EventType.NONE``
  when its session is lost.
* ``multi``/``transaction`` apply check/create/set/delete atomically: all or
  nothing, watches fire only after success.  On failure the first failing
  operation's exception is raised with ``op_index`` and ``op`` attributes set
  (unlike kazoo's ``commit``, which returns the exceptions), so a caller can
  tell a fencing ``CheckOp`` failure (controller moved) from a conflict on the
  data.

All methods are synchronous; the embedded store is called from the event loop
and never blocks longer than one small file write.
"""
from __future__ import annotations

import abc
import logging
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union

from kazoo.exceptions import (  # noqa: F401  (re-exported for callers)
    BadArgumentsError,
    BadVersionError,
    ConnectionClosedError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
)
from kazoo.exceptions import (
    ConnectionDropped, ConnectionLoss, OperationTimeoutError, SessionExpiredError)
from kazoo.protocol.states import EventType, KeeperState, WatchedEvent  # noqa: F401

#: kazoo's errors while the ZooKeeper connection is down (the session may live on)
STORE_UNAVAILABLE = (ConnectionLoss, ConnectionDropped, SessionExpiredError,
                     OperationTimeoutError)

__all__ = [
    "MetadataStore", "Stat", "Transaction", "WatchCallback",
    "CreateOp", "SetDataOp", "DeleteOp", "CheckOp", "Op",
    "MetadataStoreError", "validate_path", "parent_of", "join_path",
    "EventType", "KeeperState", "WatchedEvent",
    "BadArgumentsError", "BadVersionError", "ConnectionClosedError",
    "NoChildrenForEphemeralsError", "NodeExistsError", "NoNodeError", "NotEmptyError",
    "RolledBackError", "STORE_UNAVAILABLE", "run_watch",
]

WatchCallback = Callable[[WatchedEvent], Any]

_log = logging.getLogger(__name__)


def run_watch(cb: WatchCallback, ev: WatchedEvent) -> None:
    """Call a watch callback with its event; a callback that raises is logged, so one bad
    watcher cannot stop the store delivering the others."""
    try:
        cb(ev)
    except Exception:
        _log.exception("metadata store watch callback %r failed on %s", cb, ev)


class MetadataStoreError(Exception):
    """The store cannot be opened or used (bad or unreadable file, lock held, ...)."""


@dataclass(frozen=True, slots=True)
class Stat:
    """A znode's stat, field for field as ZooKeeper's ``Stat``.

    Field names are snake_case; kazoo's ``ZnodeStat`` spellings (``ephemeralOwner``,
    ``dataLength``, ``numChildren``, ``owner_session_id``, ``children_count``,
    ``created``, ``last_modified``, ...) are available as properties so code
    written against either works.
    """

    czxid: int = 0            # zxid of the create
    mzxid: int = 0            # zxid of the last data change (or the create)
    pzxid: int = 0            # zxid of the last child create/delete (or the create)
    ctime: int = 0            # create time, ms since the epoch
    mtime: int = 0            # last data change time, ms since the epoch
    version: int = 0          # number of data changes
    cversion: int = 0         # number of child changes
    aversion: int = 0         # number of ACL changes (always 0 here)
    ephemeral_owner: int = 0  # owning session id, 0 if persistent
    data_length: int = 0
    num_children: int = 0

    # kazoo ZnodeStat spellings -------------------------------------------------
    @property
    def ephemeralOwner(self) -> int:  # noqa: N802
        return self.ephemeral_owner

    @property
    def dataLength(self) -> int:  # noqa: N802
        return self.data_length

    @property
    def numChildren(self) -> int:  # noqa: N802
        return self.num_children

    @property
    def owner_session_id(self) -> int | None:
        return self.ephemeral_owner or None

    @property
    def children_count(self) -> int:
        return self.num_children

    @property
    def acl_version(self) -> int:
        return self.aversion

    @property
    def creation_transaction_id(self) -> int:
        return self.czxid

    @property
    def last_modified_transaction_id(self) -> int:
        return self.mzxid

    @property
    def created(self) -> float:
        return self.ctime / 1000.0

    @property
    def last_modified(self) -> float:
        return self.mtime / 1000.0

    @property
    def ephemeral(self) -> bool:
        return self.ephemeral_owner != 0

    @classmethod
    def from_znode_stat(cls, z: Any) -> "Stat":
        """Convert kazoo's ``ZnodeStat``."""
        return cls(czxid=z.czxid, mzxid=z.mzxid, pzxid=z.pzxid, ctime=z.ctime,
                   mtime=z.mtime, version=z.version, cversion=z.cversion,
                   aversion=z.aversion, ephemeral_owner=z.ephemeralOwner or 0,
                   data_length=z.dataLength, num_children=z.numChildren)


# --- multi-op operations --------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequence: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = -1


@dataclass(frozen=True, slots=True)
class CheckOp:
    path: str
    version: int


Op = Union[CreateOp, SetDataOp, DeleteOp, CheckOp]


class Transaction:
    """Collects operations for one atomic ``multi``; kazoo's method names.

    ``commit()`` returns one result per operation (created path for a create,
    ``Stat`` for a set, ``True`` for delete/check) or raises the first failing
    operation's exception (``op_index``/``op`` attributes set) having applied
    nothing.  As a context manager it commits on a clean exit.
    """

    def __init__(self, store: "MetadataStore") -> None:
        self._store = store
        self.operations: list[Op] = []
        self.committed = False

    def create(self, path: str, data: bytes = b"", ephemeral: bool = False,
               sequence: bool = False) -> "Transaction":
        self.operations.append(CreateOp(path, data, ephemeral, sequence))
        return self

    def set_data(self, path: str, data: bytes, version: int = -1) -> "Transaction":
        self.operations.append(SetDataOp(path, data, version))
        return self

    set = set_data

    def delete(self, path: str, version: int = -1) -> "Transaction":
        self.operations.append(DeleteOp(path, version))
        return self

    def check(self, path: str, version: int) -> "Transaction":
        self.operations.append(CheckOp(path, version))
        return self

    def commit(self) -> list:
        if self.committed:
            raise ValueError("Transaction already committed")
        self.committed = True
        return self._store.multi(self.operations)

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()


class MetadataStore(abc.ABC):
    """A ZooKeeper-shaped metadata store; see the module docstring for semantics."""

    @property
    @abc.abstractmethod
    def session_id(self) -> int:
        """The session owning this store's ephemeral nodes (``Stat.ephemeral_owner``)."""

    def on_new_session(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` on the running event loop whenever a new session replaces
        an expired one: the old session's ephemeral nodes are gone and must be claimed
        again.  A store whose session is the process itself never calls it."""

    @abc.abstractmethod
    def create(self, path: str, data: bytes = b"", ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str:
        """Create a node; returns its path (with the sequence suffix if any).

        ``makepath`` creates missing parents as empty persistent nodes.
        Raises ``NodeExistsError``, ``NoNodeError`` (parent missing),
        ``NoChildrenForEphemeralsError``.
        """

    @abc.abstractmethod
    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        """Data and stat of a node; ``NoNodeError`` if missing (no watch set then)."""

    def sync(self, path: str) -> None:
        """Bring this session's view up to date with the store before the next read (ZooKeeper's
        ``sync``: a follower server catches up with its leader).  An in-process store is
        always current."""

    def get_many(self, paths: Sequence[str]) -> list:
        """``get`` of each path, in order: ``(data, stat)`` or the exception that failed
        that read (``NoNodeError`` for a missing node).  A ZooKeeper backend has all the
        reads in flight at once (one round trip instead of one per node)."""
        out: list = []
        for path in paths:
            try:
                out.append(self.get(path))
            except Exception as err:        # noqa: BLE001 - reported per path
                out.append(err)
        return out

    @abc.abstractmethod
    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        """Replace a node's data if ``version`` matches (-1: any); returns the new stat."""

    @abc.abstractmethod
    def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        """Delete a node (``NotEmptyError`` if it has children unless ``recursive``)."""

    @abc.abstractmethod
    def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        """The node's stat or None; with ``watch`` set a data or exists watch."""

    @abc.abstractmethod
    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        """Child names, sorted; ``NoNodeError`` if missing (no watch set then)."""

    @abc.abstractmethod
    def ensure_path(self, path: str) -> bool:
        """Create the node and its missing parents (empty, persistent); True."""

    @abc.abstractmethod
    def multi(self, ops: Sequence[Op]) -> list:
        """Apply ``ops`` atomically; see ``Transaction.commit`` for results/errors."""

    def transaction(self) -> Transaction:
        """A builder for ``multi``: ``store.transaction().check(..).set_data(..).commit()``."""
        return Transaction(self)

    @abc.abstractmethod
    def close(self) -> None:
        """End the session: ephemeral nodes go away, watches are dropped."""

    def __enter__(self) -> "MetadataStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- path helpers ---------------------------------------------------------------

def validate_path(path: str, *, allow_trailing_slash: bool = False) -> None:
    """Raise ``ValueError`` unless ``path`` is an absolute, normalised znode path."""
    if not isinstance(path, str):
        raise TypeError(f"znode path must be str, not {type(path).__name__}")
    if not path.startswith("/"):
        raise ValueError(f"znode path must start with '/': {path!r}")
    if path == "/":
        return
    body = path[1:-1] if (allow_trailing_slash and path.endswith("/")) else path[1:]
    if path.endswith("/") and not allow_trailing_slash:
        raise ValueError(f"znode path must not end with '/': {path!r}")
    for part in body.split("/"):
        if part in ("", ".", ".."):
            raise ValueError(f"invalid znode path {path!r}")
    if "\x00" in path:
        raise ValueError(f"znode path contains NUL: {path!r}")


def parent_of(path: str) -> str:
    """``/a/b`` -> ``/a``; ``/a`` -> ``/``."""
    i = path.rfind("/")
    return path[:i] if i > 0 else "/"


def join_path(parent: str, name: str) -> str:
    return parent + name if parent.endswith("/") else f"{parent}/{name}"
