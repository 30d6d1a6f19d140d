"""OffsetCommit (8), OffsetFetch (9), OffsetForLeaderEpoch (23), DeleteRecords (21)."""
from __future__ import annotations

from tests.conformance.cases import for_api
from tests.conformance.cases.common import case
from tests.conformance.cases.groups import joined
from tests.conformance.state import GROUP, LOG_START, MISSING, MULTI, PLAIN, PRODUCE, TXN


def _commit(group, topic=MULTI, partitions=(0,), generation=-1, member="", metadata="m",
            offset=1):
    return {"group_id": group, "generation_id_or_member_epoch": generation,
            "member_id": member, "group_instance_id": None, "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": p, "committed_offset": offset, "committed_leader_epoch": -1,
                 "committed_metadata": metadata} for p in partitions]}]}


@for_api(8)
def offset_commit(v: int):
    g = f"conf-oc-v{v}"
    yield case("standalone", _commit(f"{g}-alone", partitions=(0, 1, 2)))
    yield case("unknown-topic", _commit(f"{g}-ut", topic=MISSING))
    yield case("unknown-partition", _commit(f"{g}-up", partitions=(0, 8)))
    yield case("metadata-too-large", _commit(f"{g}-big", metadata="x" * 5000))
    yield case("null-metadata", _commit(f"{g}-nullmeta", metadata=None))
    yield case("empty-group-id", _commit(""))
    yield case("no-topics", dict(_commit(f"{g}-nt"), topics=[]))
    yield case("negative-offset", _commit(f"{g}-neg", offset=-5))
    yield case("member-ok", lambda s: _commit(f"{g}-m", generation=s.vars["generation"],
                                              member=s.vars["member"]),
               setup=joined(f"{g}-m"))
    yield case("wrong-generation", lambda s: _commit(f"{g}-gen", generation=9,
                                                     member=s.vars["member"]),
               setup=joined(f"{g}-gen"))
    yield case("unknown-member", lambda s: _commit(f"{g}-um", generation=s.vars["generation"],
                                                   member="conf-nobody"),
               setup=joined(f"{g}-um"))
    yield case("member-on-unknown-group", _commit(f"{g}-none", generation=1,
                                                  member="conf-nobody"))


def _fetch(v, group, topics, require_stable=False):
    """topics: {name: [partitions]} or None (all)."""
    if v < 8:
        return {"group_id": group, "require_stable": require_stable, "topics": None
                if topics is None else [{"name": t, "partition_indexes": ps}
                                        for t, ps in topics.items()]}
    return {"require_stable": require_stable, "groups": [
        {"group_id": group, "member_id": None, "member_epoch": -1, "topics": None
         if topics is None else [{"name": t, "partition_indexes": ps}
                                 for t, ps in topics.items()]}]}


@for_api(9)
def offset_fetch(v: int):
    yield case("committed", _fetch(v, GROUP, {PLAIN: [0], MULTI: [0, 1, 2]}))
    yield case("unknown-group", _fetch(v, "conf-no-group", {PLAIN: [0]}))
    yield case("unknown-topic", _fetch(v, GROUP, {MISSING: [0]}))
    yield case("unknown-partition", _fetch(v, GROUP, {PLAIN: [5]}))
    yield case("uncommitted-partition", _fetch(v, GROUP, {TXN: [0]}))
    yield case("no-topics", _fetch(v, GROUP, {}))
    if v >= 2:
        yield case("all-topics", _fetch(v, GROUP, None))
        yield case("all-topics-unknown-group", _fetch(v, "conf-no-group", None))
    if v >= 7:
        yield case("require-stable", _fetch(v, GROUP, {PLAIN: [0]}, require_stable=True))
    if v >= 8:
        yield case("two-groups", {"require_stable": False, "groups": [
            {"group_id": GROUP, "topics": None},
            {"group_id": "conf-no-group", "topics": [{"name": PLAIN,
                                                      "partition_indexes": [0]}]}]})
        if v == 8:     # Kafka 3.9 never answers it (see known.py): one version, short wait
            yield case("no-groups", {"require_stable": False, "groups": []}, timeout=2.0)


def _ofle(topic, partition, epoch, current=-1, replica=-1):
    return {"replica_id": replica, "topics": [{"topic": topic, "partitions": [
        {"partition": partition, "leader_epoch": epoch, "current_leader_epoch": current}]}]}


@for_api(23)
def offset_for_leader_epoch(v: int):
    yield case("epoch-0", _ofle(PLAIN, 0, 0))
    yield case("future-epoch", _ofle(PLAIN, 0, 5))
    yield case("negative-epoch", _ofle(PLAIN, 0, -1))
    yield case("current-epoch-0", _ofle(PLAIN, 0, 0, current=0))
    yield case("unknown-current-epoch", _ofle(PLAIN, 0, 0, current=9))
    yield case("unknown-topic", _ofle(MISSING, 0, 0))
    yield case("unknown-partition", _ofle(PLAIN, 6, 0))
    yield case("empty-partition", _ofle(MULTI, 2, 0))
    yield case("no-topics", {"replica_id": -1, "topics": []})
    if v >= 3:
        yield case("as-consumer", _ofle(PLAIN, 0, 0, replica=-2))


def _dr(topic, parts):
    return {"timeout_ms": 10000, "topics": [{"name": topic, "partitions": [
        {"partition_index": p, "offset": o} for p, o in parts]}]}


@for_api(21)
def delete_records(v: int):
    # conf-produce partition v holds what Produce cases of version v wrote (offsets 0..)
    yield case("ordinary", _dr(PRODUCE, [(v, 1)]))
    yield case("to-high-watermark", _dr(PRODUCE, [(v, -1)]))
    yield case("before-log-start", _dr(PLAIN, [(0, LOG_START - 2)]))
    yield case("past-end", _dr(PLAIN, [(0, 1000)]))
    yield case("unknown-topic", _dr(MISSING, [(0, 1)]))
    yield case("unknown-partition", _dr(PLAIN, [(5, 1)]))
    yield case("no-topics", {"timeout_ms": 1000, "topics": []})
    yield case("invalid-offset", _dr(PLAIN, [(0, -7)]))
