"""Incremental fetch sessions (KIP-227): Kafka's FetchSessionCache and FetchManager.

A fetcher that sends a full fetch with epoch 0 may get a session id back; it then
sends only what changed (new or updated partitions, ``forgotten_topics_data``) with
epochs 1, 2, ... and the broker answers only partitions with news (records, a moved
high watermark or log start offset, an error, a preferred replica, a diverging
epoch).  The request's (session id, epoch) picks the context, as Kafka's
``FetchManager.newContext``:

- epoch -1 (FINAL_EPOCH, and every request before v7): sessionless; a named
  session is closed first;
- epoch 0 (INITIAL_EPOCH): full; a named session is closed, and a new one is
  created when the response is generated if the cache has room (else id 0);
- any other epoch: incremental on an existing session -- unknown id ->
  FETCH_SESSION_ID_NOT_FOUND, wrong epoch -> INVALID_FETCH_SESSION_EPOCH, topic
  ids used by the session but not by the request version (or the reverse) ->
  FETCH_SESSION_TOPIC_ID_ERROR; a session left with no partition is closed and
  the request served sessionless.

Cache (Kafka 3.9's layout, so ids and capacity match): 8 shards, each with
``max.incremental.fetch.session.cache.slots // 8`` slots and the id range
``[max(1, n * R), (n + 1) * R)`` with ``R = 2**31-1 // 8``; new sessions go to
the shards in turn.  A full shard evicts a session unused for more than
120000 ms (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, not a setting),
else the least valuable evictable one ordered by (privileged, size, id) if the
newcomer ranks at least as high.  Followers' sessions are privileged.

Replica fetches use the same cache (their sessions privileged); the fetching side
of a session, a follower's, is ``fetch_session_handler`` (Kafka's FetchSessionHandler).

Invariants: session ids are never 0 and unique in the cache; a session's epoch is
the one its next request must carry; partitions keep Kafka's order (appended when
added, moved to the end when they returned records) so a fetch reading up to
``max_bytes`` serves every partition in turn.  Everything runs on the event loop.
"""
from __future__ import annotations

import random
import uuid
from typing import Callable, Iterable, NamedTuple

from kafkapy.protocol.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NUM_CACHE_SHARDS = 8
MIN_EVICTION_MS = 120_000
_INT32_MAX = 0x7FFFFFFF
_NEW_ID_ATTEMPTS = 1000


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: -1 stays -1, and 2**31-1 wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT32_MAX else epoch + 1


def is_full(epoch: int) -> bool:
    return epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class TopicIdPartition(NamedTuple):
    """A fetched partition: topic id (None before v13 or when zero), name (None if unknown)."""

    topic_id: uuid.UUID | None
    topic: str | None
    partition: int

    @property
    def key(self) -> tuple:
        # Kafka's CachedPartition equality: by topic id when there is one, else by name.
        # (The id's 128-bit int: a UUID object hashes in Python, an int in C.)
        return ("id", self.topic_id.int, self.partition) if self.topic_id else \
            ("name", self.topic, self.partition)


class PartitionRequest(NamedTuple):
    """What a fetcher asks of one partition."""

    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int


class PartitionAnswer(NamedTuple):
    """What a response says of one partition, as far as the session cares."""

    error_code: int
    high_watermark: int
    log_start_offset: int
    records_size: int
    preferred_read_replica: int = -1
    diverging: bool = False


class CachedPartition:
    """One partition of a session: the last request parameters and what was last sent."""

    __slots__ = ("topic_id", "topic", "partition", "request", "high_watermark",
                 "local_log_start_offset", "named_at")

    def __init__(self, tip: TopicIdPartition, request: PartitionRequest,
                 answer: PartitionAnswer | None = None) -> None:
        self.topic_id = tip.topic_id
        self.topic = tip.topic
        self.partition = tip.partition
        self.request = request
        self.high_watermark = answer.high_watermark if answer else -1
        self.local_log_start_offset = answer.log_start_offset if answer else -1
        self.named_at = INITIAL_EPOCH   # the session epoch of the last fetch naming it

    def tip(self) -> TopicIdPartition:
        return TopicIdPartition(self.topic_id, self.topic, self.partition)

    def must_respond(self, answer: PartitionAnswer, update: bool) -> bool:
        """Kafka's maybeUpdateResponseData: include this partition in an incremental answer?"""
        must = answer.records_size > 0
        if self.high_watermark != answer.high_watermark:
            must = True
            if update:
                self.high_watermark = answer.high_watermark
        if self.local_log_start_offset != answer.log_start_offset:
            must = True
            if update:
                self.local_log_start_offset = answer.log_start_offset
        if answer.preferred_read_replica != -1 or answer.diverging:
            must = True
        if answer.error_code != 0:
            if update:
                # An invalid value, so the partition is sent again once the error is gone.
                self.high_watermark = -1
            must = True
        return must


