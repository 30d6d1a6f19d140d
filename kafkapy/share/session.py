"""Share sessions: Kafka's ShareSessionCache, ShareSession and share fetch contexts.

A share session remembers, for one member of one share group on this broker (key
``(group id, member id)``), the partitions it fetches, so that each ShareFetch after the
first names only what changed.  The epoch in each request orders them (Kafka's
ShareRequestMetadata):

- epoch 0 (``INITIAL_EPOCH``) opens a session with the partitions the request lists,
  replacing the member's session if there was one; acknowledgements are refused in it
  (INVALID_REQUEST).  Refused with SHARE_SESSION_LIMIT_REACHED when the cache holds
  ``group.share.max.share.sessions`` sessions.  The session's epoch is then 1.
- epoch n > 0 must equal the session's epoch (else INVALID_SHARE_SESSION_EPOCH; no
  session: SHARE_SESSION_NOT_FOUND); the listed partitions are added (new ones are
  answered once even without data), ``ForgottenTopicsData`` removed, and the session's
  epoch moves to n + 1 (after ``2**31 - 1`` comes 1).
- epoch -1 (``FINAL_EPOCH``) closes it: the request may only acknowledge (its fetch
  reads nothing); the caller removes the session afterwards and releases the member's
  acquired records.  SHARE_SESSION_NOT_FOUND without a session.

ShareAcknowledge follows the same epochs (``acknowledge_session_update``): 0 is refused
(INVALID_SHARE_SESSION_EPOCH), -1 needs a session and leaves it for the caller to
close, n > 0 must match and moves the epoch on.

What a response carries (Kafka's ShareSessionContext): the answer to a request of epoch
0 or -1 holds every partition answered; in a running session a partition is answered
only when it has records, an error, or was just added, or had an error the last time
(so that the client learns the error is gone).

A session ends with the client connection that opened it, as in Kafka 4.2 (its
ShareSessionCache maps connection ids to session keys): the ShareFetch handler ties each
session it opens to its connection (``ShareSessionCache.bind``, with the cancel of the
connection's close callback, which closes the session and releases the member's records);
the tie goes with the session, whichever way it is removed, so a session opened again
from another connection is closed only by that one.  Nothing else evicts a session: the
cache refuses new ones while full, as Kafka's does.

Everything here runs on the event loop; nothing awaits.
"""
from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.replication.fetch_session import TopicIdPartition

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_INT32_MAX = 2**31 - 1
#: Kafka 4.1's error code, which kafka-python's table (``ErrorCode``) does not have yet.
SHARE_SESSION_LIMIT_REACHED = 133


def next_epoch(epoch: int) -> int:
    """Kafka's ShareRequestMetadata.nextEpoch: -1 stays -1, the largest int wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == _INT32_MAX:
        return 1
    return epoch + 1


class ShareSessionKey(NamedTuple):
    group_id: str
    member_id: str


def partition_key(tip: TopicIdPartition) -> tuple[uuid.UUID | None, int]:
    """A session partition's identity: topic id and index (Kafka's CachedSharePartition)."""
    return (tip.topic_id, tip.partition)


class PartitionAnswer(NamedTuple):
    """What a response says of one partition, as far as the session cares."""

    error_code: int
    records_size: int


@dataclass(slots=True)
class _CachedPartition:
    tip: TopicIdPartition
    requires_update: bool   # answer it next time even without data (new, or errored)

    def must_respond(self, answer: PartitionAnswer, update: bool) -> bool:
        """Kafka's CachedSharePartition.maybeUpdateResponseData."""
        respond = answer.records_size > 0
        if self.requires_update:
            respond = True
            if update:
                self.requires_update = False
        if answer.error_code:
            if update:
                self.requires_update = True
            respond = True
        return respond


