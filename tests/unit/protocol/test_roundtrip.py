"""Every advertised (api, version) pair round-trips through kafka-python's codecs.

For each API in the handler registry and each version in its advertised range,
a request built with non-default values encodes, decodes back equal, and the
response class does the same; the registry's ranges are Kafka 3.9.0's, but for the consumer
group protocol's APIs (KIP-848), which are Kafka 4.x's.
"""
from __future__ import annotations

import uuid

import pytest

from kafkapy.handlers import build_registry

REGISTRY = build_registry()

# Kafka 3.9.0's ranges, as kafka-broker-api-versions.sh reads them from a real 3.9.0 broker
# (ZooKeeper mode), but for the consumer group protocol (KIP-848): Kafka 4.x's
# ConsumerGroupHeartbeat and ConsumerGroupDescribe, and DescribeGroups v6, and for
# transactions v2 (Kafka 4.x's Produce v12, EndTxn v5, WriteTxnMarkers v2, TxnOffsetCommit
# v5); every advertised version is served.
EXPECTED_RANGES = {
    0: (0, 12),   # Produce (v12: transactions v2)
    1: (0, 17),   # Fetch
    2: (0, 9),    # ListOffsets
    3: (0, 12),   # Metadata
    4: (0, 7),    # LeaderAndIsr
    5: (0, 4),    # StopReplica
    6: (0, 8),    # UpdateMetadata
    7: (0, 3),    # ControlledShutdown
    8: (0, 9),    # OffsetCommit
    9: (0, 9),    # OffsetFetch
    10: (0, 6),   # FindCoordinator
    11: (0, 9),   # JoinGroup
    12: (0, 4),   # Heartbeat
    13: (0, 5),   # LeaveGroup
    14: (0, 5),   # SyncGroup
    15: (0, 6),   # DescribeGroups (v6: Kafka 4.x)
    16: (0, 5),   # ListGroups
    17: (0, 1),   # SaslHandshake
    18: (0, 4),   # ApiVersions
    19: (0, 7),   # CreateTopics
    20: (0, 6),   # DeleteTopics
    21: (0, 2),   # DeleteRecords
    22: (0, 5),   # InitProducerId
    23: (0, 4),   # OffsetForLeaderEpoch
    24: (0, 5),   # AddPartitionsToTxn (v4-5: broker-to-broker batches)
    25: (0, 4),   # AddOffsetsToTxn
    26: (0, 5),   # EndTxn (v5: transactions v2)
    27: (0, 2),   # WriteTxnMarkers (v2: TransactionVersion)
    28: (0, 5),   # TxnOffsetCommit (v5: transactions v2)
    29: (0, 3),   # DescribeAcls
    30: (0, 3),   # CreateAcls
    31: (0, 3),   # DeleteAcls
    32: (0, 4),   # DescribeConfigs
    33: (0, 2),   # AlterConfigs
    34: (0, 2),   # AlterReplicaLogDirs
    35: (0, 4),   # DescribeLogDirs
    36: (0, 2),   # SaslAuthenticate
    37: (0, 3),   # CreatePartitions
    38: (0, 3),   # CreateDelegationToken
    39: (0, 2),   # RenewDelegationToken
    40: (0, 2),   # ExpireDelegationToken
    41: (0, 3),   # DescribeDelegationToken
    42: (0, 2),   # DeleteGroups
    43: (0, 2),   # ElectLeaders
    45: (0, 0),   # AlterPartitionReassignments
    46: (0, 0),   # ListPartitionReassignments
    44: (0, 1),   # IncrementalAlterConfigs
    47: (0, 0),   # OffsetDelete
    48: (0, 1),   # DescribeClientQuotas
    49: (0, 1),   # AlterClientQuotas
    50: (0, 0),   # DescribeUserScramCredentials
    51: (0, 0),   # AlterUserScramCredentials
    56: (0, 3),   # AlterPartition
    57: (0, 1),   # UpdateFeatures
    60: (0, 1),   # DescribeCluster
    61: (0, 0),   # DescribeProducers
    65: (0, 0),   # DescribeTransactions
    66: (0, 1),   # ListTransactions
    67: (0, 0),   # AllocateProducerIds
    68: (0, 1),   # ConsumerGroupHeartbeat (Kafka 4.x)
    69: (0, 1),   # ConsumerGroupDescribe (Kafka 4.x)
    76: (1, 1),   # ShareGroupHeartbeat (Kafka 4.x)
    77: (1, 1),   # ShareGroupDescribe (Kafka 4.x)
    78: (1, 2),   # ShareFetch (Kafka 4.x)
    79: (1, 2),   # ShareAcknowledge (Kafka 4.x)
    83: (0, 0),   # InitializeShareGroupState (Kafka 4.x)
    84: (0, 0),   # ReadShareGroupState (Kafka 4.x)
    85: (0, 1),   # WriteShareGroupState (Kafka 4.x)
    86: (0, 0),   # DeleteShareGroupState (Kafka 4.x)
    87: (0, 1),   # ReadShareGroupStateSummary (Kafka 4.x)
    90: (0, 1),   # DescribeShareGroupOffsets (Kafka 4.x)
    91: (0, 0),   # AlterShareGroupOffsets (Kafka 4.x)
    92: (0, 0),   # DeleteShareGroupOffsets (Kafka 4.x)
}


def test_registry_ranges_are_the_chosen_ones():
    assert {k: (s.min_version, s.max_version) for k, s in REGISTRY.items()} == EXPECTED_RANGES


def _sample(field, version, depth=0):
    """A non-default value for a schema field at a version."""
    if field.is_struct_array():
        return [_build(field.array_of if hasattr(field, "array_of") else field, version, depth + 1)]
    if field.is_struct():
        return _build(field, version, depth + 1)
    t = field.type_str
    if field.name == "error_code":
        return 0  # ApiVersionsResponse decodes any error as v0, by design
    return {
        "int8": 3, "int16": 7, "int32": 1234, "int64": 99_999_999_999, "uint16": 9,
        "float64": 1.5, "bool": True, "string": "s-%d" % depth, "bytes": b"\x01\x02",
        "records": b"\x00" * 10, "uuid": uuid.UUID(int=42), "bitfield": {1, 3},
        "[]int32": [1, 2], "[]int64": [5], "[]string": ["a", "b"],
    }.get(t, field.default)


def _build(struct_field, version, depth=0, cls=None):
    values = {}
    for f in struct_field._fields:
        if f.for_version_q(version):
            values[f.name] = _sample(f, version, depth)
    return (cls or struct_field.data_class)(version=version, **values)


def _pairs():
    for key, spec in sorted(REGISTRY.items()):
        for version in range(spec.min_version, spec.max_version + 1):
            yield pytest.param(spec, version, id=f"{spec.name}-v{version}")


@pytest.mark.parametrize("spec,version", list(_pairs()))
def test_request_and_response_round_trip(spec, version):
    # A handler's own decoder (ListOffsets' FastDecode) stands in front of kafka-python's class.
    request_cls = getattr(spec.request_cls, "KAFKA_CLASS", spec.request_cls)
    for cls in (request_cls, spec.response_cls):
        message = _build(cls._struct, version, cls=cls)
        encoded = bytes(message.encode(version=version))
        decoded = cls.decode(encoded, version=version)
        assert decoded == message, f"{cls.__name__} v{version} changed in a round trip"
        assert decoded.API_VERSION == version
        decoded._header = None  # kafka-python leaves it unset on decoded messages
        assert bytes(decoded.encode()) == encoded
