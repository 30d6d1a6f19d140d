"""ElectLeaders (key 43): preferred or unclean leader election on request (KIP-460).

Versions 0-2 (Kafka 3.9 and 4.0); v0 has no election type and means preferred.
An election type other than 0 and 1 gets INVALID_REQUEST for every partition.
Otherwise, as Kafka 3.9's ZooKeeper-mode KafkaApis / ReplicaManager.electLeaders:
the partitions (those named; null: every partition this broker's metadata cache
knows) go to the controller (``services.controller.elect_leaders``), which decides
per partition as Kafka's processReplicaLeaderElection:
- not the active controller -> NOT_CONTROLLER (top-level error NONE);
- unknown partition -> UNKNOWN_TOPIC_OR_PARTITION "The partition does not exist.";
- topic being deleted -> INVALID_TOPIC_EXCEPTION "The topic is being deleted";
- PREFERRED (0): the leader already is the first assigned replica ->
  ELECTION_NOT_NEEDED; otherwise the preferred replica becomes leader if it
  is live and in the ISR, else PREFERRED_LEADER_NOT_AVAILABLE;
- UNCLEAN (1): a live leader -> ELECTION_NOT_NEEDED; otherwise a live ISR
  replica, or (unclean) a live replica, else ELIGIBLE_LEADERS_NOT_AVAILABLE;
- a successful election answers NONE once this broker's metadata cache shows the
  new leader (Kafka's DelayedElectLeader), else REQUEST_TIMED_OUT at timeout_ms.
A request naming no partitions (null) leaves out of its answer the partitions
answered ELECTION_NOT_NEEDED, as Kafka's broker does.
"""
from __future__ import annotations

import asyncio

from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import RESPONSES

API_KEY = 43
MIN_VERSION = 0
MAX_VERSION = 2

PREFERRED = 0
UNCLEAN = 1

_R = RESPONSES[API_KEY]
_Topic = _R.ReplicaElectionResult
_Partition = _Topic.PartitionResult

NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."
STRATEGY_NAMES = {PREFERRED: "PreferredReplicaPartitionLeaderElectionStrategy",
                  UNCLEAN: "OfflinePartitionLeaderElectionStrategy(true)"}


async def handle(ctx, request):
    election = request.election_type if ctx.api_version >= 1 else PREFERRED
    named = request.topic_partitions is not None
    wanted = (_named(request.topic_partitions) if named else _every_partition(ctx.services))
    if not authz.cluster(ctx, authz.ALTER):
        return _refuse(ctx, wanted, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    if election not in STRATEGY_NAMES:
        return _refuse(ctx, wanted, ErrorCode.INVALID_REQUEST,
                       f"Unknown election type {election}")
    partitions = [(topic, index) for topic, indexes in wanted.items() for index in indexes]
    loop = asyncio.get_running_loop()
    # Kafka's deadline runs from before the controller's turn (ReplicaManager.electLeaders).
    deadline = loop.time() + request.timeout_ms / 1000.0
    outcome = await ctx.services.controller.elect_leaders(election, partitions)
    results = {tp: (int(v[0]), v[1]) for tp, v in outcome.items()}
    remaining_ms = int(max(0.0, deadline - loop.time()) * 1000)
    late = await _await_leaders(ctx.services, election, outcome, remaining_ms)
    for tp in late:
        results[tp] = (ErrorCode.REQUEST_TIMED_OUT, None)
    topics = []
    for topic, indexes in wanted.items():
        parts = [_result(index, *results.get((topic, index), (ErrorCode.UNKNOWN, None)))
                 for index in indexes]
        if not named:
            parts = [p for p in parts if p.error_code != ErrorCode.ELECTION_NOT_NEEDED]
        if parts:
            topics.append(_Topic(topic=topic, partition_result=parts))
    return ctx.response(throttle_time_ms=0, error_code=0, replica_election_results=topics)


async def _await_leaders(services, election: int, outcome: dict, timeout_ms: int) -> list:
    """The elected partitions whose new leader this broker's cache does not show by
    the deadline.  The controller may name the leader (a third item); without it the
    preferred replica is expected, or for an unclean election any live leader."""
    expected = {tp: (v[2] if len(v) > 2 else None) for tp, v in outcome.items()
                if int(v[0]) == ErrorCode.NO_ERROR}
    if not expected:
        return []

    def shown(tp) -> bool:
        state = services.cache.partition(*tp)
        if state is None or state.leader < 0:
            return False
        leader = expected[tp]
        if leader is None and election == PREFERRED and state.replicas:
            leader = state.replicas[0]
        if leader is not None:
            return state.leader == leader
        return state.leader in services.cache.brokers
    return await services.admin.wait_until(shown, list(expected), timeout_ms)


def _named(topic_partitions) -> dict[str, list[int]]:
    wanted: dict[str, list[int]] = {}
    for entry in topic_partitions:
        indexes = wanted.setdefault(entry.topic, [])
        indexes.extend(p for p in entry.partitions if p not in indexes)
    return wanted


def _every_partition(services) -> dict[str, list[int]]:
    return {name: sorted(meta.partitions) for name, meta in sorted(services.cache.topics.items())}


def _refuse(ctx, wanted: dict[str, list[int]], code: int, message: str | None):
    results = [_Topic(topic=topic, partition_result=[
        _Partition(partition_id=index, error_code=code, error_message=message)
        for index in indexes]) for topic, indexes in wanted.items()]
    return ctx.response(throttle_time_ms=0, error_code=code, replica_election_results=results)


def _result(index: int, code: int, message: str | None):
    return _Partition(partition_id=index, error_code=code, error_message=message)