@dataclass(slots=True)
class ShareSession:
    """One member's session: its partitions in insertion order, its next epoch, when it
    last served a request (monotonic ms)."""

    key: ShareSessionKey
    partitions: OrderedDict = field(default_factory=OrderedDict)   # key -> _CachedPartition
    epoch: int = 1
    last_used_ms: int = 0

    def topic_id_partitions(self, topic_name: Callable[[uuid.UUID], str | None] | None = None
                            ) -> list[TopicIdPartition]:
        """The session's partitions.  With ``topic_name``, a partition that joined while its
        topic id was unknown here (topic None: a broker just restarted, its metadata not
        yet sent) is looked up again and keeps its name once known, as Kafka's fetch
        sessions resolve unknown names; without, it would answer UNKNOWN_TOPIC_ID for the
        session's whole life."""
        out = []
        for cached in self.partitions.values():
            tip = cached.tip
            if tip.topic is None and topic_name is not None:
                name = topic_name(tip.topic_id)
                if name is not None:
                    tip = cached.tip = TopicIdPartition(tip.topic_id, name, tip.partition)
            out.append(tip)
        return out

    def update(self, added: Iterable[TopicIdPartition],
               forgotten: Iterable[TopicIdPartition]) -> None:
        """Kafka's ShareSession.update: new partitions join (answered once), listed ones
        already there are kept, forgotten ones leave."""
        for tip in added:
            key = partition_key(tip)
            if key not in self.partitions:
                self.partitions[key] = _CachedPartition(tip, requires_update=True)
        for tip in forgotten:
            self.partitions.pop(partition_key(tip), None)


class ShareSessionCache:
    """Kafka's ShareSessionCache: at most ``max_entries`` sessions, each tied to the
    connection that opened it (see the module docstring).

    ``idle_ms`` is accepted and unused: nothing evicts an idle session."""

    def __init__(self, max_entries: int, idle_ms: int | None = None) -> None:
        self.max_entries = max_entries
        self._sessions: dict[ShareSessionKey, ShareSession] = {}
        self._members: dict[str, int] = {}      # group id -> its sessions here
        # session key -> the cancel of its connection's close callback
        self._unbind: dict[ShareSessionKey, Callable[[], None]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: ShareSessionKey) -> ShareSession | None:
        return self._sessions.get(key)

    def remove(self, key: ShareSessionKey) -> ShareSession | None:
        """Remove the session and its tie to its connection."""
        session = self._sessions.pop(key, None)
        if session is not None:
            self._forget_member(key.group_id)
        unbind = self._unbind.pop(key, None)
        if unbind is not None:
            unbind()
        return session

    def bind(self, key: ShareSessionKey, unbind: Callable[[], None]) -> None:
        """Tie the session to a connection: ``unbind`` cancels that connection's close
        callback, and is called when the session is removed or bound anew (at once when
        there is no such session)."""
        previous = self._unbind.pop(key, None)
        if previous is not None:
            previous()
        if key in self._sessions:
            self._unbind[key] = unbind
        else:
            unbind()

    def members(self, group_id: str) -> int:
        """How many sessions the group has here (Kafka's numMembersPerGroup)."""
        return self._members.get(group_id, 0)

    def sessions(self) -> list[ShareSession]:
        return list(self._sessions.values())

    def total_partitions(self) -> int:
        return sum(len(s.partitions) for s in self._sessions.values())

    def touch(self, session: ShareSession, now_ms: int) -> None:
        session.last_used_ms = now_ms

    def maybe_create(self, key: ShareSessionKey, partitions: Sequence[TopicIdPartition],
                     now_ms: int) -> ShareSession | None:
        """A new session (epoch 1) with ``partitions``; None when the cache is full."""
        if len(self._sessions) >= self.max_entries:
            return None
        session = ShareSession(key, last_used_ms=now_ms)
        for tip in partitions:
            session.partitions.setdefault(partition_key(tip), _CachedPartition(tip, False))
        self._sessions[key] = session
        self._members[key.group_id] = self._members.get(key.group_id, 0) + 1
        return session

    def _forget_member(self, group_id: str) -> None:
        left = self._members.get(group_id, 0) - 1
        if left > 0:
            self._members[group_id] = left
        else:
            self._members.pop(group_id, None)


