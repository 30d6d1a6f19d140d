"""Classic group APIs: FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13),
SyncGroup (14), DescribeGroups (15), ListGroups (16), DeleteGroups (42), OffsetDelete (47).

``joined(group)`` is a setup that makes the side's one member join and sync (a stable group
of one, generation 1), keeping ``member`` and ``generation`` in ``side.vars``.  Every case
uses a group named after itself, so no case sees another's members.
"""
from __future__ import annotations

import struct

from tests.conformance.cases import Side, for_api
from tests.conformance.cases.common import case
from tests.conformance.state import (
    COORDINATOR_WAIT, GROUP, MISSING, MULTI, OPEN_TXN_ID, PLAIN, TXN_ID)

MEMBER_ID_REQUIRED = 79


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: the topics, null user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


ASSIGNMENT = struct.pack(">hi", 0, 0) + struct.pack(">i", -1)   # no partitions, null data


def join_fields(group: str, member: str = "", protocol_type: str = "consumer",
                protocols=None) -> dict:
    # long enough that no member expires while the suite runs (states stay comparable)
    return {"group_id": group, "session_timeout_ms": 300000, "rebalance_timeout_ms": 300000,
            "member_id": member, "group_instance_id": None, "protocol_type": protocol_type,
            "protocols": protocols if protocols is not None else [
                {"name": "range", "metadata": subscription(PLAIN)}], "reason": None}


def join(side: Side, group: str) -> None:
    """Join as the only member and sync: a Stable group, this member its leader."""
    side.call(10, 0, {"key": group}, retry_codes=COORDINATOR_WAIT, code=lambda r: r.error_code)
    r = side.call(11, 5, join_fields(group))
    if r.error_code == MEMBER_ID_REQUIRED:
        r = side.call(11, 5, join_fields(group, r.member_id))
    if r.error_code:
        raise AssertionError(f"{side.name}: setup JoinGroup answered {r.error_code}")
    side.vars.update(member=r.member_id, generation=r.generation_id, group=group)
    s = side.call(14, 3, {"group_id": group, "generation_id": r.generation_id,
                          "member_id": r.member_id, "assignments": [
                              {"member_id": r.member_id, "assignment": ASSIGNMENT}]})
    if s.error_code:
        raise AssertionError(f"{side.name}: setup SyncGroup answered {s.error_code}")


def joined(group: str):
    return lambda side: join(side, group)


def committed(group: str, topic: str = MULTI, partitions=(0, 1)):
    """Setup: offsets committed for ``group`` with no members (an Empty group)."""
    def setup(side: Side) -> None:
        side.call(10, 0, {"key": group}, retry_codes=COORDINATOR_WAIT,
                  code=lambda r: r.error_code)
        side.call(8, 2, {"group_id": group, "generation_id_or_member_epoch": -1,
                         "member_id": "", "retention_time_ms": -1, "topics": [
                             {"name": topic, "partitions": [
                                 {"partition_index": p, "committed_offset": 1,
                                  "committed_metadata": ""} for p in partitions]}]})
    return setup


def both(*setups):
    def setup(side):
        for s in setups:
            s(side)
    return setup


def _left(side: Side) -> None:
    """Setup: the joined member leaves; the group is Empty again."""
    side.call(13, 3, {"group_id": side.vars["group"], "members": [
        {"member_id": side.vars["member"], "group_instance_id": None}]})


@for_api(10)
def find_coordinator(v: int):
    if v <= 3:
        yield case("group", {"key": GROUP, "key_type": 0})
        yield case("empty-key", {"key": "", "key_type": 0})
        if v >= 1:
            yield case("transaction", {"key": TXN_ID, "key_type": 1})
            yield case("invalid-key-type", {"key": GROUP, "key_type": 7})
    else:
        yield case("groups", {"key_type": 0, "coordinator_keys": [GROUP, "conf-other"]})
        yield case("transactions", {"key_type": 1, "coordinator_keys": [TXN_ID, OPEN_TXN_ID]})
        yield case("no-keys", {"key_type": 0, "coordinator_keys": []})
        yield case("empty-key", {"key_type": 0, "coordinator_keys": [""]})
        yield case("invalid-key-type", {"key_type": 7, "coordinator_keys": [GROUP]})


