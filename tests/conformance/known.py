"""Differences kept on purpose, each with its reason.

Four kinds, each as narrow as the difference:

- ``KNOWN_DIFFERENCES`` (case id -> reason): cases marked xfail(strict=True), only for
  answers where matching Kafka would be wrong or meaningless (for example where Kafka itself
  answers UNKNOWN_SERVER_ERROR for a request it cannot handle).
- ``KAFKA_4``: where kafkapy answers as Kafka 4.x does and Kafka 3.9 (the reference) does
  not: kafkapy serves the consumer group protocol (KIP-848) as Kafka 4.x serves it, and share
  groups (KIP-932) as Kafka 4.2 serves them, with the dead-letter keys of KIP-1191 (not yet
  in a Kafka release; kafkapy has dead-letter topics ahead of Kafka).  Each
  entry names the API, versions and fields it touches, and turns Kafka 3.9's normalised
  answer into what Kafka 4.x answers there (``expected``); every other field is still
  compared with Kafka 3.9's.  Kafka 4.x's source is cited from the Kafka source mirror of the
  team (a 4.0-SNAPSHOT of October 2024) where it has the behaviour, else from the Kafka 4.3
  client jar (``.cache/java-clients/4.3.0``) and the message schemas in
  ``../shared/kafka-protocol/messages``.
- ``STAND_IN_VERSIONS``: versions Kafka 3.9 does not serve at all; the case's request goes to
  Kafka at the stand-in version (fields that version lacks dropped), and ``KAFKA_4`` adds
  what the newer version changes.
- ``KAFKA_4_ONLY_APIS``: APIs that no Kafka 3.9 serves in either mode at a version kafkapy
  serves, so nothing answers them to compare with; they have no cases here (each entry
  says where their answers are checked instead), and ``KAFKA_4`` lists them in ApiVersions.

Any other difference must be fixed in kafkapy, not listed here.  Keys are exact case ids.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

from kafkapy.java_properties import loads
from tests.conformance.compare import Keyed
from tests.support.broker_process import SERVER_PROPERTIES

KNOWN_DIFFERENCES: dict[str, str] = {
    **{f"UpdateFeatures-v{v}-group-version-disable":
       "kafkapy finalizes group.version at 1 from broker config (the consumer group protocol "
       "is served while group.coordinator.rebalance.protocols lists consumer) and refuses to "
       "take it to 0 with INVALID_UPDATE_VERSION naming that config; Kafka 3.9 in ZooKeeper "
       "mode finalizes nothing and answers 'Can not delete non-existing finalized feature.'"
       for v in (0, 1)},
    "UpdateFeatures-v1-transaction-version-validate-only":
        "kafkapy supports transaction.version 0-2 (transactions v2), so the validated upgrade "
        "succeeds (and, ValidateOnly, writes nothing); Kafka 3.9 in ZooKeeper mode supports "
        "no feature and answers 'the provided feature is not supported' (it also ignores "
        "ValidateOnly: its controller would write a level it could grant).",
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
       for v in range(13)},
    **{f"Produce-v{v}-short-v2-batch":
       "Kafka 3.9 reads the producer id past the end of a v2 batch shorter than its header "
       "(IndexOutOfBoundsException) and fails the whole request with UNKNOWN_SERVER_ERROR; "
       "kafkapy refuses that partition with CORRUPT_MESSAGE." for v in range(13)},
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
    (0, 12): (11, "Produce v12 (transactions v2, Kafka 4.0) is v11 on the wire; only a "
                  "transactional batch's partition is added to its transaction by the leader"),
    (26, 5): (4, "EndTxn v5 (transactions v2, Kafka 4.0) is v4 plus the ProducerId and "
                 "ProducerEpoch the client goes on with"),
    (27, 2): (1, "WriteTxnMarkers v2 (Kafka 4.x) is v1 plus each marker's TransactionVersion"),
    (28, 5): (4, "TxnOffsetCommit v5 (transactions v2, Kafka 4.0) is v4 on the wire; the "
                 "group's offsets partition is added to the transaction by the coordinator"),
}


# APIs kafkapy serves that no Kafka 3.9 answers meaningfully, in neither mode: its ZooKeeper
# mode closes the connection on them (their schemas name no zkBroker listener); its KRaft mode
# has 76-79 only as KIP-932's unstable v0 preview (behind unstable.api.versions.enable; Kafka
# 4.1 removed v0 and serves v1), answers 83-87 v0 UNSUPPORTED_VERSION whatever is asked
# (KafkaApis.handleInitializeShareGroupStateRequest & co. are placeholders) and has no 90-92.
_SHARE_TESTS = ("tests/integration (the handlers over a real broker's socket), "
                "tests/clients (Kafka 4.3's KafkaShareConsumer and confluent-kafka's "
                "ShareConsumer), tests/fuzz")
KAFKA_4_ONLY_APIS: dict[int, str] = {
    76: "ShareGroupHeartbeat v1: " + _SHARE_TESTS,
    77: "ShareGroupDescribe v1: " + _SHARE_TESTS,
    78: "ShareFetch v1-2: " + _SHARE_TESTS,
    79: "ShareAcknowledge v1-2: " + _SHARE_TESTS,
    83: "InitializeShareGroupState (broker to share coordinator): " + _SHARE_TESTS,
    84: "ReadShareGroupState (broker to share coordinator): " + _SHARE_TESTS,
    85: "WriteShareGroupState v0-1 (broker to share coordinator): " + _SHARE_TESTS,
    86: "DeleteShareGroupState (broker to share coordinator): " + _SHARE_TESTS,
    87: "ReadShareGroupStateSummary v0-1 (broker to share coordinator): "
        + _SHARE_TESTS,
    90: "DescribeShareGroupOffsets v0-1: " + _SHARE_TESTS,
    91: "AlterShareGroupOffsets: " + _SHARE_TESTS,
    92: "DeleteShareGroupOffsets: " + _SHARE_TESTS,
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
# Kafka 4.x's highest versions of the APIs transactions v2 changed (Produce, EndTxn,
# WriteTxnMarkers, TxnOffsetCommit; Produce v13's topic ids are not served).
TRANSACTIONS_V2_MAX = {0: 12, 26: 5, 27: 2, 28: 5}


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


# Kafka 4.2's ranges of the share group APIs (the schemas in protocol/*.json), as kafkapy
# serves them; ApiVersions lists 76-79 while group.coordinator.rebalance.protocols names share,
# which its default does.
SHARE_GROUP_APIS = {76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 83: (0, 0), 84: (0, 0),
                    85: (0, 1), 86: (0, 0), 87: (0, 1), 90: (0, 1), 91: (0, 0), 92: (0, 0)}


def _share_api_ranges(tree, case):
    """The share group APIs added to the list, in order of key (the list is not keyed); a
    refusal lists ApiVersions alone."""
    entries = list(tree.get("api_keys") or [])
    if tree.get("error_code") or not entries:
        return tree
    listed = {e.get("api_key") for e in entries}
    entries += [{"api_key": key, "min_version": lo, "max_version": hi}
                for key, (lo, hi) in SHARE_GROUP_APIS.items() if key not in listed]
    entries.sort(key=lambda e: e.get("api_key"))
    return {**tree, "api_keys": _keyed_like(tree["api_keys"], entries)}


def _share_version_feature(tree, case):
    """share.version: supported 0-1 (from v4), finalized at 1 (from v3); not on a refusal."""
    if tree.get("error_code"):
        return tree
    out = dict(tree)
    if case.version >= 3 and isinstance(tree.get("finalized_features"), list):
        out["finalized_features"] = _with_feature(tree["finalized_features"], {
            "name": "share.version", "max_version_level": 1, "min_version_level": 1})
    if case.version >= 4 and isinstance(tree.get("supported_features"), list):
        out["supported_features"] = _with_feature(tree["supported_features"], {
            "name": "share.version", "min_version": 0, "max_version": 1})
    return out


def _transaction_version_feature(tree, case):
    """transaction.version: supported 0-2 (from v4); finalized at 0 (not listed)."""
    if tree.get("error_code") or case.version < 4 or not isinstance(
            tree.get("supported_features"), list):
        return tree
    return {**tree, "supported_features": _with_feature(tree["supported_features"], {
        "name": "transaction.version", "min_version": 0, "max_version": 2})}


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


# -- DescribeConfigs / CreateTopics: share groups' keys ---------------------------------------

TOPIC = 2
INT_TYPE, SHORT_TYPE, LIST_TYPE = 3, 4, 7
# Kafka 3.9's values that Kafka 4.2 changed: key -> (3.9's value, 4.2's value)
SHARE_BROKER_DEFAULTS = {
    "group.coordinator.rebalance.protocols": ("classic,consumer", "classic,consumer,share"),
    "group.share.partition.max.record.locks": ("200", "2000"),
}
# Keys Kafka 3.9 does not define, at Kafka 4.2's default: key -> (value, type, read-only)
SHARE_BROKER_KEYS = {
    "group.share.assignors": ("simple", LIST_TYPE, True),
    "group.share.max.share.sessions": ("2000", INT_TYPE, True),
    "share.fetch.purgatory.purge.interval.requests": ("1000", INT_TYPE, True),
    "share.coordinator.append.linger.ms": ("-1", INT_TYPE, True),
    "share.coordinator.cached.buffer.max.bytes": ("1048588", INT_TYPE, False),
    "share.coordinator.load.buffer.size": ("5242880", INT_TYPE, True),
    "share.coordinator.snapshot.update.records.per.snapshot": ("500", INT_TYPE, True),
    "share.coordinator.state.topic.compression.codec": ("0", INT_TYPE, True),
    "share.coordinator.state.topic.num.partitions": ("50", INT_TYPE, True),
    "share.coordinator.state.topic.segment.bytes": ("104857600", INT_TYPE, True),
    "share.coordinator.threads": ("1", INT_TYPE, True),
    "share.coordinator.write.timeout.ms": ("5000", INT_TYPE, True),
    "errors.deadletterqueue.topic.name.prefix": ("dlq.", STRING_TYPE, True),      # KIP-1191
}
# Keys config/server.properties sets that Kafka 3.9 does not define (so it describes them as
# unknown: sensitive, no value, type UNKNOWN) and Kafka 4.2 defines as SHORT.
SHARE_STATE_TOPIC_KEYS = ("share.coordinator.state.topic.replication.factor",
                          "share.coordinator.state.topic.min.isr")
DEAD_LETTER_TOPIC_KEY = "errors.deadletterqueue.group.enable"      # KIP-1191, BOOLEAN false
# The entries of Kafka 3.9 the new ones are modelled on (a read-only broker key at its default;
# a topic key of the same kind: BOOLEAN, default false, no broker synonym); a listing without
# them (some keys only) gets nothing added.
_BROKER_TEMPLATE = "group.consumer.assignors"
_TOPIC_TEMPLATE = "remote.log.copy.disable"


def _share_broker_keys(tree, case):
    results = []
    for result in tree.get("results") or []:
        configs = result.get("configs")
        if result.get("resource_type") == BROKER and isinstance(configs, list):
            result = dict(result, configs=_share_broker_configs(configs))
        results.append(result)
    return {**tree, "results": _keyed_like(tree.get("results"), results)}


def _share_broker_configs(configs):
    file_values = _server_properties()
    out = []
    for entry in configs:
        old_new = SHARE_BROKER_DEFAULTS.get(entry.get("name"))
        if old_new and entry.get("value") == old_new[0]:
            entry = _renamed(entry, entry["name"], old_new[1])
        if entry.get("name") == "group.share.max.size" and entry.get("config_type") == SHORT_TYPE:
            entry = dict(entry, config_type=INT_TYPE)
        if entry.get("name") in SHARE_STATE_TOPIC_KEYS and entry.get("is_sensitive"):
            entry = _defined(entry, file_values.get(entry["name"]), SHORT_TYPE)
        out.append(entry)
    template = next((e for e in configs if e.get("name") == _BROKER_TEMPLATE), None)
    if template is not None:
        names = {e.get("name") for e in out}
        for name, (value, config_type, read_only) in SHARE_BROKER_KEYS.items():
            if name not in names:
                out.append(_like(template, name, value, config_type, read_only))
    return _keyed_like(configs, sorted(out, key=lambda e: e.get("name")))


def _server_properties() -> dict[str, str]:
    return loads(SERVER_PROPERTIES.read_text())


def _defined(entry: dict, value, config_type: int) -> dict:
    """An unknown key as a defined, non-sensitive one: its value shown, its type known."""
    entry = _renamed(entry, entry["name"], value)
    entry["is_sensitive"] = False
    if "config_type" in entry:
        entry["config_type"] = config_type
    return entry


def _like(template: dict, name: str, value: str, config_type: int, read_only: bool) -> dict:
    entry = _renamed(template, name, value)
    entry["read_only"] = read_only
    if "config_type" in entry:
        entry["config_type"] = config_type
    return entry


def _dead_letter_topic_key(tree, case):
    """errors.deadletterqueue.group.enable among a topic's configs: DescribeConfigs' TOPIC
    results, CreateTopics' topics (v5+)."""
    key = "results" if case.api_key == 32 else "topics"
    items = []
    for item in tree.get(key) or []:
        configs = item.get("configs")
        if (case.api_key != 32 or item.get("resource_type") == TOPIC) and isinstance(configs, list):
            item = dict(item, configs=_with_topic_key(configs))
        items.append(item)
    return {**tree, key: _keyed_like(tree.get(key), items)}


