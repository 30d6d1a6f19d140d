"""ShareFetch (key 78): a share group member fetches (and acknowledges) records.

Versions 1-2 (v2: ShareAcquireMode and RENEW acknowledgements, ``IsRenewAck``), as
Kafka 4.2's KafkaApis.handleShareFetchRequest:
- UNSUPPORTED_VERSION while share groups are off (``group.coordinator.rebalance.protocols``
  does not name ``share``), GROUP_AUTHORIZATION_FAILED without READ on the group: the
  error alone, no partitions, AcquisitionLockTimeoutMs 0.
- The share session (``SharePartitionManager.new_context``): its errors
  (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, INVALID_REQUEST for
  acknowledgements in an opening request) answer the same way; SHARE_SESSION_LIMIT_REACHED
  only after ``MaxWaitMs`` (Kafka's idle share fetch timer), so a refused client does not
  spin.
- Topics need READ: partitions of a refused topic answer TOPIC_AUTHORIZATION_FAILED,
  of an unknown topic id UNKNOWN_TOPIC_ID, of an unknown partition
  UNKNOWN_TOPIC_OR_PARTITION, for the fetch and for their acknowledgements alike.
- Piggy-backed acknowledgements are checked as Kafka checks them (first <= last, batches
  in order, one type per offset or one for the batch, types 0-3, 0-4 from v2: else
  INVALID_REQUEST for the partition), applied before the fetch reads and written through
  the persister before the answer; each partition's outcome is its AcknowledgeErrorCode
  (a partition acknowledged but not answered by the fetch is added with no records).
- The fetch reads the session's partitions (the request's for epoch 0, none for -1,
  none when ``IsRenewAck``: such a request only acknowledges); in a running session a
  partition is answered only with records, an error, or when new.  MaxBytes is capped
  by ``fetch.max.bytes`` and MinBytes by MaxBytes; MaxRecords, BatchSize and the acquire
  mode go to the share partitions.
- NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH name the current leader (CurrentLeader,
  with its endpoint in NodeEndpoints); other partitions carry leader 0 epoch 0 (Kafka's
  defaults).  AcquisitionLockTimeoutMs is the group's record lock duration.
- Epoch -1 closes the session after answering: the member's acquired records of its
  session partitions are released.  So does the end of the connection that opened the
  session (epoch 0), as in Kafka 4.2: the session is tied to it (``ctx.on_close``), and
  moves to the connection that opens it again.
Record bytes go from the segment files with sendfile on plain connections (the marker
mechanism of ``kafkapy.network.zero_copy``), else they are copied into the response.
"""
from __future__ import annotations

from kafkapy.metrics import counters as metrics
from kafkapy.network.zero_copy import ZeroCopyResponse, new_marker
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.share_group_apis import ShareFetchResponse
from kafkapy.replication.fetch_session import TopicIdPartition
from kafkapy.security import authz
from kafkapy.share.manager import PartitionFetch, ShareFetchParams
from kafkapy.share.partition import AcknowledgementBatch, AcquireMode
from kafkapy.share.session import (FINAL_EPOCH, INITIAL_EPOCH, SHARE_SESSION_LIMIT_REACHED,
                                   PartitionAnswer, ShareSessionKey)

API_KEY = 78
MIN_VERSION = 1
MAX_VERSION = 2

SHARE_PROTOCOL = "share"
_RENEW_FROM = 2
_LEADER_HINT_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)

_Topic = ShareFetchResponse.ShareFetchableTopicResponse
_Partition = _Topic.PartitionData
_Acquired = _Partition.AcquiredRecords
_Leader = _Partition.LeaderIdAndEpoch


def share_groups_enabled(config) -> bool:
    """Share groups are served while ``group.coordinator.rebalance.protocols`` names
    ``share`` (kafkapy's stand-in for Kafka's ``share.version`` feature)."""
    return any(p.strip().lower() == SHARE_PROTOCOL
               for p in config["group.coordinator.rebalance.protocols"])


def refusal(ctx, group_id: str | None) -> int:
    """KafkaApis' request-level checks of ShareFetch and ShareAcknowledge: the error, or 0."""
    if ctx.services.share_partitions is None or not share_groups_enabled(ctx.services.config):
        return ErrorCode.UNSUPPORTED_VERSION
    if not authz.allowed(ctx, authz.READ, authz.GROUP, group_id or ""):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return 0


