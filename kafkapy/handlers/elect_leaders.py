"""ElectLeaders (key 43): preferred or unclean leader election on request (KIP-460).

Versions 0-2 (Kafka 3.9 and 4.0); v0 has no election type and means preferred.
Per partition, as Kafka's ZooKeeper controller decides (processReplicaLeaderElection):
- unknown partition -> UNKNOWN_TOPIC_OR_PARTITION "The partition does not exist.";
- PREFERRED (0): the leader already is the first assigned replica and can serve
  -> ELECTION_NOT_NEEDED; otherwise the preferred replica becomes leader if it
  is live, not offline and in the ISR, else PREFERRED_LEADER_NOT_AVAILABLE;
- UNCLEAN (1): a leader that can serve -> ELECTION_NOT_NEEDED; otherwise the
  first live, online replica of the ISR (or, failing that, of the assignment)
  becomes leader, else ELIGIBLE_LEADERS_NOT_AVAILABLE;
- a successful election answers NONE and bumps the leader epoch through the
  controller, like any leader change.
A request naming no partitions (null) covers every partition, and its answer
leaves out the ones answered ELECTION_NOT_NEEDED, as Kafka's broker does.
A broker that is not the controller answers NOT_CONTROLLER for every partition;
an election type other than 0 and 1 gets INVALID_REQUEST.

On one broker a partition lacks a serving leader when its log dir has failed
(nothing to elect: this broker is its only replica) or when its recorded leader
is a broker that is gone, as after a move from a larger cluster; an unclean
election then makes this broker leader if it is an assigned replica.
"""
from __future__ import annotations

from kafkapy.handlers.common import live_leader, offline_replicas
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

_NOT_NEEDED = "Leader election not needed for topic partition."
_STRATEGY = {PREFERRED: "PreferredReplicaPartitionLeaderElectionStrategy",
             UNCLEAN: "OfflinePartitionLeaderElectionStrategy(true)"}


def handle(ctx, request):
    election = request.election_type if ctx.api_version >= 1 else PREFERRED
    named = request.topic_partitions is not None
    wanted = (_named(request.topic_partitions) if named else _every_partition(ctx.broker))
    if election not in _STRATEGY:
        return _refuse(ctx, wanted, ErrorCode.INVALID_REQUEST,
                       f"Unknown election type {election}")
    broker = ctx.broker
    if broker.cache.controller_id != broker.node_id:
        return _refuse(ctx, wanted, ErrorCode.NOT_CONTROLLER, None)
    results = []
    for topic, indexes in wanted.items():
        parts = [_elect(broker, topic, index, election) for index in indexes]
        if not named:
            parts = [p for p in parts if p.error_code != ErrorCode.ELECTION_NOT_NEEDED]
        if parts:
            results.append(_Topic(topic=topic, partition_result=parts))
    return ctx.response(throttle_time_ms=0, error_code=0, replica_election_results=results)


def _named(topic_partitions) -> dict[str, list[int]]:
    wanted: dict[str, list[int]] = {}
    for entry in topic_partitions:
        indexes = wanted.setdefault(entry.topic, [])
        indexes.extend(p for p in entry.partitions if p not in indexes)
    return wanted


def _every_partition(broker) -> dict[str, list[int]]:
    return {name: sorted(meta.partitions) for name, meta in sorted(broker.cache.topics.items())}


def _refuse(ctx, wanted: dict[str, list[int]], code: int, message: str | None):
    results = [_Topic(topic=topic, partition_result=[
        _Partition(partition_id=index, error_code=code, error_message=message)
        for index in indexes]) for topic, indexes in wanted.items()]
    return ctx.response(throttle_time_ms=0, error_code=code, replica_election_results=results)


def _elect(broker, topic: str, index: int, election: int):
    state = broker.cache.partition(topic, index)
    if state is None:
        return _result(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       "The partition does not exist.")
    offline = offline_replicas(broker, topic, state)
    if _already_valid(state, live_leader(broker, state, offline), election):
        return _result(index, ErrorCode.ELECTION_NOT_NEEDED, _NOT_NEEDED)
    candidate = _candidate(state, offline, election)
    if candidate is None:
        code = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if election == PREFERRED
                else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
        return _result(index, code, f"Failed to elect leader for partition {topic}-{index} "
                                    f"under strategy {_STRATEGY[election]}")
    broker.controller.elect_leader(topic, index, candidate)
    return _result(index, ErrorCode.NO_ERROR, None)


def _already_valid(state, leader: int, election: int) -> bool:
    if election == PREFERRED:
        return leader != -1 and leader == state.replicas[0]
    return leader != -1


def _candidate(state, offline: set[int], election: int) -> int | None:
    usable = [r for r in state.replicas if r not in offline]
    if election == PREFERRED:
        preferred = state.replicas[0]
        return preferred if preferred in usable and preferred in state.isr else None
    in_isr = [r for r in usable if r in state.isr]
    return (in_isr or usable or [None])[0]


def _result(index: int, code: int, message: str | None):
    return _Partition(partition_id=index, error_code=code, error_message=message)
