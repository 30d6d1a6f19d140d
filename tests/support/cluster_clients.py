"""Stock clients against the cluster: create topics, produce, consume, with a known outcome.

Every helper is bootstrapped from ONE broker address, as a user's client is; the client must
find the other brokers (and each partition's leader) from that broker's Metadata answer.
Records are deterministic (``record_values``), produced to an explicit partition (or keyed,
for the Java console producer) so the tests know where each record must land and can read
every partition back exactly.  Every loop is bounded in time.

Clients: confluent-kafka (librdkafka), kafka-python, and the Java client through Kafka 3.9's
own console scripts (``kafka-console-producer.sh`` / ``kafka-console-consumer.sh``, i.e.
kafka-clients 3.9's KafkaProducer/KafkaConsumer).
"""
from __future__ import annotations

import time

from tests.support.cluster import kafka_tool


def record_values(topic: str, partition: int, count: int, tag: str = "") -> list[bytes]:
    return [f"{topic}/{partition}/{tag}{i}".encode() for i in range(count)]


# --------------------------------------------------------------------------- admin

def create_topic(bootstrap: str, name: str, partitions: int = 6, replication: int = 1,
                 assignment: dict[int, list[int]] | None = None,
                 configs: dict[str, str] | None = None, timeout: float = 30.0) -> None:
    """CreateTopics through confluent-kafka's AdminClient (routed to the controller); an
    explicit ``assignment`` through kafka-python's (librdkafka 2.16's binding refuses one)."""
    if assignment is not None:
        from kafka.admin import KafkaAdminClient, NewTopic as KNewTopic
        admin = KafkaAdminClient(bootstrap_servers=bootstrap,
                                 request_timeout_ms=int(timeout * 1000))
        try:
            admin.create_topics([KNewTopic(name, -1, -1, replica_assignments=assignment,
                                           topic_configs=configs or {})],
                                timeout_ms=int(timeout * 1000), raise_errors=True)
        finally:
            admin.close()
        return
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(name, partitions, replication, config=configs or {})
    admin.create_topics([topic], operation_timeout=timeout, request_timeout=timeout)[name].result(
        timeout + 5)


def delete_topic(bootstrap: str, name: str, timeout: float = 30.0) -> None:
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([name], operation_timeout=timeout, request_timeout=timeout)[name].result(
        timeout + 5)


def elect_preferred(bootstrap: str, topics: str | list[str], timeout: float = 15.0) -> None:
    """ElectLeaders (PREFERRED) for every partition of ``topics`` through kafka-python's admin
    client (routed to the controller; ELECTION_NOT_NEEDED is no error).  Not confluent-kafka:
    2.16's ``elect_leaders`` raises TypeError before sending anything."""
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(timeout * 1000))
    try:
        admin.elect_leaders(0, [topics] if isinstance(topics, str) else topics,
                            timeout_ms=int(timeout * 1000))
    finally:
        admin.close()


def leader_and_isr(c, topic: str, partition: int = 0) -> tuple[int, list[int]]:
    """(leader, sorted ISR) from the partition's state znode."""
    state = c.partition_state(topic, partition)
    return state["leader"], sorted(state["isr"])


def offline_partition(c, topic: str) -> tuple[int, int]:
    """A one-partition ``topic`` on [a, b], the two brokers that are not the controller,
    left offline with b, a replica outside the ISR, running: kill b (a leads, ISR [a]),
    kill a (leader -1, ISR [a] kept), start b again (clean election cannot pick it).
    Returns (a, b); a stays down."""
    from tests.support.cluster import FAILOVER_S, wait_for
    controller = c.controller_id()
    a, b = [i for i in sorted(c.nodes) if i != controller]
    create_topic(c.bootstrap(controller), topic, assignment={0: [a, b]})
    c.wait_topic(topic, 1)
    c.kill(b)
    wait_for(lambda: leader_and_isr(c, topic) == (a, [a]), FAILOVER_S,
             lambda: f"{b} out of the ISR: {leader_and_isr(c, topic)}")
    c.kill(a)
    wait_for(lambda: leader_and_isr(c, topic) == (-1, [a]), FAILOVER_S,
             lambda: f"offline: {leader_and_isr(c, topic)}")
    c.restart(b)
    assert leader_and_isr(c, topic) == (-1, [a])   # clean by default: b is not in the ISR
    return a, b


def request(cluster, node: int, api_key: int, version: int, timeout: float = 10.0, **values):
    """One raw request on a connection of its own to broker ``node``: the response."""
    from tests.support.wire import WireClient
    wire = WireClient(cluster.bootstrap(node), timeout=timeout)
    try:
        return wire.request(api_key, version, **values)
    finally:
        wire.close()


