"""The controller mutation quota on kafkapy and on Kafka 3.9 side by side (one ZooKeeper, a
chroot each): ``controller_mutation_rate=4`` for the client id ``mutator``, set with Kafka's
kafka-configs.sh, and ``controller.quota.window.num=1`` of 1 s, so the bucket holds 4
partition mutations and refills in a second.  The same run of requests goes to both
brokers at once, and their answers are compared: which topics pass and which get
THROTTLING_QUOTA_EXCEEDED (and the messages), and throttle times within a bound.

Each step starts with a full bucket (the run waits for the refill after each): a strict
request (CreateTopics v7, CreatePartitions v3, DeleteTopics v6) lets mutations through
until the bucket is below zero and refuses the rest; the permissive versions (CreateTopics
v5, CreatePartitions v2, DeleteTopics v4) accept everything and answer a throttle time;
validate_only is not counted; topics a Metadata request auto-creates are counted (3 of the
4 tokens, just before the strict CreateTopics) but neither refused nor throttled; a client
with no quota is never throttled, even while ``mutator`` is.
"""
from __future__ import annotations

import concurrent.futures
import shutil
import subprocess
import time

import pytest

from kafkapy.protocol.messages import REQUESTS
from tests.support.cluster import tool_env
from tests.support.sasl import KAFKA_HOME
from tests.support.side_by_side import quota_metrics, side_by_side
from tests.support.wire import WireClient
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(
    not (KAFKA_HOME / "bin" / "kafka-server-start.sh").exists() or not shutil.which("java"),
    reason="Kafka 3.9 or java missing")

CreateTopics, CreatePartitions, DeleteTopics = REQUESTS[19], REQUESTS[37], REQUESTS[20]
RATE = 4                    # partition mutations per second, and the bucket's size
REFILL_S = 2.1              # from 4 below zero to full: 2 s
# How far below zero each step takes the bucket, as a throttle time (the answer's is less
# the time it waited for the controller).  The tokens, from a full bucket of 4: after 3
# auto-created topics, 1 - 4 (st-a, the first in Kafka's order); 4 - 4 - 4 for the
# permissive creation (4 partitions each), the strict growth of base-a and base-b (3 to 7
# partitions), the permissive growth (4 to 8); the deletion takes base-c (3) then base-b (7)
# in Kafka's order: -6; the permissive one 8 and 8: -12.
LIMIT_MS = {"strict-create": 750, "strict-grow": 1000, "strict-delete": 1500,
            "permissive-create": 1000, "permissive-grow": 1000, "permissive-delete": 3000}
# Between the broker counting the mutations and this process's clock stopping.
_CLOCK_SLACK_MS = 250
EXCEEDED = (89, None)        # Kafka sends no message when it is the error's generic one
SETTINGS = {"controller.quota.window.num": "1", "controller.quota.window.size.seconds": "1",
            "num.partitions": "1"}
BASE = ["base-a", "base-b", "base-c", "base-d"]
STRICT = ["st-d", "st-b", "st-c", "st-a"]      # request order is not Kafka's order
PERMISSIVE = ["pe-a", "pe-b"]
AUTO = ["auto-a", "auto-b", "auto-c"]          # one partition each (num.partitions)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, zookeeper_server):  # noqa: F811
    """Each side's answers to the same run of requests (see the module docstring), and
    kafkapy's metrics scraped at the end."""
    with side_by_side(
            tmp_path_factory.mktemp("mutation-quota"), zookeeper_server, "cmq",
            kafka_overrides=lambda port: dict(SETTINGS),
            kafkapy_overrides=lambda port: dict(SETTINGS)) as pair:
        bootstraps = {"kafka": pair.kafka.bootstrap, "kafkapy": pair.kafkapy.bootstrap}
        _set_quota(bootstraps.values())
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            futures = {side: pool.submit(_run, bootstrap) for side, bootstrap in bootstraps.items()}
            answers = {side: future.result(timeout=120) for side, future in futures.items()}
        answers["metrics"] = quota_metrics(pair.kafkapy_metrics)
        yield answers


