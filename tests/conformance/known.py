"""Differences kept on purpose, each with its reason.

Three kinds, each as narrow as the difference:

- ``KNOWN_DIFFERENCES`` (case id -> reason): cases marked xfail(strict=True), only for
  answers where matching Kafka would be wrong or meaningless (for example where Kafka itself
  answers UNKNOWN_SERVER_ERROR for a request it cannot handle).
- ``KAFKA_4``: where kafkapy answers as Kafka 4.x does and Kafka 3.9 (the reference) does
  not: kafkapy serves the consumer group protocol (KIP-848) as Kafka 4.x serves it.  Each
  entry names the API, versions and fields it touches, and turns Kafka 3.9's normalised
  answer into what Kafka 4.x answers there (``expected``); every other field is still
  compared with Kafka 3.9's.  Kafka 4.x's source is cited from the Kafka source mirror of the
  team (a 4.0-SNAPSHOT of October 2024) where it has the behaviour, else from the Kafka 4.3
  client jar (``.cache/java-clients/4.3.0``) and the message schemas in
  ``../shared/kafka-protocol/messages``.
- ``STAND_IN_VERSIONS``: versions Kafka 3.9 does not serve at all; the case's request goes to
  Kafka at the stand-in version (fields that version lacks dropped), and ``KAFKA_4`` adds
  what the newer version changes.

Any other difference must be fixed in kafkapy, not listed here.  Keys are exact case ids.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

from tests.conformance.compare import Keyed

KNOWN_DIFFERENCES: dict[str, str] = {
    "Produce-v9-null-records": "Kafka 3.9 hits a NullPointerException on null records of a "
                               "partition it would append to and never answers (the "
                               "connection stalls); kafkapy closes the connection.",
    "OffsetFetch-v8-no-groups":
        "Kafka 3.9 never answers an OffsetFetch v8+ naming no groups (nothing completes its "
        "combined result over zero groups); kafkapy answers with an empty group list.",
    **{f"ElectLeaders-v{v}-invalid-election-type":
       "Kafka 3.9 answers UNKNOWN_SERVER_ERROR (its enum lookup throws); kafkapy answers "
       "INVALID_REQUEST naming the election type." for v in (1, 2)},
    **{f"IncrementalAlterConfigs-v{v}-invalid-operation":
       "Kafka 3.9 answers UNKNOWN_SERVER_ERROR (its enum lookup throws); kafkapy answers "
       "INVALID_REQUEST naming the operation." for v in (0, 1)},
    **{f"Produce-v{v}-garbage-size-overflow":
       "Kafka 3.9 adds the 12-byte entry overhead to a size field of 2^31-1 in an int, gets "
       "a negative batch size (IllegalArgumentException) and fails the whole request with "
       "UNKNOWN_SERVER_ERROR; kafkapy reads the entry as longer than the bytes sent, as any "
       "partial entry: INVALID_RECORD from v3, nothing appended before."
       for v in range(12)},
    **{f"Produce-v{v}-short-v2-batch":
       "Kafka 3.9 reads the producer id past the end of a v2 batch shorter than its header "
       "(IndexOutOfBoundsException) and fails the whole request with UNKNOWN_SERVER_ERROR; "
       "kafkapy refuses that partition with CORRUPT_MESSAGE." for v in range(12)},
    **{f"IncrementalAlterConfigs-v{v}-logger-other-broker":
       "Kafka 3.9's BROKER_LOGGER check quotes its own node id as the one received "
       "('Expected 1, but received 1'); kafkapy uses the same words with the id it received."
       for v in (0, 1)},
    **{f"ConsumerGroupDescribe-v{v}-empty-group-id":
       "Kafka 3.9 (and the 4.0 snapshot's GroupCoordinatorService.consumerGroupDescribe) "
       "answers an empty group id with a DescribedGroup whose GroupId is null, which the "
       "non-nullable schema cannot write: the NullPointerException turns the whole answer "
       "into UNKNOWN_SERVER_ERROR for every group; kafkapy answers that group "
       "INVALID_GROUP_ID under the id it was asked." for v in (0, 1)},
    **{f"ConsumerGroupDescribe-v{v}-with-unknown-group-other-coordinator":
       "Kafka 3.9 (and the 4.0 snapshot's GroupCoordinatorService.consumerGroupDescribe) "
       "hands every requested group id, not only its own, to each __consumer_offsets "
       "partition that holds one of them, so two groups on two partitions come back four "
       "times (each partition answering GROUP_ID_NOT_FOUND for the other's group); kafkapy "
       "describes each group once, by its own coordinator partition (the "
       "'same-coordinator' case compares the rest)." for v in (0, 1)},
}


# APIs Kafka 3.9 advertises that kafkapy does not serve yet (the README's "Not yet" list);
# ApiVersions cases compare every other entry, so an API missing from this list and from
# kafkapy still fails.
NOT_YET_SERVED: dict[int, str] = {
    38: "CreateDelegationToken: delegation tokens", 39: "RenewDelegationToken: delegation tokens",
    40: "ExpireDelegationToken: delegation tokens",
    41: "DescribeDelegationToken: delegation tokens",
    49: "AlterClientQuotas: client quotas",
    57: "UpdateFeatures: feature changes through the controller",
    58: "Envelope: forwarding to a controller",
}


def drop_not_yet_served(api_key: int, kafka_tree):
    """Kafka's ApiVersions answer without the entries of ``NOT_YET_SERVED``."""
    if api_key != 18 or not isinstance(kafka_tree, dict) or not kafka_tree.get("api_keys"):
        return kafka_tree
    kept = [e for e in kafka_tree["api_keys"] if e.get("api_key") not in NOT_YET_SERVED]
    return {**kafka_tree, "api_keys": kept}