def find_coordinator(cluster, via: int, key: str, key_type: int = 0) -> tuple[int, int]:
    """FindCoordinator v3 at broker ``via`` (key_type 0 group, 1 transaction):
    (error code, coordinator node id)."""
    r = request(cluster, via, 10, 3, key=key, key_type=key_type)
    return r.error_code, r.node_id


# --------------------------------------------------------------------------- confluent

def produce_confluent(bootstrap: str, topic: str, values: dict[int, list[bytes]],
                      acks: str = "all", timeout: float = 60.0) -> dict[int, list[int]]:
    """Produce ``values[p]`` to partition ``p``; every record must be acknowledged.
    Returns the acknowledged offsets per partition."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "enable.idempotence": acks == "all",
                         "message.timeout.ms": int(timeout * 1000)})
    offsets: dict[int, list[int]] = {p: [] for p in values}
    errors: list[str] = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            offsets[msg.partition()].append(msg.offset())
    for p, vals in values.items():
        for v in vals:
            producer.produce(topic, v, partition=p, on_delivery=on_delivery)
            producer.poll(0)
    left = producer.flush(timeout)
    assert left == 0 and not errors, f"confluent-kafka produce to {topic}: {left} unacked, {errors[:5]}"
    return {p: sorted(o) for p, o in offsets.items()}


def consume_confluent(bootstrap: str, topic: str, counts: dict[int, int],
                      timeout: float = 60.0, errors: list | None = None) -> dict[int, list[bytes]]:
    """Read ``counts[p]`` records of each partition from offset 0 (assign, no group);
    the errors the consumer reported meanwhile go to ``errors`` when given."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in counts])
    got: dict[int, list[bytes]] = {p: [] for p in counts}
    deadline = time.monotonic() + timeout
    try:
        while any(len(got[p]) < n for p, n in counts.items()) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is not None and errors is not None:
                errors.append(str(msg.error()))
            if msg is None or msg.error() is not None:
                continue
            got[msg.partition()].append(msg.value())
    finally:
        consumer.close()
    return got


