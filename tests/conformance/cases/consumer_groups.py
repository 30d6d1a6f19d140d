"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69), answered by Kafka 3.9 in KRaft mode with the protocol's preview
(``reference=KRAFT``; its ZooKeeper mode does not serve them).  v1 of both goes to Kafka at
v0 (``known.STAND_IN_VERSIONS``).

Topics (``state.prepare_consumer_protocol``): ``cgp-four`` (4 partitions) and ``cgp-two``
(2).  Multi-member flows use ``cgp-four`` with two members, so each member's share (2
partitions) does not depend on the random member ids; their answers are compared by
partition count per member and by total coverage (``consumer_shape``).  v0 members get
their id from the broker; v1 cases join with an id of their own (``client_member_id``), as a
Kafka 4.x client does, and Kafka gets the same id at v0 (which keeps an id it is given).

A setup is a list of steps run in order on each side (``flow``); each step is a v0 heartbeat
that must succeed, and keeps the member's id, epoch and assignment (``side.vars["members"]``,
by label ``m1``, ``m2``; the id gets the same label in the answer).  A member reports as
owned the last assignment it was given, as a client does once it has reconciled it.  Every
case uses a group named after itself.
"""
from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field

from kafkapy.jvm import string_hash, utils_abs
from tests.conformance.cases import KRAFT, Side, for_api
from tests.conformance.cases.common import case
from tests.conformance.cases.groups import committed, join as classic_join
from tests.conformance.consumer_shape import remember, shaped
from tests.conformance.state import CGP_FOUR as FOUR, CGP_TWO as TWO, COORDINATOR_WAIT

MISSING_TOPIC = "cgp-missing"       # never created
REBALANCE_TIMEOUT_MS = 300000       # no member is fenced by it while the suite runs
INSTANCE = "cgp-instance"
NOBODY = "cgp-nobody"


@dataclass
class _Member:
    member_id: str
    epoch: int
    owned: list = field(default_factory=list)     # [(topic id, [partitions])]
    instance_id: str | None = None


def client_member_id(group: str, name: str) -> str:
    """A member id as a Kafka 4.x client generates one (``Uuid.toString()``: 22 characters
    of base64url), fixed per group and member so both brokers get the same."""
    raw = hashlib.md5(f"{group}/{name}".encode()).digest()
    text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return "A" + text[1:] if text.startswith("-") else text


def join_fields(group: str, member_id: str = "", topics=(FOUR,), instance_id=None,
                rack_id=None, assignor=None, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                owned=()) -> dict:
    return {"group_id": group, "member_id": member_id, "member_epoch": 0,
            "instance_id": instance_id, "rack_id": rack_id,
            "rebalance_timeout_ms": rebalance_timeout_ms,
            "subscribed_topic_names": None if topics is None else list(topics),
            "subscribed_topic_regex": None, "server_assignor": assignor,
            "topic_partitions": None if owned is None else list(owned)}


def _members(side: Side) -> dict[str, _Member]:
    return side.vars.setdefault("members", {})


def _owned_fields(owned) -> list[dict] | None:
    if owned is None:
        return None
    return [{"topic_id": topic_id, "partitions": list(ps)} for topic_id, ps in owned]


def beat_fields(side: Side, group: str, name: str, epoch: int | None = None, owned=True,
                **changes) -> dict:
    """A heartbeat of member ``name``: its epoch, and as owned what it was last given
    (``owned=False``: nothing; None: unchanged (null); a list: those (topic id,
    partitions))."""
    m = _members(side)[name]
    if owned is True:
        owns = m.owned
    elif owned is False:
        owns = []
    else:
        owns = owned
    fields = {"group_id": group, "member_id": m.member_id,
              "member_epoch": m.epoch if epoch is None else epoch,
              "instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1,
              "subscribed_topic_names": None, "subscribed_topic_regex": None,
              "server_assignor": None, "topic_partitions": _owned_fields(owns)}
    fields.update(changes)
    return fields


def _send(side: Side, name: str, fields: dict, member: _Member | None = None) -> None:
    r = side.call(68, 0, fields, retry_codes=COORDINATOR_WAIT, code=lambda r: r.error_code)
    if r.error_code:
        raise AssertionError(f"{side.name}: setup heartbeat of {name} answered "
                             f"{r.error_code} {r.error_message}")
    m = member or _members(side)[name]
    m.member_id, m.epoch = r.member_id, r.member_epoch
    if r.assignment is not None:
        m.owned = [(t.topic_id, sorted(t.partitions)) for t in r.assignment.topic_partitions]
    _members(side)[name] = m
    remember(side, r.member_id)


def join(group: str, name: str, **kw):
    """Step: member ``name`` joins (epoch 0, a broker-generated id unless ``member_id``)."""
    def step(side: Side) -> None:
        _send(side, name, join_fields(group, **kw),
              _Member("", 0, instance_id=kw.get("instance_id")))
    return step


def beat(group: str, name: str, **kw):
    """Step: member ``name`` heartbeats, reporting what it was last given as owned."""
    def step(side: Side) -> None:
        _send(side, name, beat_fields(side, group, name, **kw))
    return step


def leave(group: str, name: str, epoch: int = -1):
    def step(side: Side) -> None:
        m = _members(side)[name]
        _send(side, name, beat_fields(side, group, name, epoch=epoch, owned=None,
                                      instance_id=m.instance_id))
    return step


def flow(*steps):
    def setup(side: Side) -> None:
        for step in steps:
            step(side)
    return setup


def stable_pair(group: str):
    """m1 and m2 on cgp-four, reconciled: 2 partitions each, group epoch 2."""
    return [join(group, "m1"), beat(group, "m1"), join(group, "m2"), beat(group, "m1"),
            beat(group, "m1"), beat(group, "m2"), beat(group, "m2")]


def _kraft(name, build, setup=None, counts=False):
    return case(name, build, setup=setup, reference=KRAFT, shape=shaped(counts))


def _final(group, name, **kw):
    return lambda s: beat_fields(s, group, name, **kw)


@for_api(68)
def consumer_group_heartbeat(v: int):
    g = f"cgp-hb-v{v}"
    mid = (lambda group, n="m1": client_member_id(group, n)) if v >= 1 else (lambda *a: "")

    def joining(name, **kw):
        group = f"{g}-{name}"
        return _kraft(name, join_fields(group, member_id=mid(group), **kw))
    yield joining("join")
    yield joining("join-range", assignor="range")
    yield joining("join-uniform", assignor="uniform")
    yield joining("join-two-topics", topics=(FOUR, TWO))
    yield joining("join-unknown-topic", topics=(MISSING_TOPIC,))
    yield joining("join-static", instance_id=INSTANCE)
    yield joining("join-with-rack", rack_id="rack-a")
    # the request's own checks
    yield _kraft("empty-group-id", join_fields("", member_id=mid("")))
    yield joining("missing-rebalance-timeout", rebalance_timeout_ms=-1)
    yield _kraft("owned-partitions-on-join", lambda s: join_fields(
        f"{g}-owned", member_id=mid(f"{g}-owned"),
        owned=[{"topic_id": s.topic_ids[FOUR], "partitions": [0]}]))
    yield joining("null-owned-partitions-on-join", owned=None)
    yield joining("unknown-assignor", assignor="bogus")
    yield joining("no-subscription", topics=None)
    yield joining("empty-subscription", topics=())
    yield joining("empty-instance-id", instance_id="")
    yield joining("empty-rack-id", rack_id="")
    yield _kraft("empty-member-id-heartbeat", {**join_fields(f"{g}-emid"), "member_epoch": 1})
    yield _kraft("invalid-epoch", {**join_fields(f"{g}-ie", member_id=NOBODY),
                                   "member_epoch": -3})
    yield _kraft("unknown-group", {**join_fields(f"{g}-none", member_id=NOBODY),
                                   "member_epoch": 1})
    if v >= 1:
        yield _kraft("join-empty-member-id", join_fields(f"{g}-nomid"))

    def stateful(name, final, steps, counts=False):
        group = f"{g}-{name}"
        return _kraft(name, final(group), setup=flow(*steps(group)), counts=counts)

    yield stateful("heartbeat", lambda gr: _final(gr, "m1"), lambda gr: [join(gr, "m1")])
    yield stateful("heartbeat-unreconciled", lambda gr: _final(gr, "m1", owned=False),
                   lambda gr: [join(gr, "m1")])
    yield stateful("heartbeat-full", lambda gr: lambda s: beat_fields(
        s, gr, "m1", rebalance_timeout_ms=REBALANCE_TIMEOUT_MS, subscribed_topic_names=[FOUR]),
        lambda gr: [join(gr, "m1"), beat(gr, "m1")])
    yield stateful("unknown-member", lambda gr: lambda s: {
        **beat_fields(s, gr, "m1"), "member_id": NOBODY}, lambda gr: [join(gr, "m1")])
    yield stateful("fenced-epoch", lambda gr: _final(gr, "m1", epoch=7),
                   lambda gr: [join(gr, "m1")])
    yield stateful("subscription-change", lambda gr: _final(
        gr, "m1", subscribed_topic_names=[FOUR, TWO]),
        lambda gr: [join(gr, "m1"), beat(gr, "m1")])
    yield stateful("second-member-joins", lambda gr: lambda s: join_fields(
        gr, member_id=mid(gr, "m2")),
                   lambda gr: [join(gr, "m1"), beat(gr, "m1")], counts=True)
    yield stateful("revocation", lambda gr: _final(gr, "m1"),
                   lambda gr: [join(gr, "m1"), beat(gr, "m1"), join(gr, "m2")], counts=True)
    yield stateful("revocation-acked", lambda gr: _final(gr, "m1"),
                   lambda gr: [join(gr, "m1"), beat(gr, "m1"), join(gr, "m2"),
                               beat(gr, "m1")], counts=True)
    yield stateful("pending-partitions", lambda gr: _final(gr, "m2"),
                   lambda gr: [join(gr, "m1"), beat(gr, "m1"), join(gr, "m2")], counts=True)
    yield stateful("released-partitions", lambda gr: _final(gr, "m2"),
                   lambda gr: [join(gr, "m1"), beat(gr, "m1"), join(gr, "m2"),
                               beat(gr, "m1"), beat(gr, "m1")], counts=True)
    yield stateful("stable-pair", lambda gr: _final(gr, "m1"), stable_pair, counts=True)
    yield stateful("previous-epoch", lambda gr: lambda s: beat_fields(
        s, gr, "m1", epoch=_members(s)["m1"].epoch - 1), stable_pair, counts=True)
    yield stateful("rebalance-after-leave", lambda gr: _final(gr, "m1"),
                   lambda gr: [*stable_pair(gr), leave(gr, "m2")], counts=True)
    yield stateful("leave", lambda gr: _final(gr, "m1", epoch=-1, owned=None),
                   lambda gr: [join(gr, "m1")])
    yield stateful("leave-unknown-member", lambda gr: lambda s: {
        **beat_fields(s, gr, "m1", epoch=-1), "member_id": NOBODY, "topic_partitions": None},
        lambda gr: [join(gr, "m1")])
    yield stateful("static-leave", lambda gr: _final(
        gr, "m1", epoch=-2, instance_id=INSTANCE, topic_partitions=None),
        lambda gr: [join(gr, "m1", instance_id=INSTANCE), beat(gr, "m1")])
    yield stateful("static-leave-without-instance-id", lambda gr: _final(
        gr, "m1", epoch=-2, topic_partitions=None),
        lambda gr: [join(gr, "m1", instance_id=INSTANCE)])
    yield stateful("static-rejoin", lambda gr: lambda s: join_fields(
        gr, member_id=mid(gr, "m1b"), instance_id=INSTANCE),
        lambda gr: [join(gr, "m1", instance_id=INSTANCE), beat(gr, "m1"),
                    leave(gr, "m1", epoch=-2)])
    yield stateful("static-instance-in-use", lambda gr: lambda s: join_fields(
        gr, member_id=mid(gr, "m2"), instance_id=INSTANCE),
        lambda gr: [join(gr, "m1", instance_id=INSTANCE), beat(gr, "m1")])
    yield stateful("join-empty-classic-group", lambda gr: lambda s: join_fields(
        gr, member_id=mid(gr)), lambda gr: [committed(gr, FOUR, (0, 1))])
    yield stateful("join-classic-group-with-member", lambda gr: lambda s: join_fields(
        gr, member_id=mid(gr)), lambda gr: [lambda s: classic_join(s, gr)])


def _neighbour(group: str, same_partition: bool, partitions: int = 3) -> str:
    """Another group id whose ``__consumer_offsets`` partition is (or is not) ``group``'s."""
    def partition(g: str) -> int:
        return utils_abs(string_hash(g)) % partitions
    return next(f"{group}-none{i}" for i in range(100)
                if (partition(f"{group}-none{i}") == partition(group)) == same_partition)