def _with_topic_key(configs):
    template = next((e for e in configs if e.get("name") == _TOPIC_TEMPLATE), None)
    if template is None or any(e.get("name") == DEAD_LETTER_TOPIC_KEY for e in configs):
        return configs
    added = _renamed(template, DEAD_LETTER_TOPIC_KEY, "false")
    return _keyed_like(configs, sorted([*configs, added], key=lambda e: e.get("name")))


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


# -- transactions v2 --------------------------------------------------------------------------

NO_ERROR, INVALID_TXN_STATE = 0, 48


def _end_txn_v5(tree, case):
    """EndTxn v5 answers the producer id and epoch the client goes on with: the bumped
    epoch after a commit or abort (every case's producer is new, at epoch 0), -1/-1 with an
    error; an abort in Empty aborts with a bump (no partition added)."""
    if case.name == "abort-empty" and tree.get("error_code") == INVALID_TXN_STATE:
        tree = dict(tree, error_code=NO_ERROR)
    if tree.get("error_code") == NO_ERROR:
        return dict(tree, producer_id="<producer id>", producer_epoch=1)
    return dict(tree, producer_id=-1, producer_epoch=-1)


def _txn_v2_ranges(tree, case):
    entries = [dict(e) for e in tree.get("api_keys") or []]
    if not entries:
        return tree
    for entry in entries:
        if entry.get("api_key") in TRANSACTIONS_V2_MAX:
            entry["max_version"] = TRANSACTIONS_V2_MAX[entry["api_key"]]
    return {**tree, "api_keys": _keyed_like(tree["api_keys"], entries)}


