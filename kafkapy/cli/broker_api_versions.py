"""``kafkapy-broker-api-versions``: Kafka's ``bin/kafka-broker-api-versions.sh``.

Asks every broker of the cluster (the Metadata response's brokers) for its ApiVersions and
prints one block per broker, byte for byte as Kafka 3.9's BrokerApiVersionsCommand does::

    127.0.0.1:9092 (id: 0 rack: null) -> (
    \tProduce(0): 0 to 11 [usable: 11],
    ...
    \tCreateDelegationToken(38): UNSUPPORTED,
    ...
    )

Invariants (Kafka's ``NodeApiVersions.toString(true)``):
- lines are in API-key order; a key the broker advertises that the table below does not
  know prints ``UNKNOWN(key): min to max`` with no usable part;
- ``usable`` is relative to the *client's* versions, which for Kafka's tool are Kafka 3.9's
  ``ApiKeys`` table; this tool carries that table (``_KAFKA_39_APIS``: name, oldest, latest
  version, and whether the key is one of ``ApiKeys.clientApis()``), so its output is the
  same as Kafka's tool against the same broker. A client API the broker does not advertise
  prints ``UNSUPPORTED``; controller-only APIs (Raft, broker registration) are not listed
  unless the broker advertises them;
- a single version prints as ``n``, a range as ``min to max``; a broker's range wholly above
  or below the client's prints ``[unusable: node too new]`` / ``[unusable: node too old]``.

Brokers come in ascending id order. Kafka's tool prints them in a random order (its
client's ``Cluster`` shuffles the Metadata response's nodes), so with several brokers the
two outputs hold the same blocks in possibly different orders.
A broker whose ApiVersions request fails prints ``host:port (id: N rack: R) -> ERROR: ...``.
Differences from Kafka: an unreachable bootstrap server is reported once ("Error: ..." on
stderr, exit 1) rather than Kafka's retry loop and stack trace; ``--version`` prints
kafkapy's version.
"""
from __future__ import annotations

import argparse
import sys
from importlib import metadata

import kafka.errors
from kafka.protocol.metadata import ApiVersionsRequest

from kafkapy.cli import _common as common

# Kafka 3.9.0's org.apache.kafka.common.protocol.ApiKeys: id -> (name, oldestVersion,
# latestVersion, in clientApis()). Generated from kafka-clients-3.9.0.jar.
_KAFKA_39_APIS: dict[int, tuple[str, int, int, bool]] = {
    0: ("Produce", 0, 11, True),
    1: ("Fetch", 0, 17, True),
    2: ("ListOffsets", 0, 9, True),
    3: ("Metadata", 0, 12, True),
    4: ("LeaderAndIsr", 0, 7, True),
    5: ("StopReplica", 0, 4, True),
    6: ("UpdateMetadata", 0, 8, True),
    7: ("ControlledShutdown", 0, 3, True),
    8: ("OffsetCommit", 0, 9, True),
    9: ("OffsetFetch", 0, 9, True),
    10: ("FindCoordinator", 0, 6, True),
    11: ("JoinGroup", 0, 9, True),
    12: ("Heartbeat", 0, 4, True),
    13: ("LeaveGroup", 0, 5, True),
    14: ("SyncGroup", 0, 5, True),
    15: ("DescribeGroups", 0, 5, True),
    16: ("ListGroups", 0, 5, True),
    17: ("SaslHandshake", 0, 1, True),
    18: ("ApiVersions", 0, 4, True),
    19: ("CreateTopics", 0, 7, True),
    20: ("DeleteTopics", 0, 6, True),
    21: ("DeleteRecords", 0, 2, True),
    22: ("InitProducerId", 0, 5, True),
    23: ("OffsetForLeaderEpoch", 0, 4, True),
    24: ("AddPartitionsToTxn", 0, 5, True),
    25: ("AddOffsetsToTxn", 0, 4, True),
    26: ("EndTxn", 0, 4, True),
    27: ("WriteTxnMarkers", 0, 1, True),
    28: ("TxnOffsetCommit", 0, 4, True),
    29: ("DescribeAcls", 0, 3, True),
    30: ("CreateAcls", 0, 3, True),
    31: ("DeleteAcls", 0, 3, True),
    32: ("DescribeConfigs", 0, 4, True),
    33: ("AlterConfigs", 0, 2, True),
    34: ("AlterReplicaLogDirs", 0, 2, True),
    35: ("DescribeLogDirs", 0, 4, True),
    36: ("SaslAuthenticate", 0, 2, True),
    37: ("CreatePartitions", 0, 3, True),
    38: ("CreateDelegationToken", 0, 3, True),
    39: ("RenewDelegationToken", 0, 2, True),
    40: ("ExpireDelegationToken", 0, 2, True),
    41: ("DescribeDelegationToken", 0, 3, True),
    42: ("DeleteGroups", 0, 2, True),
    43: ("ElectLeaders", 0, 2, True),
    44: ("IncrementalAlterConfigs", 0, 1, True),
    45: ("AlterPartitionReassignments", 0, 0, True),
    46: ("ListPartitionReassignments", 0, 0, True),
    47: ("OffsetDelete", 0, 0, True),
    48: ("DescribeClientQuotas", 0, 1, True),
    49: ("AlterClientQuotas", 0, 1, True),
    50: ("DescribeUserScramCredentials", 0, 0, True),
    51: ("AlterUserScramCredentials", 0, 0, True),
    52: ("Vote", 0, 1, False),
    53: ("BeginQuorumEpoch", 0, 1, False),
    54: ("EndQuorumEpoch", 0, 1, False),
    55: ("DescribeQuorum", 0, 2, True),
    56: ("AlterPartition", 0, 3, True),
    57: ("UpdateFeatures", 0, 1, True),
    58: ("Envelope", 0, 0, True),
    59: ("FetchSnapshot", 0, 1, False),
    60: ("DescribeCluster", 0, 1, True),
    61: ("DescribeProducers", 0, 0, True),
    62: ("BrokerRegistration", 0, 4, False),
    63: ("BrokerHeartbeat", 0, 1, False),
    64: ("UnregisterBroker", 0, 0, True),
    65: ("DescribeTransactions", 0, 0, True),
    66: ("ListTransactions", 0, 1, True),
    67: ("AllocateProducerIds", 0, 0, True),
    68: ("ConsumerGroupHeartbeat", 0, 0, True),
    69: ("ConsumerGroupDescribe", 0, 0, True),
    70: ("ControllerRegistration", 0, 0, False),
    71: ("GetTelemetrySubscriptions", 0, 0, True),
    72: ("PushTelemetry", 0, 0, True),
    73: ("AssignReplicasToDirs", 0, 0, False),
    74: ("ListClientMetricsResources", 0, 0, True),
    75: ("DescribeTopicPartitions", 0, 0, True),
    76: ("ShareGroupHeartbeat", 0, 0, True),
    77: ("ShareGroupDescribe", 0, 0, True),
    78: ("ShareFetch", 0, 0, True),
    79: ("ShareAcknowledge", 0, 0, True),
    80: ("AddRaftVoter", 0, 0, True),
    81: ("RemoveRaftVoter", 0, 0, True),
    82: ("UpdateRaftVoter", 0, 0, False),
    83: ("InitializeShareGroupState", 0, 0, True),
    84: ("ReadShareGroupState", 0, 0, True),
    85: ("WriteShareGroupState", 0, 0, True),
    86: ("DeleteShareGroupState", 0, 0, True),
    87: ("ReadShareGroupStateSummary", 0, 0, True),
}