class ShareFetchContext:
    """One ShareFetch's view of its session (Kafka's ShareFetchContext): which partitions
    it reads and which of their answers the response carries."""

    def __init__(self, epoch: int, partitions: list[TopicIdPartition],
                 session: ShareSession | None) -> None:
        self.epoch = epoch
        self._partitions = partitions
        self._session = session

    @property
    def is_subsequent(self) -> bool:
        return self._session is not None

    @property
    def is_final(self) -> bool:
        return self.epoch == FINAL_EPOCH

    def partitions(self, topic_name: Callable[[uuid.UUID], str | None] | None = None
                   ) -> list[TopicIdPartition]:
        """What this fetch reads: the request's partitions (epoch 0), the session's (n > 0,
        unknown names looked up again with ``topic_name``), none (epoch -1).  A partition
        whose topic id is unknown has topic None."""
        if self._session is not None:
            return self._session.topic_id_partitions(topic_name)
        return list(self._partitions)

    def answered(self, answers: Sequence[tuple[TopicIdPartition, PartitionAnswer]]
                 ) -> list[int]:
        """The indexes of ``answers`` the response carries, updating the session."""
        session = self._session
        if session is None:
            return list(range(len(answers)))
        kept = []
        for i, (tip, answer) in enumerate(answers):
            cached = session.partitions.get(partition_key(tip))
            if cached is None or cached.must_respond(answer, update=True):
                kept.append(i)
                if cached is not None and answer.records_size > 0:
                    # Kafka moves a partition that answered records to the end.
                    session.partitions.move_to_end(partition_key(tip))
        return kept


def new_context(cache: ShareSessionCache, group_id: str, member_id: str, epoch: int,
                partitions: Sequence[TopicIdPartition], forgotten: Sequence[TopicIdPartition],
                acknowledgements: bool, now_ms: int) -> ShareFetchContext:
    """Kafka's SharePartitionManager.newContext; raises KafkaError with the request's
    top-level error (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
    SHARE_SESSION_LIMIT_REACHED, INVALID_REQUEST)."""
    key = ShareSessionKey(group_id, member_id)
    if epoch == FINAL_EPOCH:
        if cache.get(key) is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        return ShareFetchContext(epoch, [], None)
    if epoch == INITIAL_EPOCH:
        if acknowledgements:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             "Acknowledge data present in the initial share fetch request")
        cache.remove(key)
        if cache.maybe_create(key, partitions, now_ms) is None:
            raise KafkaError(SHARE_SESSION_LIMIT_REACHED,
                             "The limit of share sessions has been reached.")
        return ShareFetchContext(epoch, list(partitions), None)
    session = _session_at(cache, key, epoch)
    session.update(partitions, forgotten)
    cache.touch(session, now_ms)
    session.epoch = next_epoch(session.epoch)
    return ShareFetchContext(epoch, [], session)


def acknowledge_session_update(cache: ShareSessionCache, group_id: str, member_id: str,
                               epoch: int, now_ms: int) -> None:
    """Kafka's acknowledgeSessionUpdate for ShareAcknowledge; raises KafkaError."""
    if epoch == INITIAL_EPOCH:
        raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    key = ShareSessionKey(group_id, member_id)
    if epoch == FINAL_EPOCH:
        if cache.get(key) is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        return
    session = _session_at(cache, key, epoch)
    cache.touch(session, now_ms)
    session.epoch = next_epoch(session.epoch)


def _session_at(cache: ShareSessionCache, key: ShareSessionKey, epoch: int) -> ShareSession:
    session = cache.get(key)
    if session is None:
        raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND)
    if session.epoch != epoch:
        raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    return session