class FetchSession:
    __slots__ = ("id", "privileged", "partitions", "uses_topic_ids", "creation_ms",
                 "last_used_ms", "epoch", "cached_size", "evictable_by_all",
                 "evictable_by_privileged")

    def __init__(self, session_id: int, privileged: bool, partitions: dict,
                 uses_topic_ids: bool, now: int) -> None:
        self.id = session_id
        self.privileged = privileged
        self.partitions: dict[tuple, CachedPartition] = partitions
        self.uses_topic_ids = uses_topic_ids
        self.creation_ms = now
        self.last_used_ms = now
        self.epoch = next_epoch(INITIAL_EPOCH)
        # As of the last touch (Kafka keeps its eviction maps up to date only then).
        self.cached_size = -1
        self.evictable_by_all = False
        self.evictable_by_privileged = False

    def evictable_key(self) -> tuple:
        return (self.privileged, self.cached_size, self.id)

    def update(self, fetch_data: list[tuple[TopicIdPartition, PartitionRequest]],
               to_forget: Iterable[TopicIdPartition]) -> None:
        """Add or update the named partitions, then drop the forgotten ones."""
        for tip, request in fetch_data:
            cached = self.partitions.get(tip.key)
            if cached is None:
                self.partitions[tip.key] = cached = CachedPartition(tip, request)
            else:
                cached.request = request
            cached.named_at = self.epoch
        for tip in to_forget:
            self.partitions.pop(tip.key, None)

    def move_to_end(self, key: tuple) -> None:
        self.partitions[key] = self.partitions.pop(key)


class FetchSessionCacheShard:
    """Sessions whose ids lie in this shard's range; Kafka's eviction rules."""

    def __init__(self, max_entries: int, eviction_ms: int, id_range: int, shard_num: int,
                 rng: random.Random) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.id_range = id_range
        self.shard_num = shard_num
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0
        self._rng = rng

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def _new_session_id(self) -> int:
        low = max(1, self.shard_num * self.id_range)
        high = (self.shard_num + 1) * self.id_range  # exclusive
        for _ in range(_NEW_ID_ATTEMPTS):
            candidate = self._rng.randrange(low, high)
            if candidate not in self.sessions:
                return candidate
        raise RuntimeError("no free fetch session id found")  # the range dwarfs the slots

    def maybe_create(self, now: int, privileged: bool, size: int, uses_topic_ids: bool,
                     partitions: Callable[[], dict]) -> int:
        """A new session's id, or 0 when the shard is full and nothing may be evicted."""
        if len(self.sessions) >= self.max_entries and \
                not self._try_evict(privileged, (privileged, size, 0), now):
            return INVALID_SESSION_ID
        session = FetchSession(self._new_session_id(), privileged, partitions(),
                               uses_topic_ids, now)
        self.sessions[session.id] = session
        self.touch(session, now)
        return session.id

    def _try_evict(self, privileged: bool, key: tuple, now: int) -> bool:
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - stalest.last_used_ms > self.eviction_ms:
            self._evict(stalest)
            return True
        candidates = [s for s in self.sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not candidates:
            return False
        weakest = min(candidates, key=FetchSession.evictable_key)
        if key < weakest.evictable_key():
            return False
        self._evict(weakest)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1

    def remove(self, session_id: int) -> FetchSession | None:
        return self.sessions.pop(session_id, None)

    def touch(self, session: FetchSession, now: int) -> None:
        """Mark used now; recompute its size and whether others may evict it."""
        session.last_used_ms = now
        session.cached_size = len(session.partitions)
        old_enough = now - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = (not session.privileged) or old_enough
        session.evictable_by_all = old_enough


class FetchSessionCache:
    def __init__(self, max_slots: int, eviction_ms: int = MIN_EVICTION_MS,
                 rng: random.Random | None = None) -> None:
        rng = rng or random.Random()
        self.id_range = _INT32_MAX // NUM_CACHE_SHARDS
        self.shards = [FetchSessionCacheShard(max_slots // NUM_CACHE_SHARDS, eviction_ms,
                                              self.id_range, n, rng)
                       for n in range(NUM_CACHE_SHARDS)]
        self._counter = 0

    def shard_for(self, session_id: int) -> FetchSessionCacheShard | None:
        index = session_id // self.id_range if session_id >= 0 else -1
        return self.shards[index] if 0 <= index < len(self.shards) else None

    def next_shard(self) -> FetchSessionCacheShard:
        shard = self.shards[self._counter % len(self.shards)]
        self._counter += 1
        return shard

    def get(self, session_id: int) -> FetchSession | None:
        shard = self.shard_for(session_id)
        return shard.get(session_id) if shard is not None else None

    def remove(self, session_id: int) -> None:
        shard = self.shard_for(session_id)
        if shard is not None:
            shard.remove(session_id)

    @property
    def size(self) -> int:
        return sum(len(s.sessions) for s in self.shards)


# ---------------------------------------------------------------- contexts

Updates = list[tuple[TopicIdPartition, PartitionAnswer]]


class FetchContext:
    """Which partitions a fetch reads, and which of the answers it sends back."""

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionRequest]]:
        return []

    def generate(self, updates: Updates, now: int) -> tuple[int, int, list[int]]:
        """(top-level error, session id, indexes of the updates to send)."""
        raise NotImplementedError

    def throttled(self, now: int) -> tuple[int, int]:
        """(top-level error, session id) of a throttled answer, which carries no partition
        (Kafka's getThrottledResponse): no session is created or changed."""
        error, session_id, _ = self.generate([], now)
        return error, session_id

    #: A follower's incremental fetch that leaves some of its session's partitions
    #: unnamed: ``unchanged(tip)`` gives the session's entry for such a partition (its
    #: request is the one the session holds), None for a named one.  Only an unnamed
    #: partition can be left unread, when nothing changed for it since the session's
    #: last answer.  None for every other fetch.
    unchanged: Callable[[TopicIdPartition], CachedPartition | None] | None = None