@for_api(69)
def consumer_group_describe(v: int):
    g = f"cgp-desc-v{v}"

    def described(name, steps, counts=False, ops=False, extra=()):
        group = f"{g}-{name}"
        return _kraft(name, {"group_ids": [group, *extra], "include_authorized_operations": ops},
                      setup=flow(*steps(group)), counts=counts)
    yield described("one-member", lambda gr: [join(gr, "m1")])
    yield described("one-member-reconciled", lambda gr: [join(gr, "m1"), beat(gr, "m1")])
    yield described("authorized-operations", lambda gr: [join(gr, "m1")], ops=True)
    yield described("static-member-with-rack", lambda gr: [
        join(gr, "m1", instance_id=INSTANCE, rack_id="rack-a"), beat(gr, "m1")])
    yield described("two-topics", lambda gr: [join(gr, "m1", topics=(FOUR, TWO))])
    yield described("unknown-topic", lambda gr: [join(gr, "m1", topics=(MISSING_TOPIC,))])
    yield described("reconciling", lambda gr: [join(gr, "m1"), beat(gr, "m1"), join(gr, "m2")],
                    counts=True)
    yield described("revoking", lambda gr: [join(gr, "m1"), beat(gr, "m1"), join(gr, "m2"),
                                            beat(gr, "m1")], counts=True)
    yield described("stable-pair", stable_pair, counts=True)
    yield described("range-assignor", lambda gr: [join(gr, "m1", assignor="range"),
                                                  beat(gr, "m1"),
                                                  join(gr, "m2", assignor="range")],
                    counts=True)
    yield described("empty-after-leave", lambda gr: [join(gr, "m1"), leave(gr, "m1")])
    yield described("static-member-left", lambda gr: [
        join(gr, "m1", instance_id=INSTANCE), beat(gr, "m1"), leave(gr, "m1", epoch=-2)])
    yield described("classic-group", lambda gr: [lambda s: classic_join(s, gr)])
    yield described("classic-group-offsets-only", lambda gr: [committed(gr, FOUR, (0,))])
    # Two groups on one coordinator partition, then on two (offsets.topic.num.partitions=3)
    for name, same in (("with-unknown-group-same-coordinator", True),
                       ("with-unknown-group-other-coordinator", False)):
        yield described(name, lambda gr: [join(gr, "m1")],
                        extra=(_neighbour(f"{g}-{name}", same),))
    yield _kraft("unknown-group", {"group_ids": [f"{g}-none"],
                                   "include_authorized_operations": True})
    yield _kraft("no-groups", {"group_ids": [], "include_authorized_operations": False})
    yield _kraft("empty-group-id", {"group_ids": [""], "include_authorized_operations": False})
