"""The admin handlers over a real AdminManager, EmbeddedStore and MetadataCache, with a
stand-in controller: NOT_CONTROLLER off the active controller, the waits for the cache
(answered REQUEST_TIMED_OUT at the deadline or at once with timeout_ms <= 0), and
ElectLeaders' handling of the controller's results."""
from __future__ import annotations

import asyncio

import pytest

from kafkapy.handlers import (create_partitions, create_topics, delete_topics, elect_leaders,
                              incremental_alter_configs)
from kafkapy.metadata import paths
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.messages import REQUESTS
from tests.support.admin_broker import Broker as AdminBroker, um
from tests.support.services import context, services

CT, DT, CP, EL, IAC = (REQUESTS[k] for k in (19, 20, 37, 43, 44))


class Controller:
    """Stands in for KafkaController: activity and ElectLeaders' answers."""

    def __init__(self, active=True):
        self.is_active = active
        self.elections = []
        self.outcome = {}

    async def elect_leaders(self, election_type, partitions):
        self.elections.append((election_type, partitions))
        if not self.is_active:
            return {tp: (E.NOT_CONTROLLER, None) for tp in partitions}
        return {tp: self.outcome.get(tp, (E.UNKNOWN_TOPIC_OR_PARTITION,
                                          "The partition does not exist."))
                for tp in partitions}


class Broker(AdminBroker):
    def __init__(self, tmp_path, active=True):
        super().__init__(tmp_path)
        self.controller = Controller(active)


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path)
    yield b
    b.store.close()


def ctx(broker, key, version):
    """A request to the handlers of ``broker`` (the admin harness and its controller)."""
    parts = services(node_id=broker.node_id, config=broker.config, store=broker.store,
                     cache=broker.cache, admin=broker.admin, controller=broker.controller)
    return context(parts, key, version)


def create_request(*names, timeout_ms=5000, validate_only=False, partitions=2, version=7):
    return CT(version=version, timeout_ms=timeout_ms, validate_only=validate_only, topics=[
        CT.CreatableTopic(name=n, num_partitions=partitions, replication_factor=1,
                          assignments=[], configs=[]) for n in names])


async def bring_online(broker, name, partitions, leader=0):
    """What the controller's UpdateMetadata does to this broker's cache."""
    await asyncio.sleep(0.01)
    broker.cache.apply_update_metadata(um(name, [(i, leader, [leader])
                                                 for i in range(partitions)]))


# -- CreateTopics ------------------------------------------------------------------------
async def test_create_topics_not_controller(tmp_path):
    b = Broker(tmp_path, active=False)
    r = await create_topics.handle(ctx(b, 19, 7), create_request("a", "b"))
    assert [(t.name, t.error_code, t.error_message, t.num_partitions) for t in r.topics] == [
        ("a", E.NOT_CONTROLLER, None, -1), ("b", E.NOT_CONTROLLER, None, -1)]
    assert not b.store.exists(paths.topic_path("a"))
    b.store.close()


async def test_create_topics_waits_for_leaders(broker):
    task = asyncio.ensure_future(create_topics.handle(ctx(broker, 19, 7), create_request("a")))
    await bring_online(broker, "a", 2)
    r = await asyncio.wait_for(task, 30)
    [t] = r.topics
    assert (t.error_code, t.num_partitions, t.replication_factor) == (0, 2, 1)
    assert t.topic_id is not None and broker.store.exists(paths.topic_path("a"))


async def test_create_topics_timeouts(broker):
    r = await create_topics.handle(ctx(broker, 19, 7), create_request("a", timeout_ms=0))
    [t] = r.topics
    assert (t.error_code, t.num_partitions, t.replication_factor) == (E.REQUEST_TIMED_OUT, -1, -1)
    assert t.topic_id is not None and broker.store.exists(paths.topic_path("a"))
    r = await create_topics.handle(ctx(broker, 19, 7), create_request("b", timeout_ms=30))
    assert r.topics[0].error_code == E.REQUEST_TIMED_OUT
    r = await create_topics.handle(ctx(broker, 19, 7),
                                   create_request("c", timeout_ms=0, validate_only=True))
    assert (r.topics[0].error_code, r.topics[0].topic_id) == (0, None)
    assert not broker.store.exists(paths.topic_path("c"))


async def test_create_topics_errors_answer_at_once(broker):
    r = await create_topics.handle(ctx(broker, 19, 7), create_request("a", "a", "b.c", timeout_ms=20))
    assert [t.error_code for t in r.topics] == [E.INVALID_REQUEST, E.INVALID_REQUEST,
                                                E.REQUEST_TIMED_OUT]
    r = await create_topics.handle(ctx(broker, 19, 7), create_request("b_c", timeout_ms=0))
    assert r.topics[0].error_code == E.INVALID_TOPIC_EXCEPTION


