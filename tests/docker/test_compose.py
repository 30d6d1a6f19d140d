"""The Docker image and the compose files: ZooKeeper + 3 brokers, and the single node.

``scripts/docker_base.sh`` installs Debian's docker.io / debootstrap / docker-compose if
missing (root), starts dockerd, builds the debootstrap base and the images. Then each test
brings a compose project up on free loopback ports under a unique project name (host
networking), talks to it with confluent-kafka, and takes it down with ``down -v``.

The cluster test: a topic with replication factor 3 and min.insync.replicas 2, produced with
acks=all before, during and after ``stop broker2``; every acked record must be read back;
``start broker2`` brings it back on its volume and every ISR is full again; broker1's
metrics endpoint counts the topic's messages in.
Image size and start time (``up`` -> first acked produce) go to bench/results/docker-latest.md.

No skip: where the engine cannot be started the test fails with the script's reason. Every
wait is bounded; compose projects are removed even when a test fails.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.zookeeper_server import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = ROOT / "docker"
RESULTS = ROOT / "bench" / "results" / "docker-latest.md"
IMAGE = "kafkapy:latest"
BUILD_TIMEOUT_S = 1500
START_TIMEOUT_S = 180
_figures: dict[str, str] = {}


def _docker() -> str:
    # Debian's CLI first: /usr/local/bin may hold a different docker client.
    return "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"


def _run(cmd: list[str], timeout: float, env: dict | None = None,
         check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def images():
    """The images are built (idempotent; the first run also installs and starts the engine)."""
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "docker_base.sh")],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        pytest.fail("scripts/docker_base.sh could not provide a Docker engine and the images "
                    f"(exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}")
    _figures["docker_base.sh (this run)"] = f"{time.monotonic() - t0:.1f} s"
    _figures["docker_base.sh log"] = " / ".join(
        ln.removeprefix("docker_base: ") for ln in proc.stderr.splitlines()
        if ln.startswith("docker_base:")) or "nothing to do"
    for image in (IMAGE, "kafkapy-zookeeper:latest", "kafkapy-base:bookworm"):
        info = json.loads(_run([_docker(), "image", "inspect", image], 30).stdout)[0]
        _figures[f"image size ({image})"] = f"{info['Size'] / 1e6:.1f} MB"
    yield


def _compose_cmd() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]          # Debian bookworm: docker-compose 1.29 (v1)
    return [_docker(), "compose"]


class _Project:
    """One compose project: unique name, its own ports, always taken down."""

    def __init__(self, compose_file: str, ports: dict[str, int]) -> None:
        self.name = f"kafkapytest{uuid.uuid4().hex[:10]}"
        self.file = str(DOCKER_DIR / compose_file)
        self.env = {**os.environ, **{k: str(v) for k, v in ports.items()},
                    "COMPOSE_PROJECT_NAME": self.name}

    def __call__(self, *args: str, timeout: float = 120, check: bool = True):
        return _run([*_compose_cmd(), "-p", self.name, "-f", self.file, *args],
                    timeout, env=self.env, check=check)

    def down(self) -> None:
        try:
            self("down", "-v", "--timeout", "20", timeout=180, check=False)
        except subprocess.TimeoutExpired:
            pass

    def logs(self) -> str:
        try:
            return self("logs", "--no-color", "--tail", "40", timeout=60, check=False).stdout
        except subprocess.TimeoutExpired:
            return "(compose logs timed out)"


@pytest.fixture
def project(images):
    made: list[_Project] = []

    def make(compose_file: str, ports: dict[str, int]) -> _Project:
        p = _Project(compose_file, ports)
        made.append(p)
        return p

    yield make
    for p in made:
        p.down()


# librdkafka logs every refused connection while the brokers start; errors reach the tests
# through delivery reports and exceptions.
_QUIET = {"log_level": 2}


def _bootstrap(ports: list[int]) -> str:
    return ",".join(f"127.0.0.1:{p}" for p in ports)


def _create_topic(bootstrap: str, topic: str, partitions: int, rf: int, configs: dict,
                  deadline: float) -> None:
    """CreateTopics, retried until every broker is registered (bounded)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    last = None
    while time.monotonic() < deadline:
        try:
            fut = admin.create_topics([NewTopic(topic, partitions, rf, config=configs)],
                                      request_timeout=10)[topic]
            fut.result(timeout=15)
            return
        except KafkaException as err:
            last = err
            if err.args[0].code() == err.args[0].TOPIC_ALREADY_EXISTS:
                return
        except Exception as err:  # noqa: BLE001 - brokers still starting: retry until deadline
            last = err
        time.sleep(0.5)
    pytest.fail(f"could not create {topic} on {bootstrap}: {last}")


