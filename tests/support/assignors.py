"""Kafka's own server-side assignors as a test oracle: ``AssignorOracle.java``
(tests/unit/coordinator/group/consumer/) compiled against Kafka 3.9's jars (KAFKA_HOME,
``libs/``), and run over many cases in one JVM.

Two sources of Kafka's answers:

- ``kafka39_assignors`` (a session fixture of the folder that uses it): the assignors of
  Kafka 3.9's ``kafka-group-coordinator`` jar, run live; skips without a JDK or Kafka 3.9.
- Kafka 4.0's answers, recorded (``recorded_mismatches``): the same program with Kafka 4.0's
  assignor sources (the ``group/assignor`` package, whose interfaces 3.9's jars already have)
  compiled ahead of the jar, run once over the cases of ``RECORDINGS``, each input line and
  Kafka's answer kept in ``tests/unit/coordinator/group/consumer/kafka40/<name>.jsonl.gz``.
  No Kafka 4.0 broker or jar is published where the tests install from, so the answers travel
  with the tests; ``python -m tests.support.assignors`` records them again from a Kafka source
  tree: ``KAFKA_SOURCE``, a checkout or a bare git directory (its ``HEAD``), by default
  ``../.mirror/apache+kafka/repo`` beside the repository.

A case (``Case``: topics, members with their subscribed names and current targets) becomes
the program's input line (``Case.oracle_input``); the answer, ``{member id: {topic id:
[partitions]}}`` (Kafka's base64 topic ids) or ``{"error": ..}``, becomes an assignment
(``from_oracle``).  ``random_case`` and ``evolve`` make random groups and their next steps
(members joining, leaving, changing subscriptions) for the oracle and property tests.
"""
from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import subprocess
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Mapping

import pytest
from hypothesis import strategies as st

from kafkapy.coordinator.group.consumer.assignor import ASSIGNORS
from kafkapy.coordinator.group.consumer.types import MemberSpec, TopicMetadata
from kafkapy.metadata.topics import parse_topic_id, topic_id_text
from tests.support.kafka_jvm import CLIENT_JVM_FLAGS, JAVAC

ROOT = Path(__file__).resolve().parents[2]
KAFKA_HOME = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))
KAFKA_SOURCE = Path(os.environ.get("KAFKA_SOURCE", ROOT.parent / ".mirror" / "apache+kafka" / "repo"))
ORACLE_SOURCE = ROOT / "tests" / "unit" / "coordinator" / "group" / "consumer" / "AssignorOracle.java"
RECORDED = ORACLE_SOURCE.parent / "kafka40"
_ASSIGNOR_PACKAGE = "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/assignor"
_KAFKA40_SOURCES = ("AssignorHelpers", "RangeAssignor", "RangeSet", "UniformAssignor",
                    "UniformHeterogeneousAssignmentBuilder", "UniformHomogeneousAssignmentBuilder")


@dataclass(frozen=True)
class AssignorOracle:
    """One build of the oracle: ``run(cases)`` answers every case in one JVM."""
    classpath: str

    def run(self, cases: list[dict]) -> list[dict]:
        done = subprocess.run([shutil.which("java") or "java", *CLIENT_JVM_FLAGS, "-cp",
                               self.classpath, "AssignorOracle"],
                              input="".join(json.dumps(c) + "\n" for c in cases),
                              capture_output=True, encoding="utf-8", timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        assert len(answers) == len(cases), done.stderr[-3000:]
        return answers


def _require_jdk_and_kafka() -> Path:
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"JDK not installed ({', '.join(missing)} not on PATH)")
    libs = KAFKA_HOME / "libs"
    if not (libs / "kafka-group-coordinator-3.9.0.jar").is_file():
        pytest.skip(f"no Kafka 3.9 at {KAFKA_HOME}")
    return libs