# -- DeleteTopics ------------------------------------------------------------------------
async def test_delete_topics_not_controller(tmp_path):
    b = Broker(tmp_path, active=False)
    r = await delete_topics.handle(ctx(b, 20, 6), DT(version=6, timeout_ms=5000, topics=[
        DT.DeleteTopicState(name="a", topic_id=None)]))
    assert [(t.name, t.error_code) for t in r.responses] == [("a", E.NOT_CONTROLLER)]
    b.store.close()


async def test_delete_topics_waits_for_the_cache(broker):
    broker.admin.create_topic("a", 1, 1)
    broker.cache.apply_update_metadata(um("a", [(0, 0, [0])]))
    task = asyncio.ensure_future(delete_topics.handle(
        ctx(broker, 20, 5), DT(version=5, timeout_ms=5000, topic_names=["a", "nope"])))
    await asyncio.sleep(0.01)
    assert broker.store.exists(paths.delete_topic_path("a"))
    assert not task.done()
    broker.cache.apply_update_metadata(um("a", [(0, -2, [0])]))
    r = await asyncio.wait_for(task, 30)
    assert [(t.name, t.error_code) for t in r.responses] == [
        ("a", 0), ("nope", E.UNKNOWN_TOPIC_OR_PARTITION)]


@pytest.mark.parametrize("timeout_ms", [0, 30])
async def test_delete_topics_timeout(broker, timeout_ms):
    broker.admin.create_topic("a", 1, 1)
    broker.cache.apply_update_metadata(um("a", [(0, 0, [0])]))
    r = await delete_topics.handle(ctx(broker, 20, 5),
                                   DT(version=5, timeout_ms=timeout_ms, topic_names=["a"]))
    assert r.responses[0].error_code == E.REQUEST_TIMED_OUT


# -- CreatePartitions --------------------------------------------------------------------
def partitions_request(*topics, timeout_ms=5000, validate_only=False):
    return CP(version=3, timeout_ms=timeout_ms, validate_only=validate_only, topics=[
        CP.CreatePartitionsTopic(name=n, count=c, assignments=None) for n, c in topics])


async def test_create_partitions_not_controller(tmp_path):
    b = Broker(tmp_path, active=False)
    r = await create_partitions.handle(ctx(b, 37, 3), partitions_request(("a", 2), ("a", 3)))
    assert [(t.name, t.error_code, t.error_message) for t in r.results] == [
        ("a", E.NOT_CONTROLLER, None)]
    b.store.close()


async def test_create_partitions_waits_for_every_partition(broker):
    broker.admin.create_topic("a", 1, 1)
    broker.cache.apply_update_metadata(um("a", [(0, 0, [0])]))
    task = asyncio.ensure_future(create_partitions.handle(ctx(broker, 37, 3),
                                                          partitions_request(("a", 3))))
    await asyncio.sleep(0.01)
    assert len(paths.decode_topic_assignment(broker.store.get(paths.topic_path("a"))[0])
               .partitions) == 3
    assert not task.done()
    await bring_online(broker, "a", 3)
    r = await asyncio.wait_for(task, 30)
    assert [(t.name, t.error_code) for t in r.results] == [("a", 0)]