async def handle(ctx, request):
    refused = refusal(ctx, request.group_id)
    if refused:
        return _error_response(ctx, refused)
    manager = ctx.services.share_partitions
    names = ctx.services.cache.topic_name
    partitions = [TopicIdPartition(t.topic_id, names(t.topic_id), p.partition_index)
                  for t in request.topics for p in t.partitions]
    forgotten = [TopicIdPartition(t.topic_id, names(t.topic_id), index)
                 for t in request.forgotten_topics_data or () for index in t.partitions]
    acknowledging = any(p.acknowledgement_batches for t in request.topics for p in t.partitions)
    try:
        context = manager.new_context(request.group_id, request.member_id,
                                      request.share_session_epoch, partitions, forgotten,
                                      acknowledging)
    except KafkaError as err:
        if err.code == SHARE_SESSION_LIMIT_REACHED:
            await manager.idle_wait(request.max_wait_ms)
        return _error_response(ctx, err.code)
    if request.share_session_epoch == INITIAL_EPOCH:
        _close_with_connection(ctx, manager, request.group_id, request.member_id)
    session_partitions = context.partitions(names)
    allowed = authz.filter_allowed(ctx, authz.READ, authz.TOPIC, {
        tip.topic for tip in session_partitions + partitions if tip.topic is not None})
    acknowledged: dict[TopicIdPartition, int] = {}
    if acknowledging:
        acknowledged = await acknowledge(ctx, request.group_id, request.member_id,
                                         _acknowledgements(request, names), allowed)
    fetched = await _fetch(ctx, request, session_partitions, allowed)
    response = _response(ctx, request, context, fetched, acknowledged)
    if request.share_session_epoch == FINAL_EPOCH:
        manager.release_session(request.group_id, request.member_id)
    return response


def _close_with_connection(ctx, manager, group_id: str, member_id: str) -> None:
    """Tie the session just opened to this request's connection: its end closes the
    session and releases the member's acquired records (Kafka's connection disconnect
    listener of the ShareSessionCache)."""
    def release() -> None:
        manager.release_session(group_id, member_id)
    manager.sessions.bind(ShareSessionKey(group_id, member_id), ctx.on_close(release))


async def acknowledge(ctx, group_id: str, member_id: str, acknowledgements: list,
                      allowed: set[str]) -> dict[TopicIdPartition, int]:
    """Kafka's handleAcknowledgements: each partition's acknowledge error code, checked
    and applied (``acknowledgements``: (TopicIdPartition, [AcknowledgementBatch]))."""
    results: dict[TopicIdPartition, int] = {}
    interested: dict[TopicIdPartition, list[AcknowledgementBatch]] = {}
    max_type = 4 if ctx.api_version >= _RENEW_FROM else 3
    cache = ctx.services.cache
    for tip, batches in acknowledgements:
        if tip.topic is None:
            results[tip] = ErrorCode.UNKNOWN_TOPIC_ID
        elif not _well_formed(batches, max_type):
            results[tip] = ErrorCode.INVALID_REQUEST
        elif tip.topic not in allowed:
            results[tip] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif cache.partition(tip.topic, tip.partition) is None:
            results[tip] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif not batches:
            results[tip] = ErrorCode.NO_ERROR
        else:
            interested[tip] = batches
    if interested:
        results.update(await ctx.services.share_partitions.acknowledge(
            group_id, member_id, interested))
    return results


def _acknowledgements(request, names) -> list[tuple[TopicIdPartition, list]]:
    out = []
    for topic in request.topics:
        name = names(topic.topic_id)
        for p in topic.partitions:
            if p.acknowledgement_batches:
                out.append((TopicIdPartition(topic.topic_id, name, p.partition_index),
                            decoded_batches(p.acknowledgement_batches)))
    return out


def decoded_batches(batches) -> list[AcknowledgementBatch]:
    return [AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types or ()))
            for b in batches]


def _well_formed(batches: list[AcknowledgementBatch], max_type: int) -> bool:
    """Kafka's validateAcknowledgementBatches for one partition."""
    previous_last = -1
    for b in batches:
        size = b.last_offset - b.first_offset + 1
        if (b.first_offset > b.last_offset or b.first_offset < previous_last
                or not b.acknowledge_types
                or (len(b.acknowledge_types) > 1 and len(b.acknowledge_types) != size)
                or any(t < 0 or t > max_type for t in b.acknowledge_types)):
            return False
        previous_last = b.last_offset
    return True