class SessionErrorContext(FetchContext):
    def __init__(self, error: int) -> None:
        self.error = error

    def generate(self, updates, now):
        return self.error, INVALID_SESSION_ID, []


class SessionlessContext(FetchContext):
    def __init__(self, fetch_data) -> None:
        self._data = fetch_data

    def partitions(self):
        return self._data

    def generate(self, updates, now):
        return 0, INVALID_SESSION_ID, list(range(len(updates)))


class FullContext(SessionlessContext):
    """A full fetch that asks for a session: one is created when the answer is made."""

    def __init__(self, cache: FetchSessionCache, fetch_data, uses_topic_ids: bool,
                 privileged: bool) -> None:
        super().__init__(fetch_data)
        self._cache = cache
        self._uses_topic_ids = uses_topic_ids
        self._privileged = privileged

    def generate(self, updates, now):
        requests = {tip.key: request for tip, request in self._data}

        def cached() -> dict:
            return {tip.key: CachedPartition(tip, requests[tip.key], answer)
                    for tip, answer in updates}

        session_id = self._cache.next_shard().maybe_create(
            now, self._privileged, len(updates), self._uses_topic_ids, cached)
        return 0, session_id, list(range(len(updates)))

    def throttled(self, now):
        return 0, INVALID_SESSION_ID        # a throttled full fetch makes no session


class IncrementalContext(FetchContext):
    def __init__(self, session: FetchSession, request_epoch: int,
                 topic_name: Callable[[uuid.UUID], str | None], skips_unnamed: bool) -> None:
        self.session = session
        self._request_epoch = request_epoch
        self._topic_name = topic_name
        if skips_unnamed:
            self.unchanged = self._unnamed_entry

    def _unnamed_entry(self, tip: TopicIdPartition) -> CachedPartition | None:
        cached = self.session.partitions.get(tip.key)
        return cached if cached is not None and cached.named_at != self._request_epoch else None

    def partitions(self):
        out = []
        for cached in self.session.partitions.values():
            if self.session.uses_topic_ids and cached.topic is None:
                cached.topic = self._topic_name(cached.topic_id)
            out.append((cached.tip(), cached.request))
        return out

    def generate(self, updates, now):
        session = self.session
        if session.epoch != next_epoch(self._request_epoch):
            # Another request of this session went by meanwhile (a duplicate).
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, []
        kept = []
        for index, (tip, answer) in enumerate(updates):
            cached = session.partitions.get(tip.key)
            if cached is None or not cached.must_respond(answer, True):
                continue
            kept.append(index)
            if answer.records_size > 0:
                session.move_to_end(tip.key)
        return 0, session.id, kept


class FetchManager:
    """Kafka's FetchManager: the context of each fetch, from its session id and epoch."""

    def __init__(self, cache: FetchSessionCache) -> None:
        self.cache = cache

    def new_context(self, version: int, session_id: int, epoch: int, is_follower: bool,
                    fetch_data, to_forget, topic_name, now: int) -> FetchContext:
        if is_full(epoch):
            if session_id != INVALID_SESSION_ID:
                self.cache.remove(session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessContext(fetch_data)
            return FullContext(self.cache, fetch_data, version >= 13, is_follower)
        shard = self.cache.shard_for(session_id)
        session = shard.get(session_id) if shard is not None else None
        if session is None:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= 13):
            return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(fetch_data, to_forget)
        if not session.partitions:
            shard.remove(session.id)
            return SessionlessContext(fetch_data)
        shard.touch(session, now)
        session.epoch = next_epoch(session.epoch)
        return IncrementalContext(session, epoch, topic_name,
                                  is_follower and len(fetch_data) < len(session.partitions))