@for_api(11)
def join_group(v: int):
    g = f"conf-join-v{v}"
    yield case("new-member", join_fields(f"{g}-new"))
    yield case("unknown-member-id", join_fields(f"{g}-unknown", member="conf-nobody"))
    yield case("empty-group-id", join_fields(""))
    yield case("session-timeout-too-small", dict(join_fields(f"{g}-small"),
                                                 session_timeout_ms=1))
    yield case("no-protocols", join_fields(f"{g}-noproto", protocols=[]))
    yield case("empty-protocol-type", join_fields(f"{g}-notype", protocol_type=""))
    yield case("other-protocol-type", lambda s: join_fields(
        f"{g}-mismatch", member=s.vars["member"], protocol_type="connect"),
        setup=joined(f"{g}-mismatch"))
    yield case("rejoin-leader", lambda s: join_fields(f"{g}-rejoin", member=s.vars["member"]),
               setup=joined(f"{g}-rejoin"))
    if v >= 5:
        yield case("static-member", dict(join_fields(f"{g}-static"),
                                         group_instance_id="conf-instance-1"))
        yield case("empty-instance-id", dict(join_fields(f"{g}-einst"), group_instance_id=""))


def _sync(group_of, member=None, generation=None, **extra):
    def build(s):
        m = s.vars["member"] if member is None else member
        return dict({"group_id": group_of, "generation_id": generation if generation is not None
                     else s.vars["generation"], "member_id": m, "group_instance_id": None,
                     "protocol_type": "consumer", "protocol_name": "range", "assignments": [
                         {"member_id": s.vars["member"], "assignment": ASSIGNMENT}]}, **extra)
    return build


@for_api(14)
def sync_group(v: int):
    g = f"conf-sync-v{v}"
    yield case("leader-resync", _sync(f"{g}-ok"), setup=joined(f"{g}-ok"))
    yield case("unknown-member", _sync(f"{g}-um", member="conf-nobody"),
               setup=joined(f"{g}-um"))
    yield case("wrong-generation", _sync(f"{g}-gen", generation=7), setup=joined(f"{g}-gen"))
    yield case("no-assignments", _sync(f"{g}-noa", assignments=[]), setup=joined(f"{g}-noa"))
    yield case("unknown-group", lambda s: dict(_sync(f"{g}-ok")(s), group_id=f"{g}-none"),
               setup=joined(f"{g}-ok2"))
    if v >= 5:
        yield case("other-protocol-name", _sync(f"{g}-pn", protocol_name="roundrobin"),
                   setup=joined(f"{g}-pn"))
        yield case("other-protocol-type", _sync(f"{g}-pt", protocol_type="connect"),
                   setup=joined(f"{g}-pt"))
        yield case("null-protocol", _sync(f"{g}-np", protocol_type=None, protocol_name=None),
                   setup=joined(f"{g}-np"))


@for_api(12)
def heartbeat(v: int):
    g = f"conf-hb-v{v}"

    def hb(group, member=None, generation=None):
        return lambda s: {"group_id": group, "member_id": member or s.vars["member"],
                          "generation_id": s.vars["generation"] if generation is None
                          else generation, "group_instance_id": None}
    yield case("ordinary", hb(f"{g}-ok"), setup=joined(f"{g}-ok"))
    yield case("unknown-member", hb(f"{g}-um", member="conf-nobody"), setup=joined(f"{g}-um"))
    yield case("wrong-generation", hb(f"{g}-gen", generation=9), setup=joined(f"{g}-gen"))
    yield case("unknown-group", {"group_id": f"{g}-none", "member_id": "conf-nobody",
                                 "generation_id": 1})
    yield case("empty-group", hb(f"{g}-empty", member="m", generation=-1),
               setup=committed(f"{g}-empty"))