def main(argv: list[str] | None = None) -> int:
    return common.run(_execute, _parser(), argv, common.error_to_stderr)


def _parser() -> common.ToolParser:
    parser = common.ToolParser("kafkapy-broker-api-versions",
                               "This tool helps to retrieve broker version information.")
    parser.add_argument("--version", action="store_true", help="Display the version.")
    return parser


def _execute(args: argparse.Namespace) -> int:
    if args.version:
        print(_package_version())
        return 0
    common.require_bootstrap(args)
    admin = common.admin_client(args)
    try:
        for broker in _kafka_order(admin.describe_cluster()["brokers"]):
            print(f"{_node_text(broker)} -> {_broker_versions(admin, broker['broker_id'])}")
    finally:
        admin.close()
    return 0


def _kafka_order(brokers: list[dict]) -> list[dict]:
    # Kafka's own order is random (see the module doc); ascending ids are reproducible.
    return sorted(brokers, key=lambda broker: broker["broker_id"])


def _package_version() -> str:
    try:
        return metadata.version("kafkapy")
    except metadata.PackageNotFoundError:
        return "unknown"


def _node_text(broker: dict) -> str:
    # Kafka's Node.toString
    return (f"{broker['host']}:{broker['port']} (id: {broker['broker_id']} "
            f"rack: {common.java_text(broker['rack'])})")


def _broker_versions(admin, node_id: int) -> str:
    request = ApiVersionsRequest(client_software_name="kafkapy-broker-api-versions",
                                 client_software_version=_package_version())
    try:
        response = common.send(admin, request, node_id)
        common.check_error(response.error_code)
    except (common.CommandError, kafka.errors.KafkaError, OSError) as err:
        return f"ERROR: {common.failure_text(err)}"
    advertised = {api.api_key: (api.min_version, api.max_version) for api in response.api_keys}
    return versions_text(advertised)


def versions_text(advertised: dict[int, tuple[int, int]]) -> str:
    """Kafka's NodeApiVersions.toString(true) for a broker's advertised ranges."""
    lines = {key: _api_text(key, low, high) for key, (low, high) in advertised.items()}
    for key, (name, _oldest, _latest, client_api) in _KAFKA_39_APIS.items():
        if client_api and key not in lines:
            lines[key] = f"{name}({key}): UNSUPPORTED"
    body = ",\n\t".join(lines[key] for key in sorted(lines))
    return f"(\n\t{body}\n)"


def _api_text(key: int, low: int, high: int) -> str:
    known = _KAFKA_39_APIS.get(key)
    name = known[0] if known else "UNKNOWN"
    versions = str(low) if low == high else f"{low} to {high}"
    text = f"{name}({key}): {versions}"
    if known is None:
        return text
    _name, oldest, latest = known[:3]
    if latest < low:
        return f"{text} [unusable: node too new]"
    if high < oldest:
        return f"{text} [unusable: node too old]"
    return f"{text} [usable: {min(latest, high)}]"


if __name__ == "__main__":
    sys.exit(main())
