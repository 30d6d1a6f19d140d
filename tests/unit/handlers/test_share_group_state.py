"""The share coordinator's handlers (InitializeShareGroupState 83, ReadShareGroupState 84,
WriteShareGroupState 85, DeleteShareGroupState 86, ReadShareGroupStateSummary 87):
CLUSTER_ACTION, empty requests, one coordinator call per partition answered in the
request's order, and every version encoded.  The coordinator is the real one over
``tests.support.share.MemoryStore``."""
from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from kafkapy.clock import MockClock
from kafkapy.coordinator.share.coordinator import ShareCoordinator, ShareSettings
from kafkapy.handlers import (
    delete_share_group_state,
    initialize_share_group_state,
    read_share_group_state,
    read_share_group_state_summary,
    write_share_group_state,
)
from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.protocol.share_group_apis import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    WriteShareGroupStateRequest,
)
from kafkapy.security import acls as A
from tests.support.services import context, services
from tests.support.share import MemoryStore

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
KNOWN = {(T1, 0), (T1, 1), (T2, 0)}


class Authorizer:
    def __init__(self, *allowed) -> None:
        self.allowed = set(allowed)

    def authorize(self, session, operation, resource_type, name) -> bool:
        return (operation, resource_type, name) in self.allowed


def coordinator():
    c = ShareCoordinator(ShareSettings(num_partitions=1), MockClock(0), MemoryStore(),
                         lambda t, p: (t, p) in KNOWN)
    c.begin_loading(0)
    c.finish_loading(0, c.new_shard())
    return c


def ctx(module, version, share, authorizer=None):
    parts = services(share_coordinator=SimpleNamespace(coordinator=share),
                     authorizer=authorizer)
    return context(parts, module.API_KEY, version)


def init_request(group="g", topics=((T1, (0, 1)), (T2, (0,)))):
    R = InitializeShareGroupStateRequest[0]
    return R(group_id=group, topics=[R.InitializeStateData(topic_id=t, partitions=[
        R.InitializeStateData.PartitionData(partition=p, state_epoch=1, start_offset=5)
        for p in ps]) for t, ps in topics])


def read_request(partitions=(0, 1, 7), leader_epoch=1):
    R = ReadShareGroupStateRequest[0]
    return R(group_id="g", topics=[R.ReadStateData(topic_id=T1, partitions=[
        R.ReadStateData.PartitionData(partition=p, leader_epoch=leader_epoch)
        for p in partitions])])


def write_request(version, dcc=4):
    R = WriteShareGroupStateRequest[version]
    data = R.WriteStateData.PartitionData
    extra = {"delivery_complete_count": dcc} if version >= 1 else {}
    return R(group_id="g", topics=[R.WriteStateData(topic_id=T1, partitions=[data(
        partition=0, state_epoch=1, leader_epoch=1, start_offset=5, state_batches=[
            data.StateBatch(first_offset=5, last_offset=8, delivery_state=2,
                            delivery_count=1)], **extra)])])


def summary_request(version):
    R = ReadShareGroupStateSummaryRequest[version]
    return R(group_id="g", topics=[R.ReadStateSummaryData(topic_id=T1, partitions=[
        R.ReadStateSummaryData.PartitionData(partition=p, leader_epoch=0) for p in (0, 1)])])


def delete_request():
    R = DeleteShareGroupStateRequest[0]
    return R(group_id="g", topics=[R.DeleteStateData(topic_id=T1, partitions=[
        R.DeleteStateData.PartitionData(partition=0)])])


def codes(response):
    return [(t.topic_id, p.partition, p.error_code) for t in response.results
            for p in t.partitions]


async def test_each_partition_is_answered_in_the_requests_order():
    share = coordinator()
    response = await initialize_share_group_state.handle(
        ctx(initialize_share_group_state, 0, share), init_request())
    assert codes(response) == [(T1, 0, 0), (T1, 1, 0), (T2, 0, 0)]
    response = await read_share_group_state.handle(ctx(read_share_group_state, 0, share),
                                                   read_request())
    # partition 7 was never initialized (checked before the topic, as Kafka does)
    assert codes(response) == [(T1, 0, 0), (T1, 1, 0), (T1, 7, E.INVALID_REQUEST)]
    first = response.results[0].partitions[0]
    assert (first.state_epoch, first.start_offset, first.state_batches) == (1, 5, [])
    response.encode()


