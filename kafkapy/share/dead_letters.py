"""Dead-letter topics of share groups (KIP-1191's names; beyond Kafka 4.2).

A share group whose config ``errors.deadletterqueue.topic.name`` names a topic T gets
the records it gives up on (REJECTed, or released or timed out at the delivery count
limit) copied to T before they are archived.  T is used only when it starts with the
broker's ``errors.deadletterqueue.topic.name.prefix`` (default ``dlq.``), exists, and
has the topic config ``errors.deadletterqueue.group.enable=true``; otherwise the records
are archived as Kafka archives them (``DeadLetterWriter.target`` answers None).

A dead-letter record is the source record's key, value and headers, timestamped when it
is written (so the dead-letter topic's retention counts from then), plus these headers
(UTF-8 strings): ``__dlq.errors.topic``, ``__dlq.errors.partition``,
``__dlq.errors.offset``, ``__dlq.errors.group``, ``__dlq.errors.delivery.count`` and
``__dlq.errors.reason`` (``rejected`` | ``delivery_count_limit``).  It goes to T's
partition ``source partition mod T's partition count`` (so each source partition's dead
letters stay in order and can be looked for in one place), uncompressed, without a
producer id, with acks=-1: through the replica manager when this broker leads that
partition, else in a Produce v9 to its leader over ``BrokerConnection``.  Reading the
source records is the one place a share-partition leader decodes records: only the
dead-lettered ones, in their batches.

Exactly once (each record lands in T once, whatever fails):
1. ``SharePartition`` keeps a record it gives up on *pending*: never delivered again,
   persisted as AVAILABLE at (at least) the delivery count limit, which a new leader
   loading the state turns back into pending (never into a delivery).
2. The manager persists that pending state before the append, so the append never
   happens for a state a failover could forget.
3. After the append is acknowledged (acks=-1: replicated to the ISR) the manager
   confirms the records (archived for good) and persists again.
4. The append is *verified* first whenever it may already have happened: for records a
   new leader found pending when it loaded the state (the old leader may have died
   between steps 2 and 3), and for records whose earlier append had an unknown outcome
   (timeout, lost connection, an error after the append).  Verifying first waits until
   T's chosen partition has committed what its leader held when the verification began
   (the high watermark reaches that log end: an earlier append may still wait there for
   a follower, the dead broker among them), then reads it from its log start to its
   high watermark and collects the offsets whose ``__dlq.errors.group/topic/partition``
   headers name the source; those are confirmed without appending.  An append that
   failed for sure (refused before it was written) is simply retried.
So a record is appended only when no copy exists that may yet be committed, and
confirmed only once a copy is committed.  The verification's cost is a read of T's
partition, paid only after a failover or an uncertain append.  (An append still on its
way from a deposed leader that is alive, not yet at T's leader when the verification
begins, is not seen: fencing it would take a producer epoch.)
"""
from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import structlog

from kafkapy.network.client import BrokerConnection
from kafkapy.network.links import Links
from kafkapy.protocol.errors import ErrorCode, KafkaError, error_name
from kafkapy.protocol.messages import REQUESTS
from kafkapy.records.batch import iter_headers
from kafkapy.records.record import Record, build_batch, decode_records

_log = structlog.get_logger("kafkapy.share.dead_letters")

HEADER_TOPIC = "__dlq.errors.topic"
HEADER_PARTITION = "__dlq.errors.partition"
HEADER_OFFSET = "__dlq.errors.offset"
HEADER_GROUP = "__dlq.errors.group"
HEADER_DELIVERY_COUNT = "__dlq.errors.delivery.count"
HEADER_REASON = "__dlq.errors.reason"

ENABLE_KEY = "errors.deadletterqueue.group.enable"
PREFIX_KEY = "errors.deadletterqueue.topic.name.prefix"

_PRODUCE_VERSION = 9
_FETCH_VERSION = 11
_LIST_OFFSETS_VERSION = 4
_OFFSET_FOR_LEADER_EPOCH_VERSION = 4
_EARLIEST = -2
_LATEST = -1
_SETTLE_POLL_S = 0.05       # between looks at an uncommitted dead-letter partition
_READ_CHUNK = 1024 * 1024
_RECORD_OVERHEAD = 96       # a record's varints and the dead-letter headers' names, roughly
# Errors after which the append may have happened (or be committed later).
_SURE_REFUSALS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
    ErrorCode.INVALID_RECORD, ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.INVALID_TIMESTAMP,
    ErrorCode.LEADER_NOT_AVAILABLE})


class DeadLetterSource(NamedTuple):
    """Where dead letters come from: a share group's partition."""

    group_id: str
    topic: str
    partition: int


class DeadLetter(NamedTuple):
    """Records to copy: an inclusive offset range, their delivery count and the reason."""

    first_offset: int
    last_offset: int
    delivery_count: int
    reason: str