def _javac(sources: list[Path], classes: Path, classpath: str) -> None:
    classes.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([*JAVAC, "-nowarn", "-Xlint:none", "-d", str(classes), "-cp", classpath,
                           *map(str, sources)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"javac failed:\n{done.stdout}\n{done.stderr}"


def _kafka40_source(name: str) -> str | None:
    """One 4.0 assignor source file, from a checkout or a bare git directory."""
    path = f"{_ASSIGNOR_PACKAGE}/{name}.java"
    if (KAFKA_SOURCE / path).is_file():
        return (KAFKA_SOURCE / path).read_text()
    if not (KAFKA_SOURCE / "HEAD").is_file():
        return None
    done = subprocess.run(["git", "--git-dir", str(KAFKA_SOURCE), "show", f"HEAD:{path}"],
                          capture_output=True, text=True, timeout=60)
    return done.stdout if done.returncode == 0 else None


@pytest.fixture(scope="session")
def assignor_oracle_classes(tmp_path_factory) -> Path:
    libs = _require_jdk_and_kafka()
    classes = tmp_path_factory.mktemp("assignor-oracle")
    _javac([ORACLE_SOURCE], classes, str(libs / "*"))
    return classes


@pytest.fixture(scope="session")
def kafka39_assignors(assignor_oracle_classes) -> AssignorOracle:
    return AssignorOracle(os.pathsep.join([str(assignor_oracle_classes), str(KAFKA_HOME / "libs" / "*")]))


def _kafka40_oracle(classes: Path, work: Path) -> AssignorOracle:
    """The oracle with Kafka 4.0's assignor sources compiled ahead of 3.9's jar."""
    sources = {name: _kafka40_source(name) for name in _KAFKA40_SOURCES}
    missing = [name for name, text in sources.items() if text is None]
    if missing:
        raise SystemExit(f"no Kafka 4.0 assignor sources ({', '.join(missing)}) at "
                         f"{KAFKA_SOURCE} (set KAFKA_SOURCE)")
    folder = work / "kafka40-assignor-sources"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in sources.items():
        (folder / f"{name}.java").write_text(text)
    compiled = work / "kafka40-assignor-classes"
    _javac(sorted(folder.glob("*.java")), compiled, str(KAFKA_HOME / "libs" / "*"))
    return AssignorOracle(os.pathsep.join([str(compiled), str(classes),
                                           str(KAFKA_HOME / "libs" / "*")]))


# -- cases -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CaseMember:
    """A member of a case: its subscribed topic names and current target (topic id ->
    partitions, in the order Kafka's coordinator would have loaded them)."""
    member_id: str
    topics: tuple[str, ...]
    assigned: dict[uuid.UUID, tuple[int, ...]]
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True)
class Case:
    topics: tuple[TopicMetadata, ...]
    members: tuple[CaseMember, ...]

    @property
    def topic_map(self) -> dict[uuid.UUID, TopicMetadata]:
        return {t.topic_id: t for t in self.topics}

    @property
    def homogeneous(self) -> bool:
        """Every member names the same topics (Kafka's test)."""
        return len({frozenset(m.topics) for m in self.members}) <= 1

    def specs(self) -> dict[str, MemberSpec]:
        ids = {t.name: t.topic_id for t in self.topics}
        return {m.member_id: member_spec(frozenset(ids[n] for n in m.topics if n in ids),
                                         {t: frozenset(ps) for t, ps in m.assigned.items()},
                                         rack_id=m.rack_id, instance_id=m.instance_id)
                for m in self.members}

    def oracle_input(self, assignor: str) -> dict:
        """The oracle's input line; names in sorted order (the order kafkapy's assignors
        assume for names that share a bucket of Java's table)."""
        return {"assignor": assignor,
                "topics": [{"id": topic_id_text(t.topic_id), "name": t.name,
                            "partitions": t.num_partitions} for t in self.topics],
                "members": [{"id": m.member_id, "instance": m.instance_id, "rack": m.rack_id,
                             "topics": sorted(m.topics),
                             "assigned": [[topic_id_text(t), sorted(ps)]
                                          for t, ps in m.assigned.items()]}
                            for m in self.members]}

    def with_targets(self, targets: Mapping[str, Mapping[uuid.UUID, Iterable[int]]]) -> "Case":
        """This case with each member's current target replaced by its entry in ``targets``
        (topics in that entry's order, partitions ascending)."""
        return replace(self, members=tuple(
            replace(m, assigned={t: tuple(sorted(ps)) for t, ps in targets.get(m.member_id, {}).items()})
            for m in self.members))


def member_spec(topic_ids: frozenset[uuid.UUID], assigned, *, rack_id: str | None = None,
                instance_id: str | None = None) -> MemberSpec:
    return MemberSpec(rack_id, topic_ids, assigned, instance_id=instance_id)


def from_oracle(answer: dict) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    assert "error" not in answer, answer["error"]
    return {m: {parse_topic_id(t): frozenset(ps) for t, ps in by_topic.items()}
            for m, by_topic in answer.items()}


_PARTITION_COUNTS = (0, 1, 2, 3, 4, 5, 7, 8, 12, 13, 16, 17, 24, 30, 33, 40, 64, 100, 257)
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def random_topic_id(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128) | 1)