@pytest.mark.parametrize("version", [0, 1])
async def test_write_then_summary_at_every_version(version):
    share = coordinator()
    await initialize_share_group_state.handle(ctx(initialize_share_group_state, 0, share),
                                              init_request())
    response = await write_share_group_state.handle(ctx(write_share_group_state, version, share),
                                                    write_request(version))
    assert codes(response) == [(T1, 0, 0)]
    response.encode()
    response = await read_share_group_state_summary.handle(
        ctx(read_share_group_state_summary, version, share), summary_request(version))
    s0, s1 = response.results[0].partitions
    assert (s0.error_code, s0.start_offset, s0.state_epoch, s0.leader_epoch) == (0, 5, 1, 1)
    # v0 writes carry no delivery complete count: unknown
    assert s0.delivery_complete_count == (4 if version else -1)
    assert (s1.error_code, s1.start_offset, s1.leader_epoch) == (0, 5, -1)
    response.encode()
    read = await read_share_group_state.handle(ctx(read_share_group_state, 0, share),
                                               read_request(partitions=(0,), leader_epoch=1))
    [batch] = read.results[0].partitions[0].state_batches
    assert (batch.first_offset, batch.last_offset, batch.delivery_state,
            batch.delivery_count) == (5, 8, 2, 1)


async def test_delete_then_read_is_an_invalid_request():
    share = coordinator()
    await initialize_share_group_state.handle(ctx(initialize_share_group_state, 0, share),
                                              init_request())
    response = await delete_share_group_state.handle(ctx(delete_share_group_state, 0, share),
                                                     delete_request())
    assert codes(response) == [(T1, 0, 0)]
    read = await read_share_group_state.handle(ctx(read_share_group_state, 0, share),
                                               read_request(partitions=(0,)))
    assert codes(read) == [(T1, 0, E.INVALID_REQUEST)]


CASES = [
    (initialize_share_group_state, 0, init_request),
    (read_share_group_state, 0, read_request),
    (write_share_group_state, 1, lambda: write_request(1)),
    (delete_share_group_state, 0, delete_request),
    (read_share_group_state_summary, 1, lambda: summary_request(1)),
]


@pytest.mark.parametrize("module,version,request_of", CASES,
                         ids=[c[0].__name__.rsplit(".", 1)[1] for c in CASES])
async def test_without_cluster_action_every_partition_is_refused(module, version, request_of):
    share = coordinator()
    request = request_of()
    refused = await module.handle(ctx(module, version, share, Authorizer()), request)
    assert {p.error_code for t in refused.results for p in t.partitions} == {
        E.CLUSTER_AUTHORIZATION_FAILED}
    assert {p.error_message for t in refused.results for p in t.partitions} == {
        "Cluster authorization failed."}
    assert len(codes(refused)) == sum(len(t.partitions) for t in request.topics)
    refused.encode()
    allowed = Authorizer((A.CLUSTER_ACTION, A.CLUSTER, A.CLUSTER_NAME))
    answered = await module.handle(ctx(module, version, share, allowed), request)
    assert E.CLUSTER_AUTHORIZATION_FAILED not in {c for *_, c in codes(answered)}


async def test_empty_requests_get_no_results():
    share = coordinator()
    c = ctx(initialize_share_group_state, 0, share)
    for request in (init_request(group=""), init_request(topics=()),
                    init_request(topics=((T1, ()),))):
        assert (await initialize_share_group_state.handle(c, request)).results == []


async def test_the_zero_topic_id_is_an_unknown_topic():
    share = coordinator()
    request = init_request(topics=((None, (0,)),))
    response = await initialize_share_group_state.handle(
        ctx(initialize_share_group_state, 0, share), request)
    assert [p.error_code for t in response.results for p in t.partitions] == [
        E.UNKNOWN_TOPIC_OR_PARTITION]
    response.encode()
