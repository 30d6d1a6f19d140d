"""Share groups with confluent-kafka 2.16's ``ShareConsumer`` (librdkafka), its consumers
polling in threads of the test process (tests/support/share_clients.py).

- five consumers on one partition all get records, and 10,000 records are each delivered
  once (delivery count 1) and ACCEPTed, across the group (explicit acknowledgement,
  ``commit_sync`` after each poll);
- the same with implicit acknowledgement (the next poll accepts);
- RELEASE hands a record out again with its delivery count one higher;
- REJECT archives a record at once, a record RELEASEd at every delivery is archived at the
  delivery count limit (Kafka's default, 5): neither comes back.

The broker is the share-group client tests' one broker (``share_broker``); each test has its
own topic and group, whose ``share.auto.offset.reset`` is set to earliest (IncrementalAlterConfigs
on the GROUP resource) before its consumers start.
"""
from __future__ import annotations

import time

import pytest

from tests.support.share_clients import (ConfluentShareConsumers, Deliveries,
                                         alter_group_configs, broker_tail, create_topic, produce,
                                         share_group_assignments, wait_for)

pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.timeout(180)

DELIVERY_LIMIT = 5          # Kafka's group.share.delivery.count.limit default
WAIT = 60.0


@pytest.fixture
def share_group(share_broker):
    """``share_group(name, n, explicit=True)``: topic and group ``name`` (created, earliest),
    ``n`` confluent-kafka share consumers on it; they are stopped at the end."""
    started: list[ConfluentShareConsumers] = []

    def start(name: str, n: int, explicit: bool = True) -> ConfluentShareConsumers:
        create_topic(share_broker.bootstrap, name)
        error, message = alter_group_configs(share_broker.bootstrap, name,
                                             {"share.auto.offset.reset": "earliest"})
        assert error == 0, (error, message)
        c = ConfluentShareConsumers(share_broker.bootstrap, name, name, n, explicit=explicit)
        started.append(c)
        return c

    yield start
    for c in started:
        c.stop()


@pytest.mark.parametrize("explicit", [True, False], ids=["explicit", "implicit"])
def test_five_consumers_share_one_partition(share_broker, share_group, explicit):
    name = f"share-confluent-five-{'explicit' if explicit else 'implicit'}"
    c = share_group(name, 5, explicit=explicit)
    why = (c.describe, broker_tail(share_broker))

    def all_assigned():
        members = share_group_assignments(share_broker.bootstrap, name) or {}
        return len(members) == 5 and all(n == 1 for n in members.values())

    wait_for(all_assigned, "5 members, each assigned the partition", WAIT, *why)
    produce(share_broker.bootstrap, name, (f"v{i}" for i in range(10_000)),
            batch_records=100)          # 100 batches: every consumer's fetches find some
    wait_for(lambda: len(Deliveries(c.deliveries()).offsets()) >= 10_000,
             "10,000 offsets delivered", WAIT, *why)
    time.sleep(1.0)                       # room for a wrong second delivery to show
    c.stop()

    got = Deliveries(c.deliveries())
    assert c.errors == []
    assert got.offsets() == set(range(10_000))
    assert got.repeated() == {}
    assert {d.count for d in got.all} == {1}
    assert len(got.per_member()) == 5, got.per_member()


def test_release_redelivers_with_the_next_delivery_count(share_broker, share_group):
    name = "share-confluent-release"
    c = share_group(name, 2)
    produce(share_broker.bootstrap, name, ["release2-a", "v1", "release1-b", "v3"])
    why = (c.describe, broker_tail(share_broker))
    wait_for(lambda: Deliveries(c.deliveries()).history(0)[-1:] == [(3, "ACCEPT")],
             "offset 0 accepted at its third delivery", WAIT, *why)
    wait_for(lambda: len(c.deliveries()) >= 7, "7 deliveries", WAIT, *why)
    time.sleep(1.5)
    c.stop()

    got = Deliveries(c.deliveries())
    assert c.errors == []
    assert got.history(0) == [(1, "RELEASE"), (2, "RELEASE"), (3, "ACCEPT")]
    assert got.history(1) == [(1, "ACCEPT")]
    assert got.history(2) == [(1, "RELEASE"), (2, "ACCEPT")]
    assert got.history(3) == [(1, "ACCEPT")]


def test_reject_and_the_delivery_limit_archive(share_broker, share_group):
    name = "share-confluent-archive"
    c = share_group(name, 2)
    produce(share_broker.bootstrap, name, ["reject-a", "poison-b", "v2"])
    why = (c.describe, broker_tail(share_broker))
    wait_for(lambda: len(Deliveries(c.deliveries()).history(1)) >= DELIVERY_LIMIT,
             f"the poison record delivered {DELIVERY_LIMIT} times", WAIT, *why)
    time.sleep(2.0)                       # an archived record would be back by now
    produce(share_broker.bootstrap, name, ["v3"])
    wait_for(lambda: Deliveries(c.deliveries()).history(3), "a record after them", WAIT, *why)
    time.sleep(1.0)
    c.stop()

    got = Deliveries(c.deliveries())
    assert c.errors == []
    assert got.history(0) == [(1, "REJECT")]
    assert got.history(1) == [(n, "RELEASE") for n in range(1, DELIVERY_LIMIT + 1)]
    assert got.history(2) == [(1, "ACCEPT")]
    assert got.history(3) == [(1, "ACCEPT")]