class DeadLetterError(Exception):
    """The append failed; ``uncertain``: it may have happened all the same."""

    def __init__(self, message: str, uncertain: bool) -> None:
        super().__init__(message)
        self.uncertain = uncertain


def dead_letter_headers(source: DeadLetterSource, offset: int, delivery_count: int,
                        reason: str) -> list[tuple[str, bytes]]:
    """The ``__dlq.errors.*`` headers of one dead-letter record."""
    return [(HEADER_TOPIC, source.topic.encode()),
            (HEADER_PARTITION, str(source.partition).encode()),
            (HEADER_OFFSET, str(offset).encode()),
            (HEADER_GROUP, source.group_id.encode()),
            (HEADER_DELIVERY_COUNT, str(delivery_count).encode()),
            (HEADER_REASON, reason.encode())]


def named_source_offset(record: Record, source: DeadLetterSource) -> int | None:
    """The source offset a dead-letter record names, when it names ``source``."""
    values = {name: value for name, value in record.headers
              if name.startswith("__dlq.errors.") and value is not None}
    try:
        if (values.get(HEADER_GROUP) != source.group_id.encode()
                or values.get(HEADER_TOPIC) != source.topic.encode()
                or int(values.get(HEADER_PARTITION, b"-1")) != source.partition):
            return None
        return int(values[HEADER_OFFSET])
    except (KeyError, ValueError):
        return None


def target_refusal(name: str, prefix: str, topic_config: dict | None) -> str | None:
    """Why ``name`` may not be a dead-letter topic, or None when it may."""
    if not name.startswith(prefix):
        return f"does not start with {PREFIX_KEY} {prefix!r}"
    if topic_config is None:
        return "does not exist"
    if not topic_config.get(ENABLE_KEY, False):
        return f"has {ENABLE_KEY}=false"
    return None


@dataclass(slots=True)
class _Data:
    """A Produce partition's data as the replica manager takes it."""

    index: int
    records: bytes