def random_member_id(rng: random.Random) -> str:
    """Kafka-like member ids (22 base64 characters), short ones, and a few beyond ASCII."""
    kind = rng.random()
    if kind < 0.6:
        return "".join(rng.choice(_ALPHABET) for _ in range(22))
    if kind < 0.9:
        return f"member-{rng.randrange(1000)}"
    return rng.choice(("m\u00e9", "\U0001F600m", "\uff21", "m\U00010400", "z\uffff")) + str(rng.randrange(100))


def random_topics(rng: random.Random, count: int | None = None) -> tuple[TopicMetadata, ...]:
    count = count if count is not None else rng.choice((1, 1, 2, 3, 4, 5, 6, 8, 13, 17))
    small = count > 8
    return tuple(TopicMetadata(random_topic_id(rng), f"topic-{i}",
                               rng.choice(_PARTITION_COUNTS[:10] if small else _PARTITION_COUNTS))
                 for i in range(count))


def random_case(rng: random.Random, *, homogeneous: bool, prior: bool,
                static: bool = False) -> Case:
    """A group of 1 to 30 members over random topics; ``prior``: random current targets
    (partitions held by any member, subscribed or not, or by none)."""
    topics = random_topics(rng)
    names = [t.name for t in topics]
    count = rng.choice((1, 2, 3, 4, 5, 7, 10, 12, 13, 16, 25, 30))
    member_ids = list(dict.fromkeys(random_member_id(rng) for _ in range(count)))
    shared = tuple(rng.sample(names, rng.randint(1, len(names))))
    subscriptions = {m: shared if homogeneous else tuple(rng.sample(names, rng.randint(0, len(names))))
                     for m in member_ids}
    if not homogeneous and len(set(map(frozenset, subscriptions.values()))) == 1 and len(names) > 1:
        subscriptions[member_ids[0]] = tuple(n for n in names if n not in subscriptions[member_ids[0]])
    assigned: dict[str, dict[uuid.UUID, list[int]]] = {m: {} for m in member_ids}
    if prior:
        for topic in rng.sample(topics, len(topics)):
            for p in range(topic.num_partitions):
                if rng.random() < 0.75:
                    assigned[rng.choice(member_ids)].setdefault(topic.topic_id, []).append(p)
    instances = rng.sample(range(1000), len(member_ids))     # unique in a group
    members = tuple(CaseMember(m, subscriptions[m], {t: tuple(ps) for t, ps in assigned[m].items()},
                               instance_id=(f"instance-{instance}" if static and rng.random() < 0.5
                                            else None),
                               rack_id=rng.choice((None, "rack-a", "rack-b")))
                    for m, instance in zip(member_ids, instances))
    return Case(topics, members)


