"""The classic group APIs' parts that serve the consumer group protocol (KIP-848):
OffsetFetch v9 hands the coordinator the member id and epoch, ListGroups v5 filters by type
and answers it, DescribeGroups v6 answers GROUP_ID_NOT_FOUND, and ApiVersions reports the
``group.version`` feature (read back by Kafka 4.3's own classes)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkapy.coordinator.group.admin_ops import GroupOverview, GroupSummary
from kafkapy.handlers import api_versions, describe_groups, list_groups, offset_fetch
from kafkapy.protocol.errors import ErrorCode
from kafkapy.protocol.messages import REQUESTS
from tests.support.services import context, services
from tests.support.wire_oracle import decoded


class FakeCoordinator:
    """Keeps what each call was asked; answers with what the test set."""

    def __init__(self, summaries=(), overviews=()) -> None:
        self.summaries = {s.group_id: s for s in summaries}
        self.overviews = list(overviews)
        self.fetches: list[tuple] = []
        self.listed: list[tuple] = []

    def fetch_offsets(self, group_id, partitions, require_stable=False, *, member_id=None,
                      member_epoch=-1):
        self.fetches.append((group_id, member_id, member_epoch))
        return (ErrorCode.STALE_MEMBER_EPOCH if member_epoch == 3 else 0), []

    def list_groups(self, states=None, types=None):
        self.listed.append((states, types))
        return 0, self.overviews

    def describe_group(self, group_id):
        return self.summaries.get(group_id) or GroupSummary(0, group_id)


def _parts(fake, **more):
    return services(groups=SimpleNamespace(coordinator=fake), **more)


# -- OffsetFetch ----------------------------------------------------------------------------------
def _offset_fetch(version: int, **group):
    cls = REQUESTS[9]
    request = cls(version=version, require_stable=False, groups=[cls.OffsetFetchRequestGroup(
        group_id="g", topics=None, **group)])
    return cls.decode(bytes(request.encode(version=version)), version=version)


def test_offset_fetch_v9_hands_over_the_member():
    fake = FakeCoordinator()
    response = offset_fetch.handle(context(_parts(fake), 9, 9),
                                   _offset_fetch(9, member_id="m1", member_epoch=3))
    assert fake.fetches == [("g", "m1", 3)]
    assert response.groups[0].error_code == ErrorCode.STALE_MEMBER_EPOCH


def test_offset_fetch_below_v9_names_no_member():
    fake = FakeCoordinator()
    offset_fetch.handle(context(_parts(fake), 9, 8), _offset_fetch(8))
    request = REQUESTS[9](version=7, group_id="g", topics=None, require_stable=False)
    offset_fetch.handle(context(_parts(fake), 9, 7), request)
    assert fake.fetches == [("g", None, -1), ("g", None, -1)]


# -- ListGroups -----------------------------------------------------------------------------------
def test_list_groups_v5_filters_by_type_and_answers_it():
    fake = FakeCoordinator(overviews=[GroupOverview("a", "consumer", "Stable", "classic"),
                                      GroupOverview("b", "consumer", "Assigning", "consumer")])
    request = REQUESTS[16](version=5, states_filter=[], types_filter=["Consumer"])
    response = list_groups.handle(context(_parts(fake), 16, 5), request)
    assert fake.listed == [([], ["Consumer"])]
    assert [(g.group_id, g.group_state, g.group_type) for g in response.groups] == [
        ("a", "Stable", "classic"), ("b", "Assigning", "consumer")]
    list_groups.handle(context(_parts(fake), 16, 4), REQUESTS[16](version=4, states_filter=["x"]))
    assert fake.listed[-1] == (["x"], None)


# -- DescribeGroups -------------------------------------------------------------------------------
def _describe(version: int, fake, *group_ids, include_ops=True):
    request = REQUESTS[15](version=version, groups=list(group_ids),
                           include_authorized_operations=include_ops)
    return describe_groups.handle(context(_parts(fake), 15, version), request).groups


def test_describe_groups_v6_answers_an_unknown_group_not_found():
    fake = FakeCoordinator([GroupSummary(0, "live", "Stable", "consumer", "range")])
    [unknown, live] = _describe(6, fake, "unknown", "live")
    assert (unknown.error_code, unknown.error_message, unknown.group_state,
            unknown.authorized_operations) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group unknown not found.", "Dead", None)
    assert (live.error_code, live.error_message, live.group_state) == (0, None, "Stable")
    assert live.authorized_operations == {3, 6, 8}


def test_describe_groups_below_v6_describes_an_unknown_group_dead():
    [unknown] = _describe(5, FakeCoordinator(), "unknown")
    assert (unknown.error_code, unknown.group_state, unknown.authorized_operations) == (
        0, "Dead", {3, 6, 8})


def test_describe_groups_v6_keeps_other_errors():
    fake = FakeCoordinator([GroupSummary(ErrorCode.NOT_COORDINATOR, "g", state="")])
    [g] = _describe(6, fake, "g")
    assert (g.error_code, g.error_message, g.authorized_operations) == (
        ErrorCode.NOT_COORDINATOR, None, None)


# -- ApiVersions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("epoch,stored", [(-1, {}), (3, {}), (5, {"other.version": 2, "zero": 0})])
def test_api_versions_reports_group_version(epoch, stored):
    parts = services(features=SimpleNamespace(epoch=epoch, features=stored))
    bodies = []
    for version in (3, 4):
        request = SimpleNamespace(client_software_name="t", client_software_version="1")
        answer = api_versions.handle(context(parts, 18, version), request)
        answer.with_header(correlation_id=1)
        frame = answer.encode()
        bodies.append(("ApiVersionsResponse", version, frame[8:]))   # size, correlation id
    v3, v4 = decoded(bodies)
    finalized = [{"name": n, "maxVersionLevel": lvl, "minVersionLevel": lvl}
                 for n, lvl in sorted({**stored, "group.version": 1,
                                       "share.version": 1}.items())
                 if lvl > 0]
    for answer in (v3, v4):
        # tagged fields at their defaults (epoch -1, no features) are not written
        assert answer.get("finalizedFeaturesEpoch", -1) == epoch
        assert answer["finalizedFeatures"] == finalized
        assert {"apiKey": 68, "minVersion": 0, "maxVersion": 1} in answer["apiKeys"]
        assert {"apiKey": 69, "minVersion": 0, "maxVersion": 1} in answer["apiKeys"]
    # the minimum level 0 is left out below v4, as Kafka does (KAFKA-17011)
    assert "supportedFeatures" not in v3         # an empty tagged field is not written
    assert v4["supportedFeatures"] == [{"name": "group.version", "minVersion": 0,
                                        "maxVersion": 1},
                                       {"name": "share.version", "minVersion": 0,
                                        "maxVersion": 1},
                                       {"name": "transaction.version", "minVersion": 0,
                                        "maxVersion": 2}]
