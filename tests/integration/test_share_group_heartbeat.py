"""Share group membership over a real broker's socket, raw requests: ShareGroupHeartbeat
joins two members (ids made by the client, as Kafka 4.x's), whose next heartbeats bring
the partitions once the share coordinator has initialized their state; ShareGroupDescribe
and ListGroups show the group; the members leave; DeleteGroups removes the empty group
(its share state deleted), after which it is not found."""
from __future__ import annotations

import uuid

import pytest

from kafkapy.protocol.errors import ErrorCode as E
from kafkapy.testing import broker
from tests.support.request_fields import fields
from tests.support.wire import WireClient, until

GROUP = "wire-share-group"
TOPIC = "jobs"
RETRIABLE = (E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE)


@pytest.fixture(scope="module")
def client():
    with broker(settings={"offsets.topic.num.partitions": "1",
                          "share.coordinator.state.topic.num.partitions": "1"}) as b:
        wire = WireClient(b.bootstrap, timeout=30)
        created = wire.request(19, 7, **fields(19, topics=[dict(
            name=TOPIC, num_partitions=4, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=10000, validate_only=False))
        assert created.topics[0].error_code == 0
        found = until(lambda: wire.request(10, 4, key_type=0, coordinator_keys=[GROUP]),
                      lambda r: r.coordinators[0].error_code == 0)
        assert found.coordinators[0].error_code == 0
        yield wire
        wire.close()


def heartbeat(client: WireClient, member_id: str, epoch: int, topics=None):
    return until(lambda: client.request(76, 1, group_id=GROUP, member_id=member_id,
                                        member_epoch=epoch, rack_id=None,
                                        subscribed_topic_names=topics),
                 lambda r: r.error_code not in RETRIABLE)


def assigned(response) -> set[int]:
    return {p for t in response.assignment.topic_partitions for p in t.partitions}


def test_members_join_get_partitions_leave_and_the_group_is_deleted(client):
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    joined = heartbeat(client, a, 0, [TOPIC])
    assert (joined.error_code, joined.member_id, joined.member_epoch) == (0, a, 1)
    assert joined.heartbeat_interval_ms == 5000
    epoch = {a: joined.member_epoch}
    epoch[b] = heartbeat(client, b, 0, [TOPIC]).member_epoch

    def everyone_assigned():
        got = {}
        for member in (a, b):
            r = heartbeat(client, member, epoch[member], [TOPIC])   # a full request: always answered
            assert r.error_code == 0, r
            epoch[member] = r.member_epoch
            got[member] = assigned(r)
        return got
    got = until(everyone_assigned, lambda g: len(g[a]) == 2 and len(g[b]) == 2)
    assert got[a] | got[b] == {0, 1, 2, 3} and not got[a] & got[b]

    [described] = client.request(77, 1, group_ids=[GROUP], include_authorized_operations=True).groups
    assert (described.error_code, described.group_state, described.assignor_name) == (
        0, "Stable", "simple")
    assert sorted(m.member_id for m in described.members) == sorted([a, b])
    assert all(m.assignment.topic_partitions[0].topic_name == TOPIC for m in described.members)
    listed = client.request(16, 5, states_filter=[], types_filter=["share"])
    assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == [
        (GROUP, "share", "Stable")]

    not_empty = client.request(42, 2, groups_names=[GROUP])
    assert not_empty.results[0].error_code == E.NON_EMPTY_GROUP
    for member in (a, b):
        left = heartbeat(client, member, -1)
        assert (left.error_code, left.member_epoch) == (0, -1)
    deleted = client.request(42, 2, groups_names=[GROUP])
    assert deleted.results[0].error_code == 0
    [gone] = client.request(77, 1, group_ids=[GROUP], include_authorized_operations=False).groups
    assert gone.error_code == E.GROUP_ID_NOT_FOUND