# (api key, version kafkapy serves) -> (version Kafka 3.9 is asked instead, why)
STAND_IN_VERSIONS: dict[tuple[int, int], tuple[int, str]] = {
    (15, 6): (5, "DescribeGroups v6 (KIP-1043, Kafka 4.0) is v5 plus ErrorMessage and "
                 "GROUP_ID_NOT_FOUND for a group that does not exist; Kafka 3.9 serves v0-5"),
    (68, 1): (0, "ConsumerGroupHeartbeat v1 (Kafka 4.x: SubscribedTopicRegex, a member id the "
                 "client generates) has v0's answer; Kafka 3.9's preview serves v0 only"),
    (69, 1): (0, "ConsumerGroupDescribe v1 (Kafka 4.x) is v0 plus the members' MemberType; "
                 "Kafka 3.9's preview serves v0 only"),
}


def stand_in_version(api_key: int, version: int) -> int:
    """The version Kafka 3.9 is asked for a case of ``(api_key, version)``."""
    return STAND_IN_VERSIONS.get((api_key, version), (version, ""))[0]


@dataclass(frozen=True)
class Kafka4:
    """One way Kafka 4.x answers differently from Kafka 3.9, which kafkapy follows."""
    name: str
    applies: Callable[[Any], bool]          # case -> bool
    expect: Callable[[Any, Any], Any]       # (Kafka 3.9's tree, case) -> Kafka 4.x's tree
    reason: str


def _api(key: int, versions=None, names=None):
    def applies(case) -> bool:
        return case.api_key == key and (versions is None or case.version in versions) and (
            names is None or case.name in names)
    return applies


def _keyed_like(old, items):
    return Keyed(items, old.keys) if isinstance(old, Keyed) else items


# -- ApiVersions --------------------------------------------------------------------------

CONSUMER_GROUP_APIS = {68: (0, 1), 69: (0, 1)}     # Kafka 4.x's ranges, as kafkapy serves them


def _api_ranges(tree, case):
    entries = [dict(e) for e in tree.get("api_keys") or []]
    if not entries:
        return tree
    for entry in entries:
        if entry.get("api_key") == 15 and entry.get("max_version") == 5:
            entry["max_version"] = 6
        if entry.get("api_key") in CONSUMER_GROUP_APIS and entry.get("max_version") == 0:
            entry["max_version"] = CONSUMER_GROUP_APIS[entry["api_key"]][1]
    return {**tree, "api_keys": _keyed_like(tree["api_keys"], entries)}


