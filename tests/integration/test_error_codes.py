"""Error codes and response shapes a real Kafka 3.9 broker (ZooKeeper mode) answers, over raw frames.

Each expectation is what Kafka 3.9.0 answered to the same request when these tests were
written: bad replica assignments, TxnOffsetCommit's transaction check, special
ListOffsets timestamps, AlterConfigs null values,
DeleteTopics v6 ids, DescribeCluster endpoint types, SyncGroup v5's mandatory
protocol, CreatePartitions naming a topic twice, Metadata by topic id, OffsetDelete
of a group's last offset, DescribeTransactions of an unknown id, authorized operations
without an authorizer, and the finalized-features epoch.
"""
from __future__ import annotations

import time
import uuid

import pytest

from kafkapy.protocol.errors import ErrorCode
from kafkapy.records.record import build_batch
from tests.support.broker_process import BrokerProcess
from tests.support.request_fields import fields
from tests.support.wire import WireClient

TOPIC = "error-codes"  # two partitions, replication factor 1, on broker 0


@pytest.fixture(scope="module")
def wire(broker):
    client = WireClient(broker.bootstrap)
    created = client.request(19, 7, **fields(19, topics=[dict(
        name=TOPIC, num_partitions=2, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=10000, validate_only=False))
    assert created.topics[0].error_code == 0
    yield client
    client.close()


def _coordinator(wire, key: str, key_type: int = 0) -> None:
    """Ask until the coordinator is ready (the first ask creates its internal topic)."""
    for _ in range(300):
        if wire.request(10, 3, key=key, key_type=key_type).error_code == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"no coordinator for {key!r}")


# -- item 2: bad replica assignments -------------------------------------------------------

def _create_assigned(wire, name, assignment, timeout_ms=10000):
    r = wire.request(19, 7, **fields(19, topics=[dict(
        name=name, num_partitions=-1, replication_factor=-1, configs=[],
        assignments=[dict(partition_index=i, broker_ids=b) for i, b in assignment])],
        timeout_ms=timeout_ms, validate_only=False))
    [topic] = r.topics
    return topic.error_code, topic.error_message


def test_create_topics_with_a_bad_assignment(wire):
    bad = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert _create_assigned(wire, "a1", [(0, [0]), (1, [0, 1])]) == (
        bad, "All partitions should have the same number of replicas")
    assert _create_assigned(wire, "a2", [(1, [0])]) == (
        bad, "partitions should be a consecutive 0-based integer sequence")
    assert _create_assigned(wire, "a3", [(0, [0, 0])]) == (
        bad, "Duplicate replica assignment found: HashMap(0 -> ArrayBuffer(0, 0))")



def _metadata_error(wire, name):
    r = wire.request(3, 9, **fields(3, topics=[dict(name=name)], allow_auto_topic_creation=False,
                                    include_cluster_authorized_operations=False,
                                    include_topic_authorized_operations=False))
    return r.topics[0].error_code


def test_create_topics_on_unknown_brokers_times_out_leaderless(wire):
    """Kafka in ZooKeeper mode creates such a topic and waits for leaders that never come."""
    timed_out = (ErrorCode.REQUEST_TIMED_OUT, None)
    assert _create_assigned(wire, "on-broker-5", [(0, [5])], timeout_ms=200) == timed_out
    assert _create_assigned(wire, "on-no-broker", [(0, [])], timeout_ms=200) == timed_out
    # Written, but unknown to the metadata cache: hidden, yet its name is taken.
    assert _metadata_error(wire, "on-broker-5") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert _create_assigned(wire, "on-broker-5", [(0, [0])]) == (
        ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'on-broker-5' already exists.")


def test_create_topics_with_no_timeout_answers_request_timed_out(wire):
    r = wire.request(19, 7, **fields(19, topics=[dict(
        name="no-wait", num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=0, validate_only=False))
    [topic] = r.topics
    assert (topic.error_code, topic.num_partitions, topic.configs) == (
        ErrorCode.REQUEST_TIMED_OUT, -1, [])
    assert topic.topic_id is not None
    # Created all the same (Kafka's cache learns of it a moment later).
    for _ in range(300):
        if _metadata_error(wire, "no-wait") == 0:
            break
        time.sleep(0.1)
    assert _metadata_error(wire, "no-wait") == 0


def test_create_topics_naming_a_topic_twice_refuses_each_entry(wire):
    def entry(name):
        return dict(name=name, num_partitions=1, replication_factor=1, assignments=[],
                    configs=[])
    r = wire.request(19, 7, **fields(19, topics=[entry("twice"), entry("once"), entry("twice")],
                                     timeout_ms=10000, validate_only=True))
    assert [(t.name, t.error_code, t.error_message) for t in r.topics] == [
        ("twice", ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic."),
        ("once", 0, None),
        ("twice", ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic.")]
    assert r.topics[1].topic_id is None  # validate_only: no id is given out


def _add_partitions(wire, topics, validate_only=True):
    r = wire.request(37, 3, **fields(37, topics=topics, timeout_ms=10000,
                                     validate_only=validate_only))
    return [(t.name, t.error_code, t.error_message) for t in r.results]


def test_create_partitions_with_a_bad_assignment(wire):
    bad = ErrorCode.INVALID_REPLICA_ASSIGNMENT

    def grow(count, *assignment):
        [result] = _add_partitions(wire, [dict(name=TOPIC, count=count, assignments=[
            dict(broker_ids=b) for b in assignment])])
        return result[1:]
    assert grow(3, [5]) == (bad, "Unknown broker(s) in replica assignment: 5.")
    assert grow(3, [0, 1]) == (bad, "Unknown broker(s) in replica assignment: 1.")
    assert grow(4, [0]) == (
        bad, "Increasing the number of partitions by 2 but 1 assignments provided.")
    assert grow(3, []) == (bad, "Cannot have replication factor of 0 for partition id 2.")
    assert grow(3, [0, 0]) == (
        bad, "Duplicate brokers not allowed in replica assignment: 0, 0 for partition id 2.")


def test_create_partitions_naming_a_topic_twice_gets_one_result_last(wire):
    twice = dict(name=TOPIC, count=3, assignments=None)
    other = dict(name="no-such-topic", count=3, assignments=None)
    assert _add_partitions(wire, [twice, other, twice]) == [
        ("no-such-topic", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
         "The topic 'no-such-topic' does not exist."),
        (TOPIC, ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")]


# -- item 6: TxnOffsetCommit checks the transaction ----------------------------------------

def _txn_commit(wire, version, txn_id, pid, epoch, group="txn-group"):
    r = wire.request(28, version, **fields(28, transactional_id=txn_id, group_id=group,
                                           producer_id=pid, producer_epoch=epoch,
                                           generation_id=-1, member_id="",
                                           group_instance_id=None, topics=[dict(
                                               name=TOPIC, partitions=[dict(
                                                   partition_index=0, committed_offset=1,
                                                   committed_leader_epoch=-1,
                                                   committed_metadata="")])]))
    return r.topics[0].partitions[0].error_code


@pytest.mark.parametrize("version", range(5))
def test_txn_offset_commit_checks_the_transaction(wire, version):
    txn_id = f"txn-commit-{version}"
    _coordinator(wire, "txn-group")
    _coordinator(wire, txn_id, key_type=1)
    assert _txn_commit(wire, version, txn_id, 987654, 0) == (
        ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    init = wire.request(22, 4, transactional_id=txn_id, transaction_timeout_ms=60000,
                        producer_id=-1, producer_epoch=-1)
    pid, epoch = init.producer_id, init.producer_epoch
    assert _txn_commit(wire, version, txn_id, pid, epoch + 1) == ErrorCode.INVALID_PRODUCER_EPOCH
    # Not added with AddOffsetsToTxn: v4 says TRANSACTION_ABORTABLE, older versions
    # INVALID_TXN_STATE.
    assert _txn_commit(wire, version, txn_id, pid, epoch) == (
        ErrorCode.TRANSACTION_ABORTABLE if version >= 4 else ErrorCode.INVALID_TXN_STATE)
    added = wire.request(25, 3, transactional_id=txn_id, producer_id=pid,
                         producer_epoch=epoch, group_id="txn-group")
    assert added.error_code == 0
    assert _txn_commit(wire, version, txn_id, pid, epoch) == 0
    assert wire.request(26, 3, transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                        committed=False).error_code == 0


# -- item 7: wrong error codes ------------------------------------------------------------

def _list_offsets(wire, version, timestamp):
    r = wire.request(2, version, **fields(2, replica_id=-1, isolation_level=0, topics=[dict(
        name=TOPIC, partitions=[dict(partition_index=0, current_leader_epoch=-1,
                                     timestamp=timestamp)])]))
    p = r.topics[0].partitions[0]
    return p.error_code, p.offset, p.timestamp


def test_list_offsets_special_timestamps_by_version(wire):
    unsupported = (ErrorCode.UNSUPPORTED_VERSION, -1, -1)
    assert _list_offsets(wire, 9, -9) == unsupported
    assert _list_offsets(wire, 9, -6) == unsupported
    assert _list_offsets(wire, 9, -5) == (0, -1, -1)  # latest tiered: nothing is tiered
    assert _list_offsets(wire, 8, -5) == unsupported
    assert _list_offsets(wire, 7, -4) == unsupported
    assert _list_offsets(wire, 6, -3) == unsupported
    assert _list_offsets(wire, 8, -4)[:2] == (0, 0)


def test_alter_configs_null_value_is_an_invalid_request(wire):
    r = wire.request(33, 2, **fields(33, resources=[dict(
        resource_type=2, resource_name=TOPIC,
        configs=[dict(name="retention.ms", value=None)])], validate_only=True))
    [result] = r.responses
    assert (result.error_code, result.error_message) == (
        ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms")


def _delete_v6(wire, *topics):
    r = wire.request(20, 6, **fields(20, topics=[dict(name=n, topic_id=i) for n, i in topics],
                                     timeout_ms=10000))
    return [(t.name, t.topic_id, t.error_code) for t in r.responses]


def test_delete_topics_v6_ids(wire):
    # The zero id with no name is refused as Kafka's authorizer check refuses a null name.
    assert _delete_v6(wire, (None, uuid.UUID(int=0))) == [
        (None, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    unknown = uuid.uuid4()
    assert _delete_v6(wire, (None, unknown)) == [(None, unknown, ErrorCode.UNKNOWN_TOPIC_ID)]
    # Name and id together make the whole request invalid, the other topic included.
    assert _delete_v6(wire, (TOPIC, unknown), ("x", None)) == [
        (TOPIC, unknown, ErrorCode.INVALID_REQUEST), ("x", None, ErrorCode.INVALID_REQUEST)]


@pytest.fixture(scope="module")
def no_deletion_broker(tmp_path_factory):
    """A broker of its own: delete.topic.enable=false, and no internal topic yet."""
    with BrokerProcess(tmp_path_factory.mktemp("no-deletion") / "logs",
                       overrides={"delete.topic.enable": "false"}).start() as b:
        yield b


@pytest.mark.parametrize("version,expected", [
    (0, ErrorCode.INVALID_REQUEST), (2, ErrorCode.INVALID_REQUEST),
    (3, ErrorCode.TOPIC_DELETION_DISABLED), (5, ErrorCode.TOPIC_DELETION_DISABLED)])
def test_delete_topics_disabled_by_version(no_deletion_broker, version, expected):
    client = WireClient(no_deletion_broker.bootstrap)
    try:
        r = client.request(20, version, topic_names=["any", "other"], timeout_ms=10000)
    finally:
        client.close()
    assert [(t.name, t.error_code) for t in r.responses] == [
        ("any", expected), ("other", expected)]


def _describe_cluster(wire, version, **extra):
    return wire.request(60, version, include_cluster_authorized_operations=True, **extra)


def test_describe_cluster_endpoint_types(wire):
    r = _describe_cluster(wire, 1, endpoint_type=3)
    assert (r.error_code, r.error_message, r.endpoint_type, r.cluster_id, r.controller_id,
            r.brokers) == (ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 3",
                           1, "", -1, [])
    r = _describe_cluster(wire, 1, endpoint_type=2)
    assert (r.error_code, r.endpoint_type, r.cluster_id) == (
        ErrorCode.MISMATCHED_ENDPOINT_TYPE, 1, "")
    r = _describe_cluster(wire, 1, endpoint_type=1)
    assert r.error_code == 0 and r.controller_id == 0


def test_sync_group_v5_needs_protocol_type_and_name(wire):
    _coordinator(wire, "sync-group")
    r = wire.request(14, 5, group_id="sync-group", generation_id=1, member_id="m",
                     group_instance_id=None, protocol_type=None, protocol_name=None,
                     assignments=[])
    assert (r.error_code, r.protocol_type, r.protocol_name, r.assignment) == (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL, None, None, b"")


# -- item 8: wrong shapes -----------------------------------------------------------------

def _metadata(wire, version, topics, cluster_ops=False, topic_ops=False):
    return wire.request(3, version, **fields(3, topics=topics, allow_auto_topic_creation=False,
                                             include_cluster_authorized_operations=cluster_ops,
                                             include_topic_authorized_operations=topic_ops))


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_refuse_topic_ids(wire, version):
    topic_id = uuid.uuid4()
    r = _metadata(wire, version, [dict(name=None, topic_id=topic_id)])
    assert (r.brokers, r.cluster_id, r.controller_id) == ([], None, -1)
    assert [(t.error_code, t.name, t.topic_id) for t in r.topics] == [
        (ErrorCode.INVALID_REQUEST, "", topic_id)]


def test_metadata_v12_by_id(wire):
    known = _metadata(wire, 12, [dict(name=TOPIC, topic_id=None)]).topics[0].topic_id
    unknown = uuid.uuid4()
    r = _metadata(wire, 12, [dict(name=None, topic_id=known), dict(name=None, topic_id=unknown)])
    assert [(t.error_code, t.name) for t in r.topics] == [
        (ErrorCode.UNKNOWN_TOPIC_ID, None), (0, TOPIC)]


def test_metadata_answers_a_repeated_name_once(wire):
    r = _metadata(wire, 12, [dict(name=TOPIC, topic_id=None), dict(name=TOPIC, topic_id=None)])
    assert [t.name for t in r.topics] == [TOPIC]


def test_authorized_operations_are_the_full_sets(wire):
    asked = _metadata(wire, 8, [dict(name=TOPIC)], cluster_ops=True, topic_ops=True)
    assert asked.authorized_operations == {5, 7, 8, 9, 10, 11, 12}  # 8096
    assert asked.topics[0].authorized_operations == {3, 4, 5, 6, 7, 8, 10, 11}  # 3576
    not_asked = _metadata(wire, 8, [dict(name=TOPIC)])
    assert not_asked.authorized_operations is None  # INT32_MIN on the wire
    assert not_asked.topics[0].authorized_operations is None
    assert _describe_cluster(wire, 0).authorized_operations == {5, 7, 8, 9, 10, 11, 12}
    # Only v8-10 carry the cluster's operations.
    assert _metadata(wire, 11, [dict(name=TOPIC)], cluster_ops=True,
                     topic_ops=True).topics[0].authorized_operations == {
        3, 4, 5, 6, 7, 8, 10, 11}


def _commit_offsets(wire, group: str, partitions: list[int]) -> list[int]:
    """Commit offset 1 for ``partitions`` of TOPIC outside any generation; their codes."""
    committed = wire.request(8, 9, **fields(8, group_id=group, generation_id_or_member_epoch=-1,
                                            member_id="", group_instance_id=None, topics=[dict(
                                                name=TOPIC, partitions=[dict(
                                                    partition_index=p, committed_offset=1,
                                                    committed_leader_epoch=-1,
                                                    committed_metadata="")
                                                    for p in partitions])]))
    return [p.error_code for p in committed.topics[0].partitions]


def test_offset_delete_of_the_last_offset_removes_the_group(wire):
    group = "offset-delete-group"
    _coordinator(wire, group)
    assert _commit_offsets(wire, group, [0]) == [0]

    def delete():
        return wire.request(47, 0, **fields(47, group_id=group, topics=[dict(
            name=TOPIC, partitions=[dict(partition_index=0)])]))
    first = delete()
    assert (first.error_code, first.topics[0].partitions[0].error_code) == (0, 0)
    # A group that is gone fails the whole request, unknown partitions included.
    gone = wire.request(47, 0, **fields(47, group_id=group, topics=[
        dict(name="no-such-topic", partitions=[dict(partition_index=0)])]))
    assert (gone.error_code, gone.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, [])
    assert delete().error_code == ErrorCode.GROUP_ID_NOT_FOUND
    described = wire.request(15, 5, groups=[group], include_authorized_operations=False)
    assert described.groups[0].group_state == "Dead"


def test_describe_transactions_of_an_unknown_id_leaves_zeros(wire):
    _coordinator(wire, "no-such-txn", key_type=1)
    r = wire.request(65, 0, transactional_ids=["no-such-txn"])
    [state] = r.transaction_states
    assert (state.error_code, state.transaction_start_time_ms, state.producer_id,
            state.producer_epoch, state.transaction_timeout_ms) == (
        ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, 0, 0, 0, 0)


def test_api_versions_finalized_features_epoch_is_zero(wire):
    r = wire.request(18, 3, client_software_name="error-codes", client_software_version="1")
    assert (r.error_code, r.finalized_features_epoch) == (0, 0)
    # kafkapy's own features (the consumer group protocol, share groups); /feature finalizes none
    assert [(f.name, f.max_version_level) for f in r.finalized_features] == [
        ("group.version", 1), ("share.version", 1)]


# -- further shapes met on the way ------------------------------------------------------

def test_metadata_auto_creates_internal_topics_and_flags_them(no_deletion_broker):
    client = WireClient(no_deletion_broker.bootstrap)
    try:
        def ask(allow_auto):
            r = client.request(3, 9, **fields(3, topics=[dict(name="__transaction_state")],
                                              allow_auto_topic_creation=allow_auto,
                                              include_cluster_authorized_operations=False,
                                              include_topic_authorized_operations=False))
            return r.topics[0]
        missing = ask(False)
        assert (missing.error_code, missing.is_internal) == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True)
        created = ask(True)
        assert (created.error_code, created.is_internal) == (ErrorCode.LEADER_NOT_AVAILABLE, True)
        # The controller brings the written topic online through its watch, as in Kafka.
        for _ in range(600):
            if ask(False).partitions:
                break
            time.sleep(0.05)
        assert len(ask(False).partitions) == 50  # transaction.state.log.num.partitions
    finally:
        client.close()


def test_metadata_answers_illegal_names_before_topics_it_creates(wire):
    r = wire.request(3, 1, **fields(3, topics=[dict(name=TOPIC), dict(name="auto-made"),
                                               dict(name="bad name!")]))
    assert [(t.name, t.error_code) for t in r.topics] == [
        (TOPIC, 0), ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("auto-made", ErrorCode.LEADER_NOT_AVAILABLE)]


def test_find_coordinator_messages(wire):
    _coordinator(wire, "msg-group")
    assert wire.request(10, 3, key="msg-group", key_type=0).error_message == "NONE"
    batched = wire.request(10, 4, key_type=0, coordinator_keys=["msg-group"])
    assert (batched.coordinators[0].error_code, batched.coordinators[0].error_message) == (0, "")
    # Share keys (type 2) from v6, "<group>:<topic id>:<partition>" (another key is
    # malformed); type 3 is not a type at all.
    share = wire.request(10, 6, key_type=2, coordinator_keys=["s"]).coordinators[0]
    assert (share.error_code, share.error_message) == (ErrorCode.INVALID_REQUEST, "")
    share = wire.request(10, 5, key_type=2, coordinator_keys=["s"]).coordinators[0]
    assert (share.error_code, share.error_message) == (ErrorCode.INVALID_REQUEST, "")
    bogus = wire.request(10, 4, key_type=3, coordinator_keys=["a", "b"]).coordinators
    assert [(c.key, c.error_code, c.node_id) for c in bogus] == [
        ("a", ErrorCode.INVALID_REQUEST, -1), ("b", ErrorCode.INVALID_REQUEST, -1)]
    assert bogus[0].error_message.startswith("This most likely occurs because of a request")


def test_describe_producers_messages(wire):
    r = wire.request(61, 0, **fields(61, topics=[dict(name=TOPIC, partition_indexes=[9]),
                                                 dict(name="no-such-topic", partition_indexes=[0]),
                                                 dict(name="bad name!", partition_indexes=[0])]))
    got = [(t.name, p.error_code, p.error_message) for t in r.topics for p in t.partitions]
    assert got[:2] == [
        (TOPIC, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None),
        ("no-such-topic", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
         "This server does not host this topic-partition.")]
    assert got[2][:2] == ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION)


def test_config_messages(wire):
    def alter(name, value):
        r = wire.request(33, 2, **fields(33, resources=[dict(
            resource_type=2, resource_name=TOPIC, configs=[dict(name=name, value=value)])],
            validate_only=True))
        return r.responses[0].error_code, r.responses[0].error_message
    # A value the config definition refuses names the resource; an unknown key does not.
    assert alter("retention.ms", "abc") == (
        ErrorCode.INVALID_CONFIG, f"Invalid config value for resource ConfigResource("
        f"type=TOPIC, name='{TOPIC}'): Invalid value abc for configuration retention.ms: "
        f"Not a number of type LONG")
    assert alter("bogus.key", "1") == (ErrorCode.INVALID_CONFIG,
                                       "Unknown topic config name: bogus.key")
    r = wire.request(32, 4, **fields(32, resources=[
        dict(resource_type=4, resource_name="x", configuration_keys=None),
        dict(resource_type=16, resource_name="sub", configuration_keys=None),
        dict(resource_type=2, resource_name="bad name!", configuration_keys=None)],
        include_synonyms=False, include_documentation=False))
    assert [(x.error_code, x.error_message) for x in r.results] == [
        (ErrorCode.INVALID_REQUEST, "Broker id must be an integer, but it is: x"),
        (ErrorCode.INVALID_REQUEST,
         "Config type client-metrics is only supported on KRaft clusters"),
        (ErrorCode.INVALID_TOPIC_EXCEPTION,
         "Topic name is invalid: 'bad name!' contains one or more characters other than "
         "ASCII alphanumerics, '.', '_' and '-'")]
    # A type Kafka cannot name fails the whole request, the good resource too.
    r = wire.request(32, 4, **fields(32, resources=[
        dict(resource_type=3, resource_name="x", configuration_keys=None),
        dict(resource_type=2, resource_name=TOPIC, configuration_keys=None)],
        include_synonyms=False, include_documentation=False))
    assert [x.error_code for x in r.results] == [ErrorCode.INVALID_REQUEST] * 2
    assert all(not x.configs for x in r.results)


def test_illegal_topic_names_get_kafka_3_9_reasons(wire):
    def create(name):
        r = wire.request(19, 7, **fields(19, topics=[dict(
            name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=10000, validate_only=True))
        return r.topics[0].error_code, r.topics[0].error_message
    assert create("") == (ErrorCode.INVALID_TOPIC_EXCEPTION,
                          "Topic name is invalid: the empty string is not allowed")
    assert create("..") == (ErrorCode.INVALID_TOPIC_EXCEPTION,
                            "Topic name is invalid: '..' is not allowed")
    assert create("x" * 250) == (
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed "
        f"length 249")


def test_offset_delete_refuses_unknown_partitions_first(wire):
    group = "offset-delete-unknown"
    _coordinator(wire, group)
    assert _commit_offsets(wire, group, [0, 1]) == [0, 0]
    r = wire.request(47, 0, **fields(47, group_id=group, topics=[
        dict(name=TOPIC, partitions=[dict(partition_index=0), dict(partition_index=9)]),
        dict(name="no-such-topic", partitions=[dict(partition_index=0)])]))
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert r.error_code == 0
    assert [(t.name, p.partition_index, p.error_code) for t in r.topics for p in t.partitions] == [
        (TOPIC, 9, unknown), (TOPIC, 0, 0), ("no-such-topic", 0, unknown)]


def test_api_versions_bad_software_name_lists_no_apis(wire):
    correlation, data = wire.encode(18, 3, client_software_name="-bad",
                                    client_software_version="1")
    wire.send_raw(data)
    # correlation id, error 42, an empty compact array, throttle 0, no tagged fields:
    # byte for byte what Kafka 3.9 answers.
    assert wire.recv_frame() == correlation.to_bytes(4, "big") + bytes.fromhex("002a010000000000")


def test_no_timeout_answers_request_timed_out_but_acts(wire):
    """timeout_ms <= 0: Kafka does the work but does not wait for it, and says so."""
    name = "no-wait-admin"
    wire.request(19, 7, **fields(19, topics=[dict(
        name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=10000, validate_only=False))
    grown = wire.request(37, 3, **fields(37, topics=[dict(name=name, count=2, assignments=None)],
                                         timeout_ms=0, validate_only=False))
    assert [(r.error_code, r.error_message) for r in grown.results] == [
        (ErrorCode.REQUEST_TIMED_OUT, None)]
    checked = wire.request(37, 3, **fields(37, topics=[dict(name=name, count=2,
                                                            assignments=None)],
                                           timeout_ms=0, validate_only=True))
    assert checked.results[0].error_code == ErrorCode.INVALID_PARTITIONS  # it has 2 now
    deleted = wire.request(20, 4, topic_names=[name, "no-such-topic"], timeout_ms=0)
    assert [(t.name, t.error_code) for t in deleted.responses] == [
        (name, ErrorCode.REQUEST_TIMED_OUT), ("no-such-topic", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]


def test_describe_producers_lists_in_kafka_hash_map_order(no_deletion_broker):
    client = WireClient(no_deletion_broker.bootstrap)
    try:
        client.request(19, 7, **fields(19, topics=[dict(
            name="producers", num_partitions=1, replication_factor=1, assignments=[],
            configs=[])], timeout_ms=10000, validate_only=False))
        ids = [client.request(22, 4, transactional_id=None, transaction_timeout_ms=60000,
                              producer_id=-1, producer_epoch=-1).producer_id for _ in range(17)]
        assert ids == list(range(17))  # a fresh broker's first block starts at 0
        for pid in (16, 1, 0):
            batch = build_batch([(None, b"v", (), int(time.time() * 1000))], producer_id=pid,
                                producer_epoch=0, base_sequence=0)
            r = client.request(0, 9, **fields(0, transactional_id=None, acks=-1, timeout_ms=10000,
                                              topic_data=[dict(name="producers", partition_data=[
                                                  dict(index=0, records=batch)])]))
            assert r.responses[0].partition_responses[0].error_code == 0
        described = client.request(61, 0, **fields(61, topics=[dict(name="producers",
                                                                    partition_indexes=[0])]))
        listed = described.topics[0].partitions[0].active_producers
        # Kafka's java.util.HashMap of 16 buckets: 16 and 0 share bucket 0, in arrival order.
        assert [p.producer_id for p in listed] == [16, 0, 1]
    finally:
        client.close()


@pytest.mark.parametrize("instance_id,prefix", [("inst-1", "inst-1-"), ("", "-"),
                                                 (None, "wire-test-")])
def test_member_id_starts_with_instance_or_client_id(wire, instance_id, prefix):
    group = f"member-ids-{instance_id}"
    _coordinator(wire, group)
    r = wire.request(11, 5, **fields(11, group_id=group, session_timeout_ms=10000,
                                     rebalance_timeout_ms=10000, member_id="",
                                     group_instance_id=instance_id, protocol_type="consumer",
                                     protocols=[dict(name="range", metadata=b"")]))
    # Dynamic members first get MEMBER_ID_REQUIRED with the id to use; static ones join.
    assert r.error_code == (ErrorCode.MEMBER_ID_REQUIRED if instance_id is None else 0)
    assert r.member_id.startswith(prefix) and len(r.member_id) == len(prefix) + 36