class DeadLetterWriter:
    """Appends dead letters and looks for them; see the module docstring.

    ``topic_config_of(name)``: a topic's effective config, None when it does not exist.
    ``endpoint_of(broker id)``: the broker's (host, port) on the inter-broker listener.
    ``connect(host, port)``: a connected ``BrokerConnection`` (tests may stand in)."""

    def __init__(self, *, replica_manager, cache, config,
                 topic_config_of: Callable[[str], dict | None],
                 clock, endpoint_of: Callable[[int], tuple[str, int] | None],
                 connect: Callable[[str, int], Any] | None = None,
                 timeout_ms: int = 30000, links: Links | None = None) -> None:
        """``links``: which leaders are reachable (None: all)."""
        self._replicas = replica_manager
        self._cache = cache
        self._config = config
        self._topic_config_of = topic_config_of
        self._clock = clock
        self._endpoint_of = endpoint_of
        self._connect = connect or functools.partial(_connect, links=links)
        self._timeout_ms = timeout_ms
        self._refused: dict[str, str] = {}      # names already warned about

    # -- the target ---------------------------------------------------------------------
    def target(self, name: str | None) -> str | None:
        """``name`` when it may be used as a dead-letter topic now, else None."""
        if not name:
            return None
        reason = target_refusal(name, self._config[PREFIX_KEY], self._topic_config_of(name))
        if reason is None:
            self._refused.pop(name, None)
            return name
        if self._refused.get(name) != reason:
            self._refused[name] = reason
            _log.warning("dead-letter topic refused; records are archived without it",
                         topic=name, reason=reason)
        return None

    def partition_for(self, target: str, source: DeadLetterSource) -> int:
        meta = self._cache.topic(target)
        count = len(meta.partitions) if meta is not None and meta.partitions else 1
        return source.partition % count

    # -- writing --------------------------------------------------------------------------
    async def write(self, source: DeadLetterSource, log, target: str,
                    letters: Sequence[DeadLetter], verify: bool) -> list[tuple[int, int]]:
        """Copy the records of ``letters`` from ``log`` (the source partition's) to
        ``target``; answers the ranges now in it (appended, found there, or gone from the
        source log).  Raises DeadLetterError when the append failed."""
        index = self.partition_for(target, source)
        found: set[int] = set()
        if verify:
            found = await self._find(target, index, source)
        records = _source_records(log, letters, found)
        if records:
            for batch in self._batches(records, source, target):
                await self._append(target, index, batch)
        return [(letter.first_offset, letter.last_offset) for letter in letters]

    def _batches(self, records: list[tuple[Record, DeadLetter]], source: DeadLetterSource,
                 target: str) -> list[bytes]:
        config = self._topic_config_of(target) or {}
        limit = max(1024, int(config.get("max.message.bytes", 1048588)) - 1024)
        batches, current, size = [], [], 0
        now = self._clock.time_ms()
        for record, letter in records:
            entry = (record.key, record.value,
                     list(record.headers) + dead_letter_headers(
                         source, record.offset, letter.delivery_count, letter.reason),
                     now)
            weight = (len(record.key or b"") + len(record.value or b"") + _RECORD_OVERHEAD
                      + sum(len(k) + len(v or b"") for k, v in record.headers))
            if current and size + weight > limit:
                batches.append(build_batch(current))
                current, size = [], 0
            current.append(entry)
            size += weight
        if current:
            batches.append(build_batch(current))
        return batches

    async def _append(self, target: str, index: int, batch: bytes) -> None:
        if self._replicas.is_leader(target, index):
            results = self._replicas.append_records(
                [(target, _Data(index, batch))], [None], required_acks=-1,
                timeout_ms=self._timeout_ms, produce_version=_PRODUCE_VERSION,
                internal_topics_allowed=False, transactional_id=None,
                respond=lambda answered: answered)
            if inspect.isawaitable(results):     # acks=-1 waits for the high watermark
                results = await results
            _raise_for(results[0][2].error_code, target, index)
            return
        await self._produce_remote(target, index, batch)

    async def _produce_remote(self, target: str, index: int, batch: bytes) -> None:
        produce = REQUESTS[0]
        request = produce(version=_PRODUCE_VERSION, transactional_id=None, acks=-1,
                          timeout_ms=self._timeout_ms, topic_data=[produce.TopicProduceData(
                              name=target, partition_data=[
                                  produce.TopicProduceData.PartitionProduceData(
                                      index=index, records=batch)])])
        try:
            response = await self._request(target, index, request)
        except KafkaError as err:
            raise DeadLetterError(f"no leader for {target}-{index}: {err}", uncertain=False)
        except (ConnectionError, OSError, asyncio.TimeoutError) as err:
            raise DeadLetterError(f"produce to {target}-{index} failed: {err!r}", uncertain=True)
        _raise_for(response.responses[0].partition_responses[0].error_code, target, index)

    # -- looking for earlier copies ---------------------------------------------------------
    async def _find(self, target: str, index: int, source: DeadLetterSource) -> set[int]:
        """The source offsets that dead-letter records in ``target``-``index`` name, up to
        its high watermark, once that covers what its leader held when the search began
        (``_settle``)."""
        try:
            await self._settle(target, index)
            if self._replicas.is_leader(target, index):
                batches = _local_batches(self._replicas.partitions[(target, index)])
            else:
                batches = await self._remote_batches(target, index)
        except (KafkaError, ConnectionError, OSError, asyncio.TimeoutError) as err:
            raise DeadLetterError(f"cannot read {target}-{index}: {err!r}", uncertain=True)
        found = set()
        for data, position in batches:
            for record in decode_records(data, position):
                offset = named_source_offset(record, source)
                if offset is not None:
                    found.add(offset)
        return found

    async def _settle(self, target: str, index: int) -> None:
        """Wait until the partition's high watermark reaches its leader's log end as it was
        when the wait began (again from the new log end when the leader epoch moves).  An
        earlier leader's copy may sit in the leader's log uncommitted -- its acks=-1 append
        still waiting for a follower, as when that follower is the broker that died -- and
        a search up to the high watermark alone would miss it, append a second copy, and
        see both committed.  Past ``timeout_ms``: DeadLetterError (uncertain; searched
        again at the next round)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_ms / 1000.0
        epoch = end = None
        while True:
            leader_epoch, log_end, high_watermark = await self._ends(target, index)
            if leader_epoch != epoch:
                epoch, end = leader_epoch, log_end
            if high_watermark >= end:
                return
            if loop.time() >= deadline:
                raise DeadLetterError(f"{target}-{index}: records below {end} not committed "
                                      f"yet (high watermark {high_watermark})", uncertain=True)
            await asyncio.sleep(_SETTLE_POLL_S)

    async def _ends(self, target: str, index: int) -> tuple[int, int, int]:
        """(leader epoch, log end offset, high watermark) of the partition at its leader:
        read here when this broker leads it, else asked of the leader -- ListOffsets for
        the latest offset (the high watermark) and the leader's epoch, then
        OffsetForLeaderEpoch for that epoch's end (the log end while it is the latest)."""
        if self._replicas.is_leader(target, index):
            partition = self._replicas.partitions[(target, index)]
            return partition.leader_epoch, partition.log.log_end_offset, partition.high_watermark
        high_watermark, epoch = await self._list_offset(target, index, _LATEST)
        ends = REQUESTS[23]
        answer = await self._request(target, index, ends(
            version=_OFFSET_FOR_LEADER_EPOCH_VERSION, replica_id=-1, topics=[
                ends.OffsetForLeaderTopic(topic=target, partitions=[
                    ends.OffsetForLeaderTopic.OffsetForLeaderPartition(
                        partition=index, current_leader_epoch=-1, leader_epoch=epoch)])]))
        partition = answer.topics[0].partitions[0]
        if partition.error_code:
            raise KafkaError(partition.error_code)
        return epoch, partition.end_offset, high_watermark

    async def _list_offset(self, target: str, index: int, timestamp: int) -> tuple[int, int]:
        """(offset, leader epoch) the leader lists for ``timestamp`` (earliest, latest)."""
        listed = REQUESTS[2]
        answer = await self._request(target, index, listed(
            version=_LIST_OFFSETS_VERSION, replica_id=-1, isolation_level=0, topics=[
                listed.ListOffsetsTopic(name=target, partitions=[
                    listed.ListOffsetsTopic.ListOffsetsPartition(
                        partition_index=index, current_leader_epoch=-1,
                        timestamp=timestamp)])]))
        partition = answer.topics[0].partitions[0]
        if partition.error_code:
            raise KafkaError(partition.error_code)
        return partition.offset, partition.leader_epoch

    async def _remote_batches(self, target: str, index: int) -> list[tuple[bytes, int]]:
        offset, _ = await self._list_offset(target, index, _EARLIEST)
        out = []
        while True:
            data, high_watermark = await self._fetch_once(target, index, offset)
            chunk = [(data, h.position) for h in iter_headers(data)
                     if h.magic == 2 and not h.is_control]
            headers = list(iter_headers(data))
            out += chunk
            if not headers or headers[-1].next_offset >= high_watermark:
                return out
            offset = headers[-1].next_offset

    async def _fetch_once(self, target: str, index: int, offset: int) -> tuple[bytes, int]:
        fetch = REQUESTS[1]
        request = fetch(version=_FETCH_VERSION, replica_id=-1, max_wait_ms=0, min_bytes=0,
                        max_bytes=_READ_CHUNK, isolation_level=0, session_id=0,
                        session_epoch=-1, topics=[fetch.FetchTopic(topic=target, partitions=[
                            fetch.FetchTopic.FetchPartition(
                                partition=index, current_leader_epoch=-1, fetch_offset=offset,
                                last_fetched_epoch=-1, log_start_offset=-1,
                                partition_max_bytes=_READ_CHUNK)])],
                        forgotten_topics_data=[], rack_id="")
        response = await self._request(target, index, request)
        partition = response.responses[0].partitions[0]
        if partition.error_code:
            raise KafkaError(partition.error_code)
        return bytes(partition.records or b""), partition.high_watermark

    async def _request(self, target: str, index: int, request):
        state = self._cache.partition(target, index)
        endpoint = self._endpoint_of(state.leader) if state is not None else None
        if endpoint is None:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE)
        conn = await self._connect(*endpoint)
        try:
            return await conn.send(request, timeout_s=self._timeout_ms / 1000.0)
        finally:
            conn.close()