END_TXN_V5_PARTITION = 15      # (12, 13, 15)[5 % 3] in cases/transactions.py


def _bumped_by_v2_markers(tree, case):
    topics = []
    for topic in tree.get("topics") or []:
        parts = []
        for part in topic.get("partitions") or []:
            producers = part.get("active_producers")
            if part.get("partition_index") == END_TXN_V5_PARTITION and \
                    isinstance(producers, list) and len(producers) >= 2:
                bumped = [dict(p, producer_epoch=1, last_sequence=-1) for p in producers[-2:]]
                part = dict(part, active_producers=_keyed_like(
                    producers, list(producers[:-2]) + bumped))
            parts.append(part)
        topics.append(dict(topic, partitions=_keyed_like(topic.get("partitions"), parts)))
    return {**tree, "topics": _keyed_like(tree.get("topics"), topics)}


# The TxnOffsetCommit v5 case whose offsets partition is added (not refused): its
# transaction stays Ongoing (for its 10-minute timeout, longer than the suite runs).
V5_OPEN_TXN = "conf-toc-v5-na"
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


class AtLeast:
    """An expected size that kafkapy may exceed (``==`` any int from ``size`` up)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __eq__(self, other) -> bool:
        return isinstance(other, int) and other >= self.size

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.size)

    def __repr__(self) -> str:
        return f">={self.size}"


def _v5_transaction_listed(tree, case):
    states = tree.get("transaction_states")
    if tree.get("error_code") or not isinstance(states, list) or any(
            s.get("transactional_id") == V5_OPEN_TXN for s in states):
        return tree
    added = {"transactional_id": V5_OPEN_TXN, "producer_id": "<producer id>",
             "transaction_state": "Ongoing"}
    return {**tree, "transaction_states": _keyed_like(states, list(states) + [added])}


def _internal_sizes_grow(tree, case):
    results = []
    for result in tree.get("results") or []:
        topics = []
        for topic in result.get("topics") or []:
            if topic.get("name") in INTERNAL_TOPICS:
                parts = [dict(p, partition_size=AtLeast(p["partition_size"]))
                         if isinstance(p.get("partition_size"), int) else p
                         for p in topic.get("partitions") or []]
                topic = dict(topic, partitions=_keyed_like(topic.get("partitions"), parts))
            topics.append(topic)
        results.append(dict(result, topics=_keyed_like(result.get("topics"), topics)))
    return {**tree, "results": _keyed_like(tree.get("results"), results)}


def _partitions_added(tree, case):
    """TxnOffsetCommit v5 adds the offsets partition, so nothing answers that it is not in
    the transaction."""
    topics = []
    for topic in tree.get("topics") or []:
        parts = [dict(p, error_code=NO_ERROR) for p in topic.get("partitions") or []]
        topics.append(dict(topic, partitions=_keyed_like(topic.get("partitions"), parts)))
    return {**tree, "topics": _keyed_like(tree.get("topics"), topics)}


KAFKA_4: tuple[Kafka4, ...] = (
    Kafka4("ApiVersions: the transactions v2 versions", _api(18), _txn_v2_ranges,
           "Kafka 4.x serves Produce v12, EndTxn v5, WriteTxnMarkers v2 and TxnOffsetCommit v5 "
           "whatever transaction.version is finalized (the 4.3 client uses them only while "
           "it is 2: its Produce, EndTxn and TxnOffsetCommit builders cap at v11/v4/v4 "
           "otherwise), so ApiVersions lists them (TRANSACTIONS_V2_MAX)."),
    Kafka4("DescribeProducers: producers of EndTxn v5's transactions",
           _api(61, names={"ended-transactions"}), _bumped_by_v2_markers,
           "The markers of a transactions v2 commit or abort carry the bumped epoch, and a "
           "marker of a new epoch resets the producer's sequence on the partition (Kafka's "
           "ProducerStateEntry.maybeUpdateProducerEpoch): the producers of the EndTxn v5 "
           "'commit' and 'abort' cases, the two newest on their partition, show epoch 1 and "
           "last sequence -1 where Kafka 3.9's v4 markers leave epoch 0 and sequence 0."),
    Kafka4("EndTxn v5: producer id and epoch", _api(26, versions={5}), _end_txn_v5,
           "EndTxn v5 (EndTxnResponse.json, Kafka 4.3 client: 'Version 5 enables bumping "
           "epoch on every transaction ... producer ID and epoch are included in the "
           "response'); TransactionCoordinator.endTransaction's table for transaction "
           "version 2: Empty + abort at the current epoch bumps (EB), Empty + commit is "
           "INVALID_TXN_STATE; errors answer -1/-1."),
    Kafka4("ListTransactions: the transaction TxnOffsetCommit v5 opened",
           _api(66, names={"ongoing"}), _v5_transaction_listed,
           "The TxnOffsetCommit v5 case without AddOffsetsToTxn adds the offsets partition to "
           "its transaction (see the TxnOffsetCommit v5 rule), which is Ongoing from then on; "
           "Kafka 3.9, asked at v4, refused it and has no such transaction."),
    Kafka4("DescribeLogDirs: internal topics hold transactions v2's records",
           _api(35, names={"all"}), _internal_sizes_grow,
           "The transactions v2 cases write Kafka 4's records: __transaction_state values of "
           "version 1 (tagged fields), PrepareAbort/CompleteAbort of aborts with nothing "
           "added, the bumped epochs' markers, and the offsets TxnOffsetCommit v5 commits "
           "where Kafka 3.9 at v4 refuses them; so the internal topics' partitions are at "
           "least as large as Kafka 3.9's (AtLeast), every other size compared exactly."),
    Kafka4("TxnOffsetCommit v5: the offsets partition added", 
           _api(28, versions={5}, names={"without-add-offsets"}), _partitions_added,
           "TxnOffsetCommit v5 'will also include the function for a AddOffsetsToTxn call' "
           "(TxnOffsetCommitRequest.json of the Kafka 4.3 client): the offsets partition is "
           "added to the transaction instead of answering TRANSACTION_ABORTABLE."),
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
    Kafka4("ApiVersions: the share group APIs", _api(18), _share_api_ranges,
           "kafkapy serves share groups (KIP-932) as Kafka 4.2 does and lists their APIs at "
           "Kafka 4.2's ranges (the schemas in protocol/*.json, Kafka 4.2's): "
           "ShareGroupHeartbeat 76 v1, ShareGroupDescribe 77 v1, ShareFetch 78 v1-2, "
           "ShareAcknowledge 79 v1-2, the share coordinator's InitializeShareGroupState 83 v0, "
           "ReadShareGroupState 84 v0, WriteShareGroupState 85 v0-1, DeleteShareGroupState 86 "
           "v0, ReadShareGroupStateSummary 87 v0-1, and DescribeShareGroupOffsets 90 v0-1, "
           "AlterShareGroupOffsets 91 v0, DeleteShareGroupOffsets 92 v0; Kafka 3.9 in "
           "ZooKeeper mode lists none of them (KAFKA_4_ONLY_APIS)."),
    Kafka4("ApiVersions: transaction.version", _api(18), _transaction_version_feature,
           "kafkapy supports transactions v2 (KIP-890) as Kafka 4.x does and lists "
           "transaction.version supported 0-2 (server-common/.../TransactionVersion.java: "
           "TV_2, the epoch bump per transaction; left out below v4 as its minimum is 0); it is "
           "finalized at 0, which is not listed, until an operator upgrades it with "
           "UpdateFeatures; Kafka 3.9 in ZooKeeper mode has no features."),
    Kafka4("ApiVersions: share.version", _api(18), _share_version_feature,
           "Kafka 4.2 serves share groups while its share.version feature is at level 1 "
           "(server-common/.../ShareVersion.java: SV_1, bootstrapped from metadata version "
           "IBP_4_2_IV0, so a new 4.2 cluster finalizes it at 1), so kafkapy lists share.version "
           "supported 0-1 and finalized at 1 (left out below v4 like group.version); Kafka "
           "3.9 in ZooKeeper mode has no features."),
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
    Kafka4("DescribeConfigs: share groups' broker keys", _api(32), _share_broker_keys,
           "Kafka 4.2's broker keys of share groups, which kafkapy has (kafkapy/config/"
           "broker_keys.py): group.coordinator.rebalance.protocols lists share (kafkapy serves "
           "share groups only while it does; Kafka 4.2 lists classic,consumer,streams and turns "
           "share groups on with share.version, and kafkapy has no streams groups); "
           "group.share.partition.max.record.locks 2000 (Kafka 4.2's ShareGroupConfig; 3.9: "
           "200); group.share.max.size an INT (Kafka 4.2's GroupCoordinatorConfig; 3.9: "
           "SHORT); share.coordinator.state.topic.replication.factor and .min.isr, which "
           "config/server.properties sets as Kafka 4.x's sample does, defined as SHORT with "
           "their values shown (Kafka 3.9 does not define them, so it describes them as unknown "
           "keys: sensitive, no value, type UNKNOWN); and the keys Kafka 3.9 lacks, at Kafka "
           "4.2's defaults: group.share.assignors=simple, group.share.max.share.sessions=2000, "
           "share.fetch.purgatory.purge.interval.requests=1000 (ShareGroupConfig, "
           "GroupCoordinatorConfig) and the share coordinator's share.coordinator.* "
           "(ShareCoordinatorConfig; cached.buffer.max.bytes is its one dynamic key); plus "
           "KIP-1191's errors.deadletterqueue.topic.name.prefix=dlq. (a read-only STRING), the "
           "prefix of share groups' dead-letter topics, which kafkapy serves ahead of Kafka.  "
           "Only the BROKER results listing every key change."),
    Kafka4("DescribeConfigs/CreateTopics: errors.deadletterqueue.group.enable",
           lambda case: (case.api_key == 32 or (case.api_key == 19 and case.version >= 5)),
           _dead_letter_topic_key,
           "KIP-1191's topic key errors.deadletterqueue.group.enable (BOOLEAN, default false, "
           "no broker synonym): a topic may be a share group's dead-letter topic only while it "
           "is true.  kafkapy serves share groups' dead-letter topics ahead of Kafka (no Kafka "
           "release has the key yet), so every listing of a topic's configs has it: "
           "DescribeConfigs' TOPIC results and CreateTopics' configs (v5+), listed like Kafka "
           "3.9's remote.log.copy.disable, a key of the same kind."),
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