def _set_quota(bootstraps) -> None:
    tool = str(KAFKA_HOME / "bin" / "kafka-configs.sh")
    runs = [subprocess.Popen([tool, "--bootstrap-server", bootstrap, "--alter",
                              "--entity-type", "clients", "--entity-name", "mutator",
                              "--add-config", f"controller_mutation_rate={RATE}"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=tool_env())
            for bootstrap in bootstraps]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        assert "Completed updating config" in out, out


def _run(bootstrap: str) -> dict:
    """The run of requests against one broker: step name -> (answers by topic, throttle)."""
    free = WireClient(bootstrap, client_id="free", timeout=30)
    mutator = WireClient(bootstrap, client_id="mutator", timeout=30)
    out = {"elapsed_ms": {}}
    try:
        _record(out, "free-create", _create(free, 7, BASE, 3))
        time.sleep(0.5)         # the quota's change notification reaches the broker
        _record(out, "auto-create", _auto_create(mutator, AUTO))
        _record(out, "strict-create", _create(mutator, 7, STRICT, 4))
        _record(out, "validate-only", _create(mutator, 7, ["vo-a"], 40, validate_only=True))
        time.sleep(REFILL_S)
        _record(out, "permissive-create", _create(mutator, 5, PERMISSIVE, 4))
        time.sleep(REFILL_S)
        _record(out, "strict-grow", _grow(mutator, 3, BASE, 7))
        time.sleep(REFILL_S)
        _record(out, "permissive-grow", _grow(mutator, 2, PERMISSIVE, 8))
        time.sleep(REFILL_S)
        _record(out, "strict-delete", _delete(mutator, 6, BASE))
        _record(out, "free-while-exhausted", _create(free, 7, ["free-a", "free-b"], 3))
        time.sleep(2.6)         # from 6 below zero to full: 2.5 s
        _record(out, "permissive-delete", _delete(mutator, 4, PERMISSIVE))
    finally:
        free.close()
        mutator.close()
    return out


def _record(out: dict, step: str, result: tuple) -> None:
    """A step's (answers, throttle ms) under its name, the ms it took in ``elapsed_ms``."""
    answers, throttle_ms, elapsed_ms = result
    out[step] = (answers, throttle_ms)
    out["elapsed_ms"][step] = elapsed_ms


def _timed(client: WireClient, *args, **fields):
    """The response and the ms it took: a throttle time is the bucket's debt less the time
    the request waited for the controller, so ``throttle + elapsed`` is the debt on both
    brokers however slow either controller is."""
    started = time.monotonic()
    response = client.request(*args, **fields)
    return response, (time.monotonic() - started) * 1000


def _create(client: WireClient, version: int, names: list[str], partitions: int,
            validate_only: bool = False):
    response, elapsed = _timed(client, 19, version, topics=[CreateTopics.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])
        for name in names], timeout_ms=20_000, validate_only=validate_only)
    return ({t.name: (t.error_code, t.error_message) for t in response.topics},
            response.throttle_time_ms, elapsed)


def _auto_create(client: WireClient, names: list[str]):
    response, elapsed = _timed(client, 3, 4, topics=[REQUESTS[3].MetadataRequestTopic(name=name)
                                                     for name in names],
                               allow_auto_topic_creation=True)
    return ({t.name: (t.error_code, None) for t in response.topics}, response.throttle_time_ms,
            elapsed)


def _grow(client: WireClient, version: int, names: list[str], count: int):
    response, elapsed = _timed(client, 37, version, topics=[
        CreatePartitions.CreatePartitionsTopic(name=name, count=count, assignments=None)
        for name in names], timeout_ms=20_000, validate_only=False)
    return ({r.name: (r.error_code, r.error_message) for r in response.results},
            response.throttle_time_ms, elapsed)


def _delete(client: WireClient, version: int, names: list[str]):
    if version >= 6:
        response, elapsed = _timed(client, 20, version, topics=[
            DeleteTopics.DeleteTopicState(name=name, topic_id=None) for name in names],
            timeout_ms=20_000)
    else:
        response, elapsed = _timed(client, 20, version, topic_names=names, timeout_ms=20_000)
    return ({r.name: (r.error_code, getattr(r, "error_message", None))
             for r in response.responses}, response.throttle_time_ms, elapsed)


