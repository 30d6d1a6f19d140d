"""ShareAcknowledge (key 79): a share group member acknowledges records outside a fetch.

Versions 1-2 (v2: RENEW acknowledgements and AcquisitionLockTimeoutMs), as Kafka 4.2's
KafkaApis.handleShareAcknowledgeRequest:
- UNSUPPORTED_VERSION while share groups are off, GROUP_AUTHORIZATION_FAILED without
  READ on the group (``share_fetch.refusal``): the error alone.
- The share session (``SharePartitionManager.acknowledge_session_update``): epoch 0 is
  INVALID_SHARE_SESSION_EPOCH, an unknown session SHARE_SESSION_NOT_FOUND, another epoch
  than the session's INVALID_SHARE_SESSION_EPOCH; n > 0 moves the session's epoch on,
  -1 closes the session once the acknowledgements are applied (the member's other
  acquired records in its session partitions are released).
- Each partition answers as ShareFetch's acknowledgements do (UNKNOWN_TOPIC_ID,
  INVALID_REQUEST, TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION, the share
  partition's INVALID_RECORD_STATE ...), after the new state is written through the
  persister; NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH name the current leader.
"""
from __future__ import annotations

from kafkapy.handlers.share_fetch import acknowledge, decoded_batches, leader_hint, refusal
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.share_group_apis import ShareAcknowledgeResponse
from kafkapy.replication.fetch_session import TopicIdPartition
from kafkapy.security import authz
from kafkapy.share.session import FINAL_EPOCH

API_KEY = 79
MIN_VERSION = 1
MAX_VERSION = 2

_LOCK_TIMEOUT_FROM = 2
_LEADER_HINT_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)
_Topic = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse
_Partition = _Topic.PartitionData
_Leader = _Partition.LeaderIdAndEpoch


async def handle(ctx, request):
    refused = refusal(ctx, request.group_id)
    if refused:
        return _error_response(ctx, refused)
    manager = ctx.services.share_partitions
    epoch = request.share_session_epoch
    try:
        manager.acknowledge_session_update(request.group_id, request.member_id, epoch)
    except KafkaError as err:
        return _error_response(ctx, err.code)
    names = ctx.services.cache.topic_name
    acknowledgements = [(TopicIdPartition(t.topic_id, names(t.topic_id), p.partition_index),
                         decoded_batches(p.acknowledgement_batches or ()))
                        for t in request.topics for p in t.partitions]
    allowed = authz.filter_allowed(ctx, authz.READ, authz.TOPIC, {
        tip.topic for tip, _ in acknowledgements if tip.topic is not None})
    results = await acknowledge(ctx, request.group_id, request.member_id, acknowledgements,
                                allowed)
    if epoch == FINAL_EPOCH:
        manager.release_session(request.group_id, request.member_id)
    return _response(ctx, request, [(tip, results[tip]) for tip, _ in acknowledgements])


def _response(ctx, request, results: list[tuple[TopicIdPartition, int]]):
    endpoints: dict[int, object] = {}
    topics: list = []
    for tip, code in results:
        leader = _Leader(leader_id=0, leader_epoch=0)
        if code in _LEADER_HINT_ERRORS:
            leader = leader_hint(ctx, tip, endpoints, _Leader,
                                 ShareAcknowledgeResponse.NodeEndpoint)
        data = _Partition(partition_index=tip.partition, error_code=code, error_message=None,
                          current_leader=leader)
        if topics and topics[-1].topic_id == tip.topic_id:
            topics[-1].partitions.append(data)
        else:
            topics.append(_Topic(topic_id=tip.topic_id, partitions=[data]))
    lock_timeout = 0
    if ctx.api_version >= _LOCK_TIMEOUT_FROM:
        lock_timeout = ctx.services.share_partitions.record_lock_duration_ms(request.group_id)
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None,
                        acquisition_lock_timeout_ms=lock_timeout, responses=topics,
                        node_endpoints=list(endpoints.values()))


def _error_response(ctx, code: int):
    """Kafka's ShareAcknowledgeRequest.getErrorResponse: the error, nothing else."""
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=None,
                        acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])