def _group_version_feature(tree, case):
    """group.version: supported 0-1 (from v4: below it Kafka leaves out a feature whose
    minimum is 0), finalized at 1 (from v3, where features appear); not on a refusal."""
    if tree.get("error_code"):
        return tree
    out = dict(tree)
    if case.version >= 3 and isinstance(tree.get("finalized_features"), list):
        out["finalized_features"] = _with_feature(tree["finalized_features"], {
            "name": "group.version", "max_version_level": 1, "min_version_level": 1})
    if case.version >= 4 and isinstance(tree.get("supported_features"), list):
        out["supported_features"] = _with_feature(tree["supported_features"], {
            "name": "group.version", "min_version": 0, "max_version": 1})
    return out


def _with_feature(features, feature: dict):
    if any(f.get("name") == feature["name"] for f in features):
        return features
    return _keyed_like(features, sorted([*features, feature], key=lambda f: f["name"]))


# -- DescribeGroups v6 ----------------------------------------------------------------------

GROUP_ID_NOT_FOUND = 69


def _describe_groups_v6(tree, case):
    """v5's answer with v6's ErrorMessage (null), and a group that does not exist (3.9: Dead,
    no error) answered GROUP_ID_NOT_FOUND with the coordinator's message; authorized
    operations are only answered for groups without error."""
    groups = []
    for group in tree.get("groups") or []:
        group = dict(group, error_message=None)
        if group.get("error_code") == 0 and group.get("group_state") == "Dead":
            group.update(error_code=GROUP_ID_NOT_FOUND,
                         error_message=f"Group {group['group_id']} not found.")
            if "authorized_operations" in group:
                group["authorized_operations"] = None
        groups.append(group)
    return {**tree, "groups": _keyed_like(tree.get("groups"), groups)}


# -- DescribeConfigs: the consumer group protocol's broker keys --------------------------------

BROKER = 4
_CLASS_NAMES = ("org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
                "org.apache.kafka.coordinator.group.assignor.RangeAssignor")
KAFKA_4_BROKER_DEFAULTS = {
    "group.coordinator.rebalance.protocols": ("classic", "classic,consumer"),
    "group.consumer.assignors": (_CLASS_NAMES, "uniform,range"),
}
MIGRATION_POLICY = ("group.consumer.migration.policy", "bidirectional")
STRING_TYPE = 2


def _broker_defaults(tree, case):
    results = []
    for result in tree.get("results") or []:
        configs = result.get("configs")
        if result.get("resource_type") == BROKER and isinstance(configs, list):
            result = dict(result, configs=_group_configs(configs))
        results.append(result)
    return {**tree, "results": _keyed_like(tree.get("results"), results)}


def _group_configs(configs):
    out = []
    for entry in configs:
        old_new = KAFKA_4_BROKER_DEFAULTS.get(entry.get("name"))
        if old_new and entry.get("value") == old_new[0]:
            entry = _renamed(entry, entry["name"], old_new[1])
        out.append(entry)
    names = {e.get("name") for e in out}
    template = next((e for e in configs if e.get("name") == "group.consumer.assignors"), None)
    if template is not None and MIGRATION_POLICY[0] not in names:
        # listed like its neighbour: a read-only key at its default, now of type STRING
        policy = _renamed(template, *MIGRATION_POLICY)
        if "config_type" in policy:
            policy["config_type"] = STRING_TYPE
        out.append(policy)
    return _keyed_like(configs, sorted(out, key=lambda e: e.get("name")))


def _renamed(entry: dict, name: str, value: str) -> dict:
    entry = copy.deepcopy(entry)
    entry.update(name=name, value=value)
    synonyms = entry.get("synonyms")
    if isinstance(synonyms, list):
        entry["synonyms"] = _keyed_like(synonyms, [dict(s, name=name, value=value)
                                                   for s in synonyms])
    return entry


# -- ConsumerGroupHeartbeat / ConsumerGroupDescribe (against Kafka 3.9 in KRaft mode) ---------