def _not_throttled_as_owed(runs: dict, step: str) -> list[tuple]:
    """The sides whose answer's throttle time is not the bucket's debt (``LIMIT_MS``) less
    the time the request waited for the controller: above zero and within the debt, or zero
    when the request itself took the debt out (on a loaded machine Kafka's controller can
    take a second over a CreatePartitions)."""
    debt, wrong = LIMIT_MS[step], []
    for side in ("kafkapy", "kafka"):
        throttle, elapsed = runs[side][step][1], runs[side]["elapsed_ms"][step]
        if not (0 < throttle <= debt or (throttle == 0 and elapsed >= debt - _CLOCK_SLACK_MS)):
            wrong.append((side, throttle, elapsed))
    return wrong


def _passed(answers: dict) -> list[str]:
    return sorted(name for name, (code, _) in answers.items() if code == 0)


STRICT_STEPS = ["strict-create", "strict-grow", "strict-delete"]
PERMISSIVE_STEPS = ["permissive-create", "permissive-grow", "permissive-delete"]


def _debt_ms(side_run: dict, step: str) -> float:
    """The bucket's debt as the step's answer implies it (see ``_timed``)."""
    return side_run[step][1] + side_run["elapsed_ms"][step]


@pytest.mark.parametrize("step", STRICT_STEPS)
def test_strict_refuses_what_comes_after_the_bucket_is_exhausted(runs, step):
    """The same topics pass on both (Kafka's order), the others get 89 with Kafka's message,
    and the answer carries a throttle time."""
    ours, theirs = runs["kafkapy"][step], runs["kafka"][step]
    assert ours[0] == theirs[0]
    refused = [name for name, answer in ours[0].items() if answer[0] != 0]
    assert refused and all(ours[0][name] == EXCEEDED for name in refused)
    assert 1 <= len(_passed(ours[0])) <= 2
    assert _not_throttled_as_owed(runs, step) == []
    assert abs(_debt_ms(runs["kafkapy"], step) - _debt_ms(runs["kafka"], step)) <= 600


@pytest.mark.parametrize("step", PERMISSIVE_STEPS)
def test_permissive_accepts_everything_and_throttles(runs, step):
    ours, theirs = runs["kafkapy"][step], runs["kafka"][step]
    assert ours[0] == theirs[0]
    assert _passed(ours[0]) == PERMISSIVE
    assert _not_throttled_as_owed(runs, step) == []
    assert abs(_debt_ms(runs["kafkapy"], step) - _debt_ms(runs["kafka"], step)) <= 600


def test_strict_create_order_is_kafkas(runs):
    """The request named the topics in an order other than Kafka's hash order: the topics
    that pass are the first ones in Kafka's order."""
    passed = _passed(runs["kafkapy"]["strict-create"][0])
    assert passed == _passed(runs["kafka"]["strict-create"][0])
    assert passed != [STRICT[0]]


def test_auto_created_topics_are_counted_not_throttled(runs):
    """Metadata's auto-creation took 3 of the 4 tokens: the strict CreateTopics right after
    lets only its first topic (4 partitions) through, where a full bucket lets two."""
    for side in ("kafkapy", "kafka"):
        assert runs[side]["auto-create"] == ({name: (5, None) for name in AUTO}, 0), side
        assert len(_passed(runs[side]["strict-create"][0])) == 1, side


def test_validate_only_is_not_counted(runs):
    """Sent while ``mutator``'s bucket was exhausted: not refused, not throttled, and the
    40 partitions it validated did not drain the bucket (the next step's throttle is
    small)."""
    for side in ("kafkapy", "kafka"):
        assert runs[side]["validate-only"] == ({"vo-a": (0, None)}, 0)
        assert runs[side]["permissive-create"][1] <= LIMIT_MS["permissive-create"]


def test_a_client_without_quota_is_unaffected(runs):
    for side in ("kafkapy", "kafka"):
        for step, names in (("free-create", BASE), ("free-while-exhausted", ["free-a", "free-b"])):
            answers, throttle = runs[side][step]
            assert _passed(answers) == sorted(names) and throttle == 0, (side, step)


def test_mutation_quota_metrics_on_kafkapy(runs):
    """kafka.server<type=ControllerMutation, client-id=mutator>'s mutation-rate, tokens and
    throttle-time, named as the exporter names Kafka's quota metrics."""
    values = runs["metrics"]

    def value(name: str) -> float:
        return values[(name, "ControllerMutation", "", "mutator")]
    assert value("kafka_server_quota_mutation_rate") > 0, values
    assert value("kafka_server_quota_throttle_time") > 0, values
    assert value("kafka_server_quota_tokens") <= RATE