def evolve(rng: random.Random, case: Case, targets: Mapping[str, Mapping[uuid.UUID, Iterable[int]]],
           *, homogeneous: bool) -> Case:
    """The next step of a group: ``targets`` as the current targets, then members join,
    leave or change subscription."""
    case = case.with_targets(targets)
    members = list(case.members)
    names = [t.name for t in case.topics]
    for _ in range(rng.randint(1, 3)):
        action = rng.random()
        if action < 0.4:
            topics = members[0].topics if homogeneous and members else tuple(
                rng.sample(names, rng.randint(0, len(names))))
            members.insert(rng.randrange(len(members) + 1),
                           CaseMember(random_member_id(rng), topics, {}))
        elif action < 0.7 and len(members) > 1:
            members.pop(rng.randrange(len(members)))
        elif not homogeneous and members:
            at = rng.randrange(len(members))
            members[at] = replace(members[at], topics=tuple(rng.sample(names, rng.randint(0, len(names)))))
    members = list({m.member_id: m for m in members}.values())
    return replace(case, members=tuple(members))


@st.composite
def groups(draw, homogeneous: bool | None = None) -> Case:
    """Hypothesis: a group of 1 to 12 members over 1 to 5 topics of 0 to 40 partitions,
    homogeneous or not (``None``: either), with or without current targets (partitions
    held by any member, subscribed or not, or by none)."""
    ids = draw(st.lists(st.integers(1, 2**128 - 1), min_size=1, max_size=5, unique=True))
    topics = tuple(TopicMetadata(uuid.UUID(int=i), f"topic-{n}", draw(st.integers(0, 40)))
                   for n, i in enumerate(ids))
    names = [t.name for t in topics]
    member_ids = draw(st.lists(st.text(_ALPHABET, min_size=1, max_size=6), min_size=1, max_size=12,
                               unique=True))
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    shared = tuple(sorted(draw(st.sets(st.sampled_from(names), min_size=1))))
    assigned: dict[str, dict[uuid.UUID, list[int]]] = {m: {} for m in member_ids}
    if draw(st.booleans()):
        holders = st.none() | st.sampled_from(member_ids)
        for topic in topics:
            for partition in range(topic.num_partitions):
                holder = draw(holders)
                if holder is not None:
                    assigned[holder].setdefault(topic.topic_id, []).append(partition)
    members = tuple(CaseMember(m, shared if same else tuple(sorted(draw(st.sets(st.sampled_from(names))))),
                               {t: tuple(ps) for t, ps in assigned[m].items()})
                    for m in member_ids)
    return Case(topics, members)


def check_assigned_once(result: Mapping[str, Mapping[uuid.UUID, frozenset[int]]],
                        specs: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicMetadata]) -> None:
    """Every member has an entry, every partition of a subscribed topic in ``topics``
    belongs to exactly one of its subscribers, and nothing else is assigned."""
    assert set(result) == set(specs), "an entry for every member"
    owners: dict[tuple[uuid.UUID, int], str] = {}
    for member_id, by_topic in result.items():
        for topic_id, partitions in by_topic.items():
            assert partitions, f"{member_id}: empty {topic_id} kept"
            assert topic_id in specs[member_id].subscribed_topic_ids, f"{member_id}: {topic_id} unsubscribed"
            for partition in partitions:
                assert 0 <= partition < topics[topic_id].num_partitions
                other = owners.setdefault((topic_id, partition), member_id)
                assert other == member_id, f"{topic_id}-{partition} to {other} and {member_id}"
    subscribed = {t for s in specs.values() for t in s.subscribed_topic_ids if t in topics}
    wanted = {(t, p) for t in subscribed for p in range(topics[t].num_partitions)}
    assert set(owners) == wanted, f"unassigned: {sorted(wanted - set(owners))[:5]}"


def mismatches(oracle, cases: list, assignor) -> list[tuple]:
    """(case, kafkapy's answer, Kafka's) for the first two cases where ``assignor`` and
    Kafka's assignor of the same name (run by ``oracle``) answer differently."""
    answers = oracle.run([c.oracle_input(assignor.name) for c in cases])
    differ = []
    for case, answer in zip(cases, answers):
        ours, kafkas = assignor.assign(case.specs(), case.topic_map), from_oracle(answer)
        if ours != kafkas:
            differ.append((case, ours, kafkas))
    return differ[:2]