@for_api(13)
def leave_group(v: int):
    g = f"conf-leave-v{v}"

    def leave(group, member=None, extra_members=()):
        def build(s):
            m = member or s.vars["member"]
            return {"group_id": group, "member_id": m, "members": [
                {"member_id": x, "group_instance_id": None, "reason": None}
                for x in (m, *extra_members)]}
        return build
    yield case("ordinary", leave(f"{g}-ok"), setup=joined(f"{g}-ok"))
    yield case("unknown-member", leave(f"{g}-um", member="conf-nobody"),
               setup=joined(f"{g}-um"))
    yield case("unknown-group", {"group_id": f"{g}-none", "member_id": "conf-nobody",
                                 "members": [{"member_id": "conf-nobody"}]})
    if v >= 3:
        yield case("known-and-unknown", leave(f"{g}-mix", extra_members=("conf-nobody",)),
                   setup=joined(f"{g}-mix"))
        yield case("no-members", {"group_id": f"{g}-nm", "members": []},
                   setup=joined(f"{g}-nm"))
        yield case("unknown-instance", {"group_id": f"{g}-ui", "members": [
            {"member_id": "", "group_instance_id": "conf-no-instance"}]},
                   setup=joined(f"{g}-ui"))


@for_api(15)
def describe_groups(v: int):
    g = f"conf-desc-v{v}"
    ops = {"include_authorized_operations": True}
    yield case("stable", dict(groups=[f"{g}-stable"]), setup=joined(f"{g}-stable"))
    yield case("empty-with-offsets", {"groups": [GROUP]})
    yield case("unknown", {"groups": [f"{g}-none"]})
    yield case("no-groups", {"groups": []})
    yield case("empty-name", {"groups": [""]})
    # left by JoinGroup cases: v0 joined and awaits its sync; v5 holds a pending member
    yield case("awaiting-sync-and-pending", {"groups": ["conf-join-v0-new", "conf-join-v5-new"]})
    if v >= 3:
        yield case("authorized-ops", dict(ops, groups=[f"{g}-ops", GROUP]),
                   setup=joined(f"{g}-ops"))


@for_api(16)
def list_groups(v: int):
    yield case("all", {})
    if v >= 4:
        yield case("stable-only", {"states_filter": ["Stable"]})
        yield case("empty-only", {"states_filter": ["Empty"]})
        yield case("unknown-state", {"states_filter": ["Bogus"]})
    if v >= 5:
        yield case("classic-type", {"types_filter": ["classic"]})
        yield case("consumer-type", {"types_filter": ["consumer"]})
        yield case("unknown-type", {"types_filter": ["bogus"]})


@for_api(42)
def delete_groups(v: int):
    g = f"conf-del-v{v}"
    yield case("empty-group", {"groups_names": [f"{g}-empty"]}, setup=committed(f"{g}-empty"))
    yield case("unknown-group", {"groups_names": [f"{g}-none"]})
    yield case("non-empty", {"groups_names": [f"{g}-stable"]}, setup=joined(f"{g}-stable"))
    yield case("no-groups", {"groups_names": []})
    yield case("mixed", {"groups_names": [f"{g}-m1", f"{g}-none2"]}, setup=committed(f"{g}-m1"))


@for_api(47)
def offset_delete(v: int):
    g = "conf-odel"

    def od(group, topic=MULTI, partitions=(0,)):
        return {"group_id": group, "topics": [
            {"name": topic, "partitions": [{"partition_index": p} for p in partitions]}]}
    yield case("empty-group", od(f"{g}-empty"), setup=committed(f"{g}-empty"))
    yield case("unknown-group", od(f"{g}-none"))
    yield case("subscribed", od(f"{g}-sub", topic=PLAIN),
               setup=both(committed(f"{g}-sub", PLAIN, (0,)), joined(f"{g}-sub")))
    yield case("not-subscribed", od(f"{g}-nsub"),
               setup=both(committed(f"{g}-nsub"), joined(f"{g}-nsub")))
    yield case("after-member-left", od(f"{g}-left", topic=PLAIN),
               setup=both(committed(f"{g}-left", PLAIN, (0,)), joined(f"{g}-left"), _left))
    yield case("unknown-topic", od(f"{g}-ut", topic=MISSING), setup=committed(f"{g}-ut"))
    yield case("unknown-partition", od(f"{g}-up", partitions=(0, 9)),
               setup=committed(f"{g}-up"))
    yield case("no-topics", {"group_id": f"{g}-nt", "topics": []}, setup=committed(f"{g}-nt"))