INVALID_REQUEST = 42
_NO_TOPICS_39 = "SubscribedTopicNames must be set in first request."
NO_TOPICS_4X = "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."


def _no_subscription_message(tree, case):
    if tree.get("error_message") == _NO_TOPICS_39:
        return {**tree, "error_message": NO_TOPICS_4X}
    return tree


def _client_member_id_required(tree, case):
    """A v1 join without member id: refused before anything else."""
    return {**tree, "error_code": INVALID_REQUEST, "error_message": "MemberId can't be empty.",
            "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0,
            "assignment": None}


CONSUMER_MEMBER_TYPE = 1
KAFKA_39_GROUP_OPERATIONS = {3, 6, 8}               # READ, DELETE, DESCRIBE
KAFKA_4_GROUP_OPERATIONS = {3, 6, 8, 10, 11}        # + DESCRIBE_CONFIGS, ALTER_CONFIGS


def _group_operations(tree, case):
    groups = []
    for group in tree.get("groups") or []:
        if group.get("authorized_operations") == KAFKA_39_GROUP_OPERATIONS:
            group = dict(group, authorized_operations=set(KAFKA_4_GROUP_OPERATIONS))
        groups.append(group)
    return {**tree, "groups": _keyed_like(tree.get("groups"), groups)}


def _describe_messages(tree, case):
    """GROUP_ID_NOT_FOUND with the coordinator's message: the classic-group cases describe a
    classic group, the others a group that does not exist."""
    text = ("Group {} is not a consumer group." if case.name.startswith("classic-group")
            else "Group {} not found.")
    groups = []
    for group in tree.get("groups") or []:
        if group.get("error_code") == GROUP_ID_NOT_FOUND and group.get("error_message") is None:
            group = dict(group, error_message=text.format(group.get("group_id")))
        groups.append(group)
    return {**tree, "groups": _keyed_like(tree.get("groups"), groups)}


def _member_type(tree, case):
    groups = []
    for group in tree.get("groups") or []:
        members = group.get("members")
        if isinstance(members, list):
            group = dict(group, members=_keyed_like(members, [
                dict(m, member_type=CONSUMER_MEMBER_TYPE) for m in members]))
        groups.append(group)
    return {**tree, "groups": _keyed_like(tree.get("groups"), groups)}