def _producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                     "message.timeout.ms": 90000, "linger.ms": 5, **_QUIET})


def _produce(producer: Producer, topic: str, values: list[str], acked: list[str],
             failed: list[str]) -> None:
    def report(err, msg):
        (failed if err is not None else acked).append(msg.value().decode())
    for v in values:
        producer.produce(topic, v.encode(), key=v.encode(), on_delivery=report)
        producer.poll(0)


def _first_produce(bootstrap: str, topic: str, deadline: float) -> None:
    """One acked record; retried (a fresh producer each time) until the deadline."""
    last = None
    while time.monotonic() < deadline:
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                             "message.timeout.ms": 10000, **_QUIET})
        acked: list[str] = []
        failed: list[str] = []
        _produce(producer, topic, ["first"], acked, failed)
        producer.flush(15)
        if acked:
            return
        last = failed
        time.sleep(0.5)
    pytest.fail(f"no produce to {topic} on {bootstrap} succeeded: {last}")


def _consume_all(bootstrap: str, topic: str, partitions: int, deadline: float) -> list[str]:
    """Every record of the topic, read from offset 0 up to each partition's high watermark."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", **_QUIET})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1]
                for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        seen: list[str] = []
        positions = {p: 0 for p in range(partitions)}
        while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=1):
                if msg.error():
                    continue
                seen.append(msg.value().decode())
                positions[msg.partition()] = msg.offset() + 1
        assert all(positions[p] >= ends[p] for p in ends), (positions, ends)
        return seen
    finally:
        consumer.close()


def _up_and_produce(compose, bootstrap: str, topic: str, partitions: int, rf: int,
                    configs: dict, figure: str) -> None:
    """``up``, then ``topic`` created and a first record acked; the time it took is ``figure``
    (the compose logs are printed when it fails)."""
    t0 = time.monotonic()
    compose("up", "-d", timeout=START_TIMEOUT_S)
    deadline = t0 + START_TIMEOUT_S
    try:
        _create_topic(bootstrap, topic, partitions, rf, configs, deadline)
        _first_produce(bootstrap, topic, deadline)
    except BaseException:
        print(compose.logs(), file=sys.stderr)
        raise
    _record(figure, f"{time.monotonic() - t0:.1f} s")


def _record(key: str, value: str) -> None:
    _figures[key] = value
    print(f"docker figure: {key}: {value}", file=sys.stderr)
    _write_results()


def _write_results() -> None:
    lines = ["# Docker figures (tests/docker/test_compose.py)", "",
             f"Written {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} on a "
             f"{os.cpu_count()}-core machine.", "", "| figure | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in _figures.items()]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")


@pytest.mark.timeout(BUILD_TIMEOUT_S + 600)
def test_cluster_survives_a_broker_stop(project):
    ports = {name: free_port() for name in (
        "ZK_PORT", "BROKER1_PORT", "BROKER2_PORT", "BROKER3_PORT",
        "METRICS1_PORT", "METRICS2_PORT", "METRICS3_PORT")}
    bootstrap = _bootstrap([ports["BROKER1_PORT"], ports["BROKER2_PORT"], ports["BROKER3_PORT"]])
    compose = project("docker-compose.yml", ports)
    topic, partitions = "replicated", 3
    _up_and_produce(compose, bootstrap, topic, partitions, 3, {"min.insync.replicas": "2"},
                    "cluster start (compose up -> first acked produce, ZK + 3 brokers)")

    acked: list[str] = ["first"]
    failed: list[str] = []
    producer = _producer(bootstrap)
    _produce(producer, topic, [f"before-{i}" for i in range(300)], acked, failed)
    assert producer.flush(60) == 0
    # Stop broker2 (SIGTERM: controlled shutdown) while records keep coming.
    stop = subprocess.Popen([*_compose_cmd(), "-p", compose.name, "-f", compose.file,
                             "stop", "--timeout", "30", "broker2"], env=compose.env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    i = 0
    while stop.poll() is None and i < 2000:
        _produce(producer, topic, [f"during-{i}"], acked, failed)
        producer.poll(0.01)
        i += 1
    out, _ = stop.communicate(timeout=90)
    assert stop.returncode == 0, out
    _produce(producer, topic, [f"after-{i}" for i in range(300)], acked, failed)
    assert producer.flush(120) == 0
    try:
        assert not failed, f"{len(failed)} records not acked, e.g. {failed[:5]}"
        seen = set(_consume_all(bootstrap, topic, partitions, time.monotonic() + 90))
        lost = [v for v in acked if v not in seen]
        assert not lost, f"{len(lost)} acked records lost, e.g. {lost[:5]}"
    except BaseException:
        print(compose.logs(), file=sys.stderr)
        raise
    assert len(acked) >= 601
    assert _messages_in(ports["METRICS1_PORT"], topic) > 0
    # broker2 comes back on its volume and catches up: every partition's ISR is 3 again.
    compose("start", "broker2", timeout=120)
    _wait_full_isr(bootstrap, topic, 3, time.monotonic() + 120)


def _messages_in(metrics_port: int, topic: str) -> float:
    """broker1's kafka_server_brokertopicmetrics_messagesin_total for ``topic`` (the Grafana
    dashboard's first panel), scraped over HTTP from the container."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    wanted = f'kafka_server_brokertopicmetrics_messagesin_total{{topic="{topic}"}} '
    values = [float(line[len(wanted):]) for line in text.splitlines() if line.startswith(wanted)]
    assert values, f"no {wanted.strip()} in broker1's metrics"
    return values[0]