def _raise_for(code: int, target: str, index: int) -> None:
    if code:
        raise DeadLetterError(f"append to {target}-{index} answered {error_name(code)}",
                              uncertain=code not in _SURE_REFUSALS)


async def _connect(host: str, port: int, links: Links | None = None) -> BrokerConnection:
    conn = BrokerConnection(client_id="kafkapy-share-dead-letters", links=links)
    await conn.connect(host, port)
    return conn


def _source_records(log, letters: Sequence[DeadLetter], skip: set[int]
                    ) -> list[tuple[Record, DeadLetter]]:
    """The source records of ``letters`` (offset order), without those in ``skip``; records
    the log no longer has are left out."""
    out: list[tuple[Record, DeadLetter]] = []
    for letter in letters:
        offset = max(letter.first_offset, log.log_start_offset)
        while offset <= letter.last_offset and offset < log.log_end_offset:
            data = b"".join(s.read_bytes() for s in log.read(offset, _READ_CHUNK))
            headers = list(iter_headers(data))
            if not headers:
                break
            for header in headers:
                if header.magic != 2 or header.is_control or header.last_offset < offset:
                    continue
                for record in decode_records(data, header.position):
                    if (offset <= record.offset <= letter.last_offset
                            and record.offset not in skip):
                        out.append((record, letter))
            offset = max(offset, headers[-1].next_offset)
    return out


def _local_batches(partition) -> list[tuple[bytes, int]]:
    """The data batches of a local partition from its log start to its high watermark."""
    log = partition.log
    offset, end, out = log.log_start_offset, partition.high_watermark, []
    while offset < end:
        data = b"".join(s.read_bytes() for s in log.read(offset, _READ_CHUNK, end))
        headers = list(iter_headers(data))
        if not headers:
            break
        out += [(data, h.position) for h in headers if h.magic == 2 and not h.is_control]
        offset = headers[-1].next_offset
    return out