def read_all(bootstrap: str, topic: str, partitions: int, expected: int, isolation: str,
             group: str, timeout: float = 60.0) -> dict[int, list[bytes]]:
    """Every record of ``topic`` from offset 0 at ``isolation``: polls until ``expected``
    records came, then 2 s more: past the committed records only markers and aborted
    records remain, and whatever shows up then must be noticed."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + timeout
    try:
        while sum(map(len, got.values())) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got[msg.partition()].append(msg.value())
        end = time.monotonic() + 2
        while time.monotonic() < end:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got[msg.partition()].append(msg.value())
    finally:
        consumer.close()
    return got


def commit_offsets(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """OffsetCommit of ``offsets[p]`` for ``group`` (a consumer that never joins)."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group: str, topic: str, partitions) -> dict[int, int]:
    """OffsetFetch: ``group``'s committed offset of each of ``topic``'s ``partitions``."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        got = consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=30)
        return {tp.partition: tp.offset for tp in got}
    finally:
        consumer.close()


# --------------------------------------------------------------------------- kafka-python

def produce_kafka_python(bootstrap: str, topic: str, values: dict[int, list[bytes]],
                         acks="all", timeout: float = 60.0) -> dict[int, list[int]]:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=acks if acks != "all" else "all",
                             linger_ms=5, request_timeout_ms=int(timeout * 1000), retries=10)
    try:
        futures = [(p, producer.send(topic, v, partition=p)) for p, vals in values.items()
                   for v in vals]
        producer.flush(timeout)
        offsets: dict[int, list[int]] = {p: [] for p in values}
        for p, f in futures:
            offsets[p].append(f.get(timeout).offset)
    finally:
        producer.close(10)
    return {p: sorted(o) for p, o in offsets.items()}


def consume_kafka_python(bootstrap: str, topic: str, counts: dict[int, int],
                         timeout: float = 60.0) -> dict[int, list[bytes]]:
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    tps = [TopicPartition(topic, p) for p in counts]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)
    got: dict[int, list[bytes]] = {p: [] for p in counts}
    deadline = time.monotonic() + timeout
    try:
        while any(len(got[p]) < n for p, n in counts.items()) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                got[tp.partition] += [r.value for r in records]
    finally:
        consumer.close()
    return got


# --------------------------------------------------------------------------- Java

def java_partition(key: bytes, partitions: int) -> int:
    """The Java producer's partition for a keyed record (murmur2, as Kafka's
    BuiltInPartitioner.partitionForKey)."""
    from kafka.partitioner.default import murmur2
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def produce_java(bootstrap: str, topic: str, keyed: list[tuple[str, str]], acks: str = "all",
                 timeout: float = 120.0) -> None:
    """kafka-console-producer.sh (kafka-clients 3.9) with ``key:value`` lines."""
    text = "".join(f"{k}:{v}\n" for k, v in keyed)
    result = kafka_tool("kafka-console-producer.sh", "--bootstrap-server", bootstrap,
                        "--topic", topic, "--producer-property", f"acks={acks}",
                        "--producer-property", "linger.ms=5",
                        "--property", "parse.key=true", "--property", "key.separator=:",
                        stdin=text, timeout=timeout)
    assert result.returncode == 0 and "ERROR" not in result.stderr, (
        f"kafka-console-producer.sh exited {result.returncode}:\n{result.stderr[-4000:]}")


def consume_java(bootstrap: str, topic: str, count: int,
                 timeout: float = 120.0) -> list[tuple[int, int, str, str]]:
    """kafka-console-consumer.sh from the beginning: [(partition, offset, key, value)]."""
    result = kafka_tool("kafka-console-consumer.sh", "--bootstrap-server", bootstrap,
                        "--topic", topic, "--from-beginning", "--max-messages", str(count),
                        "--timeout-ms", "45000",
                        "--property", "print.partition=true", "--property", "print.offset=true",
                        "--property", "print.key=true", "--property", "key.separator=|",
                        timeout=timeout)
    rows = []
    for line in result.stdout.splitlines():
        # Kafka 3.9's DefaultMessageFormatter puts key.separator between every field:
        # "Partition:P|Offset:O|key|value".
        parts = line.split("|", 3)
        if len(parts) != 4 or not parts[0].startswith("Partition:"):
            continue
        rows.append((int(parts[0].split(":", 1)[1]), int(parts[1].split(":", 1)[1]),
                     parts[2], parts[3]))
    assert len(rows) == count, (f"kafka-console-consumer.sh read {len(rows)} of {count} records "
                                f"(exit {result.returncode}):\n{result.stdout[-2000:]}\n"
                                f"{result.stderr[-4000:]}")
    return rows


# --------------------------------------------------------------------------- audits

def audit_acked(acked: dict[str, tuple[int, int]], seen) -> tuple[list, list, dict]:
    """Where each acknowledged value of Kafka's verifiable producer (numbers as strings)
    ended up.  ``acked``: {value: (partition, offset)} as acknowledged; ``seen``:
    (value, partition, offset) as read back (a place read twice counts once).  Returns
    (lost: acknowledged numbers never seen, moved: (value, acknowledged place, places
    seen) where those differ, where: {value: sorted distinct places})."""
    places: dict[str, set[tuple[int, int]]] = {}
    for value, partition, offset in seen:
        places.setdefault(value, set()).add((partition, offset))
    where = {v: sorted(ps) for v, ps in places.items()}
    lost = sorted(int(v) for v in acked if v not in where)
    moved = sorted((v, pos, where[v]) for v, pos in acked.items()
                   if v in where and where[v] != [pos])
    return lost, moved, where


# --------------------------------------------------------------------------- CLI tools

def describe_topic(bootstrap: str, topic: str) -> dict[int, dict]:
    """``kafka-topics.sh --describe``: {partition: {"Leader": int, "Replicas": [..],
    "Isr": [..]}} as the tool prints them (replica order kept)."""
    result = kafka_tool("kafka-topics.sh", "--bootstrap-server", bootstrap, "--describe",
                        "--topic", topic)
    assert result.returncode == 0, result.stdout + result.stderr
    rows: dict[int, dict] = {}
    for line in result.stdout.splitlines():
        fields = dict(f.split(": ", 1) for f in line.strip().split("\t") if ": " in f)
        if "Partition" not in fields:
            continue
        rows[int(fields["Partition"])] = {
            "Leader": int(fields["Leader"]),
            "Replicas": [int(x) for x in fields["Replicas"].split(",") if x],
            "Isr": [int(x) for x in fields["Isr"].split(",") if x]}
    return rows


def kafkapy_tool(script: str, *args: str, timeout: float = 120.0):
    """Run one of kafkapy's console scripts (``.venv/bin/<script>``), like ``kafka_tool``."""
    import subprocess
    import sys
    from pathlib import Path
    path = Path(sys.executable).parent / script
    return subprocess.run([str(path), *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def read_partition(bootstrap: str, topic: str, timeout: float = 120.0,
                   until: int | None = None) -> list[tuple[int, bytes]]:
    """Every record of partition 0, (offset, value), from offset 0 to the high watermark
    (or to ``until``, exclusive: a new leader's high watermark may still be catching up)."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-audit",
                         "enable.auto.commit": False, "enable.partition.eof": False,
                         "fetch.max.bytes": 4 << 20})
    try:
        if until is None:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        else:
            high = until
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + timeout
        while (not got or got[-1][0] < high - 1) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                if msg.error() is None:
                    got.append((msg.offset(), msg.value()))
        assert not got or got[-1][0] >= high - 1, f"read up to {got[-1][0]} of {high}"
        return [r for r in got if r[0] < high]
    finally:
        consumer.close()