async def test_create_partitions_timeouts_dupes_and_deletion(broker):
    for name in ("a", "b", "d"):
        broker.admin.create_topic(name, 1, 1)
    broker.admin.delete_topic("d")
    r = await create_partitions.handle(ctx(broker, 37, 3), partitions_request(
        ("d", 2), ("a", 2), ("b", 2), ("b", 3), timeout_ms=0))
    assert [(t.name, t.error_code, t.error_message) for t in r.results] == [
        ("a", E.REQUEST_TIMED_OUT, None),
        ("b", E.INVALID_REQUEST, "Duplicate topic in request."),
        ("d", E.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")]
    r = await create_partitions.handle(ctx(broker, 37, 3), partitions_request(
        ("a", 4), timeout_ms=0, validate_only=True))
    assert r.results[0].error_code == 0


# -- ElectLeaders ------------------------------------------------------------------------
def elect_request(partitions, election=0, timeout_ms=5000):
    tps = None if partitions is None else [
        EL.TopicPartitions(topic=t, partitions=ps) for t, ps in partitions]
    return EL(version=2, election_type=election, topic_partitions=tps, timeout_ms=timeout_ms)


async def test_elect_leaders_not_controller_is_per_partition(tmp_path):
    b = Broker(tmp_path, active=False)
    r = await elect_leaders.handle(ctx(b, 43, 2), elect_request([("t", [0, 1])]))
    assert r.error_code == 0
    [t] = r.replica_election_results
    assert [(p.partition_id, p.error_code) for p in t.partition_result] == [
        (0, E.NOT_CONTROLLER), (1, E.NOT_CONTROLLER)]
    b.store.close()


async def test_elect_leaders_results_and_wait(broker):
    broker.cache.apply_update_metadata(um("t", [(0, 1, [0, 1]), (1, 0, [0, 1])]))
    broker.controller.outcome = {
        ("t", 0): (E.NO_ERROR, None),
        ("t", 1): (E.ELECTION_NOT_NEEDED, elect_leaders.NOT_NEEDED_MESSAGE)}
    task = asyncio.ensure_future(elect_leaders.handle(ctx(broker, 43, 2), elect_request(
        [("t", [0, 1]), ("x", [0])])))
    await asyncio.sleep(0.01)
    assert not task.done()                 # the cache does not show leader 0 for t-0 yet
    broker.cache.apply_update_metadata(um("t", [(0, 0, [0, 1])]))
    r = await asyncio.wait_for(task, 30)
    got = {(t.topic, p.partition_id): (p.error_code, p.error_message)
           for t in r.replica_election_results for p in t.partition_result}
    assert got == {("t", 0): (0, None),
                   ("t", 1): (E.ELECTION_NOT_NEEDED, elect_leaders.NOT_NEEDED_MESSAGE),
                   ("x", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")}
    assert broker.controller.elections[-1] == (0, [("t", 0), ("t", 1), ("x", 0)])


async def test_elect_leaders_all_partitions_hides_not_needed_and_times_out(broker):
    broker.cache.apply_update_metadata(um("t", [(0, 1, [0, 1]), (1, 0, [0, 1])]))
    broker.controller.outcome = {
        ("t", 0): (E.NO_ERROR, None),
        ("t", 1): (E.ELECTION_NOT_NEEDED, elect_leaders.NOT_NEEDED_MESSAGE)}
    r = await elect_leaders.handle(ctx(broker, 43, 2), elect_request(None, timeout_ms=30))
    assert [(t.topic, [(p.partition_id, p.error_code) for p in t.partition_result])
            for t in r.replica_election_results] == [("t", [(0, E.REQUEST_TIMED_OUT)])]


async def test_elect_leaders_unknown_type(broker):
    r = await elect_leaders.handle(ctx(broker, 43, 2), elect_request([("t", [0])], election=5))
    assert r.error_code == E.INVALID_REQUEST and broker.controller.elections == []


# -- IncrementalAlterConfigs: starts from the stored overrides ----------------------------------
def test_incremental_alter_configs_starts_from_the_store(broker):
    broker.admin.create_topic("t", 1, 1, configs={"retention.ms": "5"})
    broker.cache.apply_update_metadata(um("t", [(0, 0, [0])]))
    # Another broker changed the config; this cache has not heard of it yet.
    broker.store.set(paths.topic_config_path("t"), paths.encode_entity_config(
        {"retention.ms": "5", "segment.ms": "100000"}))
    Res = IAC.AlterConfigsResource
    r = incremental_alter_configs.handle(
        ctx(broker, 44, 1), IAC(version=1, validate_only=False, resources=[Res(
            resource_type=2, resource_name="t", configs=[Res.AlterableConfig(
                name="retention.ms", config_operation=1, value=None)])]))
    assert r.responses[0].error_code == 0
    assert broker.admin.stored_topic_configs("t") == {"segment.ms": "100000"}


def test_alter_configs_refuse_a_default_topic_resource(broker):
    from kafkapy.handlers import alter_configs
    AC = REQUESTS[33]
    r = alter_configs.handle(ctx(broker, 33, 2), AC(version=2, validate_only=False, resources=[
        AC.AlterConfigsResource(resource_type=2, resource_name="", configs=[])]))
    assert (r.responses[0].error_code, r.responses[0].error_message) == (
        E.INVALID_REQUEST, "Default topic resources are not allowed.")
    Res = IAC.AlterConfigsResource
    r = incremental_alter_configs.handle(ctx(broker, 44, 1), IAC(
        version=1, validate_only=False, resources=[Res(resource_type=2, resource_name="",
                                                       configs=[])]))
    assert (r.responses[0].error_code, r.responses[0].error_message) == (
        E.INVALID_REQUEST, "Default topic resources are not allowed.")


@pytest.mark.parametrize("name, op, key, code, message", [
    # the operations are checked before the topic is looked for (Kafka 3.9)
    ("nope", 2, "retention.ms", E.INVALID_CONFIG,
     "Config value append is not allowed for config key: retention.ms"),
    ("nope", 0, "retention.ms", E.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."),
    ("t", 2, "no.such.key", E.UNKNOWN, None),
])
def test_incremental_alter_configs_order(broker, name, op, key, code, message):
    broker.admin.create_topic("t", 1, 1)
    broker.cache.apply_update_metadata(um("t", [(0, 0, [0])]))
    Res = IAC.AlterConfigsResource
    r = incremental_alter_configs.handle(ctx(broker, 44, 1), IAC(
        version=1, validate_only=True, resources=[Res(
            resource_type=2, resource_name=name, configs=[Res.AlterableConfig(
                name=key, config_operation=op, value="1")])]))
    assert (r.responses[0].error_code, r.responses[0].error_message) == (code, message)