# -- case sets -------------------------------------------------------------------------------
def uniform_cases(seed: int, *, homogeneous: bool, count: int = 300) -> list[Case]:
    """Random groups for the uniform assignor, each followed by its next step from
    kafkapy's answer; only the homogeneous or only the heterogeneous ones."""
    uniform = ASSIGNORS["uniform"]
    rng = random.Random(seed)
    cases: list[Case] = []
    while len(cases) < count:
        case = random_case(rng, homogeneous=homogeneous, prior=rng.random() < 0.5)
        cases += [case, evolve(rng, case, uniform.assign(case.specs(), case.topic_map),
                               homogeneous=homogeneous)]
    return [c for c in cases if c.homogeneous == homogeneous]


def range_cases(seed: int, count: int = 300) -> list[Case]:
    """Random groups for the range assignor, homogeneous or not, with static members,
    each followed by its next step from kafkapy's answer."""
    range_ = ASSIGNORS["range"]
    rng = random.Random(seed)
    cases: list[Case] = []
    while len(cases) < count:
        homogeneous = rng.random() < 0.5
        case = random_case(rng, homogeneous=homogeneous, prior=rng.random() < 0.3, static=True)
        cases += [case, evolve(rng, case, range_.assign(case.specs(), case.topic_map),
                               homogeneous=homogeneous)]
    return cases


# name -> (assignor, the cases recorded)
RECORDINGS = {
    "uniform-homogeneous": ("uniform", lambda: uniform_cases(2, homogeneous=True)),
    "uniform-heterogeneous": ("uniform", lambda: uniform_cases(3, homogeneous=False)),
    "range": ("range", lambda: range_cases(12)),
}


def case_from_input(line: dict) -> Case:
    """The case an oracle input line (``Case.oracle_input``) was made from."""
    topics = tuple(TopicMetadata(parse_topic_id(t["id"]), t["name"], t["partitions"])
                   for t in line["topics"])
    members = tuple(CaseMember(m["id"], tuple(m["topics"]),
                               {parse_topic_id(t): tuple(ps) for t, ps in m["assigned"]},
                               instance_id=m["instance"], rack_id=m["rack"])
                    for m in line["members"])
    return Case(topics, members)


def recorded(name: str) -> list[tuple[Case, dict]]:
    """The recorded cases of ``name`` with Kafka 4.0's answer to each."""
    with gzip.open(RECORDED / f"{name}.jsonl.gz", "rt", encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    return [(case_from_input(line["input"]), line["answer"]) for line in lines]


def recorded_mismatches(name: str, assignor) -> list[tuple]:
    """``mismatches`` against Kafka 4.0's recorded answers to the cases of ``name``."""
    differ = []
    for case, answer in recorded(name):
        ours, kafkas = assignor.assign(case.specs(), case.topic_map), from_oracle(answer)
        if ours != kafkas:
            differ.append((case, ours, kafkas))
    return differ[:2]


def record_kafka40(work: Path) -> None:
    """Run Kafka 4.0's assignors over every recording's cases and write the answers."""
    libs = _require_jdk_and_kafka()
    classes = work / "assignor-oracle"
    _javac([ORACLE_SOURCE], classes, str(libs / "*"))
    oracle = _kafka40_oracle(classes, work)
    RECORDED.mkdir(exist_ok=True)
    for name, (assignor, cases) in RECORDINGS.items():
        inputs = [c.oracle_input(assignor) for c in cases()]
        answers = oracle.run(inputs)
        # mtime=0: the same answers give the same file bytes.
        with open(RECORDED / f"{name}.jsonl.gz", "wb") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            for line, answer in zip(inputs, answers):
                f.write((json.dumps({"input": line, "answer": answer}, sort_keys=True,
                                    separators=(",", ":")) + "\n").encode())
        print(f"{name}: {len(inputs)} cases")


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        record_kafka40(Path(tmp))