KAFKA_4: tuple[Kafka4, ...] = (
    Kafka4("ApiVersions: DescribeGroups v6, ConsumerGroupHeartbeat and ConsumerGroupDescribe "
           "v1", _api(18), _api_ranges,
           "kafkapy serves DescribeGroups up to v6 (KIP-1043, Kafka 4.0's "
           "DescribeGroupsRequest.json: validVersions 0-6) and ConsumerGroupHeartbeat (68) and "
           "ConsumerGroupDescribe (69) up to v1 as Kafka 4.x serves them (the Kafka 4.3 "
           "client's schemas: 68 v1 adds SubscribedTopicRegex and the client's member id, 69 "
           "v1 MemberType); Kafka 3.9 lists 68 and 69 at v0 only (their schemas name the "
           "zkBroker listener) and in ZooKeeper mode answers them UNSUPPORTED_VERSION: "
           "KafkaApis.isConsumerGroupProtocolEnabled needs 'consumer' among "
           "group.coordinator.rebalance.protocols, which KafkaConfig refuses without KRaft)."),
    Kafka4("ApiVersions: group.version", _api(18), _group_version_feature,
           "Kafka 4.x serves the consumer group protocol only while its group.version feature "
           "is at level 1 (KafkaApis.isConsumerGroupProtocolEnabled; "
           "server-common/.../GroupVersion.java: GV_1), so kafkapy lists group.version "
           "supported 0-1 and finalized at 1 (ApiVersionsResponse leaves a feature with "
           "minimum level 0 out below v4); Kafka 3.9 in ZooKeeper mode has no features."),
    Kafka4("DescribeGroups v6", _api(15, versions={6}), _describe_groups_v6,
           "DescribeGroups v6 (KIP-1043, Kafka 4.0): ErrorMessage per group, and a group that "
           "does not exist is GROUP_ID_NOT_FOUND with GroupMetadataManager's 'Group <id> not "
           "found.' (group-coordinator/.../GroupMetadataManager.java: group(groupId)); "
           "compared with Kafka 3.9's v5 answer (STAND_IN_VERSIONS)."),
    Kafka4("DescribeConfigs: group.* broker defaults", _api(32), _broker_defaults,
           "Kafka 4.0's defaults of the consumer group protocol's broker keys, which kafkapy "
           "has (kafkapy/config/broker_keys.py): group.coordinator.rebalance.protocols="
           "classic,consumer (GroupCoordinatorConfig.GROUP_COORDINATOR_REBALANCE_PROTOCOLS"
           "_DEFAULT in the 4.0 snapshot); group.consumer.assignors=uniform,range (Kafka 4.0 "
           "names its built-in assignors by their short names; the October 2024 snapshot still "
           "lists their class names, as 3.9 does, which kafkapy also accepts); and "
           "group.consumer.migration.policy=bidirectional listed like any other key (Kafka "
           "4.0's default; 3.9 and the snapshot define the key internal, so their "
           "DescribeConfigs leaves it out).  Only the BROKER results listing these keys change."),
    Kafka4("ConsumerGroupHeartbeat: no subscription", _api(68), _no_subscription_message,
           "Kafka 4.x subscribes by names or by a regular expression (v1's "
           "SubscribedTopicRegex), and its first-heartbeat check says so: 'SubscribedTopicNames "
           "or SubscribedTopicRegex must be set in first request.' "
           "(GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid once Kafka 4.x "
           "took regular expressions; the October 2024 snapshot still has 3.9's "
           "'SubscribedTopicNames must be set in first request.' and 'SubscribedTopicRegex is "
           "not supported yet.')."),
    Kafka4("ConsumerGroupHeartbeat v1: client-generated member id",
           _api(68, versions={1}, names={"join-empty-member-id"}), _client_member_id_required,
           "From v1 the member generates its member id (KIP-1082; Kafka 4.x refuses a v1 "
           "heartbeat with an empty MemberId, 'MemberId can't be empty.', before any other "
           "check: GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid, "
           "CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION); Kafka 3.9's v0 generates one."),
    Kafka4("ConsumerGroupDescribe: group operations", _api(69), _group_operations,
           "Kafka 4.x supports DESCRIBE_CONFIGS and ALTER_CONFIGS on a group (its group configs; "
           "server/src/main/java/org/apache/kafka/security/authorizer/AclEntry.java: "
           "supportedOperations(GROUP) = READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, "
           "ALTER_CONFIGS), so without an authorizer a group's authorized operations are those "
           "five; Kafka 3.9 answers READ, DELETE, DESCRIBE."),
    Kafka4("ConsumerGroupDescribe: error messages", _api(69), _describe_messages,
           "kafkapy answers a group that is not described with the message of the coordinator's "
           "GroupIdNotFoundException ('Group <id> not found.', 'Group <id> is not a consumer "
           "group.'), as kafkapy's DescribeGroups v6 does (KIP-1043); Kafka 3.9 and the "
           "October 2024 snapshot (GroupMetadataManager.consumerGroupDescribe) set the error "
           "code alone."),
    Kafka4("ConsumerGroupDescribe v1: MemberType", _api(69, versions={1}), _member_type,
           "ConsumerGroupDescribe v1 adds each member's MemberType (the Kafka 4.3 client's "
           "ConsumerGroupDescribeResponseData: -1 unknown, 0 classic, 1 consumer); members "
           "that joined with ConsumerGroupHeartbeat are 1; compared with Kafka 3.9's v0."),
)


def expected(case, kafka_tree):
    """What kafkapy should answer: Kafka 3.9's normalised answer (``kafka_tree``) with the
    APIs kafkapy does not serve dropped and every applicable ``KAFKA_4`` change made."""
    tree = drop_not_yet_served(case.api_key, kafka_tree)
    if not isinstance(tree, dict):
        return tree
    for rule in KAFKA_4:
        if rule.applies(case):
            tree = rule.expect(tree, case)
    return tree