def _wait_full_isr(bootstrap: str, topic: str, replicas: int, deadline: float) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    isrs = None
    while time.monotonic() < deadline:
        try:
            parts = admin.list_topics(topic, timeout=10).topics[topic].partitions
            isrs = {p: sorted(m.isrs) for p, m in parts.items()}
            if parts and all(len(i) == replicas for i in isrs.values()):
                return
        except KafkaException:
            pass
        time.sleep(0.5)
    pytest.fail(f"{topic}: ISR not back to {replicas} replicas: {isrs}")


@pytest.mark.timeout(BUILD_TIMEOUT_S + 300)
def test_single_node(project):
    port = free_port()
    compose = project("docker-compose.single.yml", {"KAFKAPY_PORT": port})
    bootstrap = _bootstrap([port])
    _up_and_produce(compose, bootstrap, "single", 1, 1, {},
                    "single node start (compose up -> first acked produce)")
    acked: list[str] = ["first"]
    failed: list[str] = []
    producer = _producer(bootstrap)
    _produce(producer, "single", [f"v-{i}" for i in range(100)], acked, failed)
    assert producer.flush(60) == 0 and not failed
    assert sorted(_consume_all(bootstrap, "single", 1, time.monotonic() + 60)) == sorted(acked)
    # A command after the image name runs instead of the broker: the image's own tools.
    listed = _run([_docker(), "run", "--rm", "--network", "host", IMAGE, "kafkapy-topics",
                   "--bootstrap-server", bootstrap, "--list"], 120).stdout.split()
    assert "single" in listed
    # The broker runs as the image's non-root user.
    ps = compose("ps", "-q", timeout=60).stdout.split()
    user = _run([_docker(), "inspect", "-f", "{{.Config.User}}", ps[0]], 30).stdout.strip()
    assert user == "kafkapy"