async def _fetch(ctx, request, partitions: list[TopicIdPartition], allowed: set[str]
                 ) -> dict[TopicIdPartition, PartitionFetch]:
    """Kafka's handleFetchFromShareFetchRequest: the erroneous partitions and the read."""
    cache = ctx.services.cache
    results: dict[TopicIdPartition, PartitionFetch] = {}
    interested = []
    for tip in partitions:
        if tip.topic is None:
            results[tip] = PartitionFetch(error_code=ErrorCode.UNKNOWN_TOPIC_ID)
        elif tip.topic not in allowed:
            results[tip] = PartitionFetch(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif cache.partition(tip.topic, tip.partition) is None:
            results[tip] = PartitionFetch(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        else:
            interested.append(tip)
    if interested and not (ctx.api_version >= _RENEW_FROM and request.is_renew_ack):
        fetched = await ctx.services.share_partitions.fetch_messages(
            request.group_id, request.member_id, _params(ctx, request), interested,
            request.share_session_epoch)
        results.update(fetched)
    return {tip: results[tip] for tip in partitions if tip in results}


def _params(ctx, request) -> ShareFetchParams:
    max_bytes = min(request.max_bytes, ctx.services.config["fetch.max.bytes"])
    mode = request.share_acquire_mode if ctx.api_version >= 2 else AcquireMode.BATCH_OPTIMIZED
    return ShareFetchParams(max_wait_ms=request.max_wait_ms,
                            min_bytes=min(request.min_bytes, max_bytes), max_bytes=max_bytes,
                            max_records=request.max_records, batch_size=request.batch_size,
                            acquire_mode=mode)


def _response(ctx, request, context, fetched: dict[TopicIdPartition, PartitionFetch],
              acknowledged: dict[TopicIdPartition, int]):
    """The fetched partitions the session lets through, then the acknowledgements."""
    items = list(fetched.items())
    kept = context.answered([(tip, PartitionAnswer(f.error_code, f.size)) for tip, f in items])
    slices: dict[bytes, list] = {}
    endpoints: dict[int, object] = {}
    topics: list = []
    index: dict[tuple, object] = {}
    for i in kept:
        tip, answer = items[i]
        data = _partition(ctx, tip, answer, slices, endpoints)
        data.acknowledge_error_code = acknowledged.pop(tip, ErrorCode.NO_ERROR)
        _add(topics, tip, data)
        index[(tip.topic_id, tip.partition)] = data
    for tip, code in acknowledged.items():
        if (tip.topic_id, tip.partition) in index:
            index[(tip.topic_id, tip.partition)].acknowledge_error_code = code
            continue
        _add(topics, tip, _Partition(partition_index=tip.partition, error_code=0,
                                     acknowledge_error_code=code, records=b"",
                                     current_leader=_Leader(leader_id=0, leader_epoch=0),
                                     acquired_records=[]))
    response = ctx.response(
        throttle_time_ms=0, error_code=0, error_message=None,
        acquisition_lock_timeout_ms=ctx.services.share_partitions.record_lock_duration_ms(
            request.group_id),
        responses=topics, node_endpoints=list(endpoints.values()))
    return ZeroCopyResponse(response, slices) if slices else response


def _partition(ctx, tip: TopicIdPartition, answer: PartitionFetch, slices, endpoints):
    leader = _Leader(leader_id=0, leader_epoch=0)
    if answer.error_code in _LEADER_HINT_ERRORS:
        leader = leader_hint(ctx, tip, endpoints, _Leader, ShareFetchResponse.NodeEndpoint)
    return _Partition(partition_index=tip.partition, error_code=answer.error_code,
                      error_message=None, acknowledge_error_code=0,
                      acknowledge_error_message=None, current_leader=leader,
                      records=_records(ctx, tip, answer, slices),
                      acquired_records=[_Acquired(first_offset=a.first_offset,
                                                  last_offset=a.last_offset,
                                                  delivery_count=a.delivery_count)
                                        for a in answer.acquired])


def _records(ctx, tip: TopicIdPartition, answer: PartitionFetch, slices) -> bytes:
    size = answer.size
    if not size:
        return b""
    metrics.fetched(tip.topic, size)
    if ctx.zero_copy:
        marker = new_marker()
        slices[marker] = answer.records
        return marker
    metrics.BROKER.copied_bytes += size
    return answer.read_bytes()


def leader_hint(ctx, tip: TopicIdPartition, endpoints, leader_cls, endpoint_cls):
    """The partition's leader and epoch as this broker knows them; its endpoint."""
    services = ctx.services
    leader, epoch = services.replica_manager.leader_and_epoch(tip.topic, tip.partition)
    node = services.cache.brokers_for(ctx.listener).get(leader)
    if node is not None:
        endpoints[leader] = endpoint_cls(node_id=node.node_id, host=node.host, port=node.port,
                                         rack=node.rack)
    return leader_cls(leader_id=leader, leader_epoch=epoch)


def _add(topics: list, tip: TopicIdPartition, data) -> None:
    """Append to the last topic if it is the same one, else start a topic."""
    if topics and topics[-1].topic_id == tip.topic_id:
        topics[-1].partitions.append(data)
    else:
        topics.append(_Topic(topic_id=tip.topic_id, partitions=[data]))


def _error_response(ctx, code: int):
    """Kafka's ShareFetchRequest.getErrorResponse: the error, nothing else."""
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=None,
                        acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])
