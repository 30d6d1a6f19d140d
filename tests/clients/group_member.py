"""A consumer-group member run as its own process by test_consumer_groups.py.

    python -m tests.clients.group_member CLIENT BOOTSTRAP TOPIC GROUP [INSTANCE_ID]

CLIENT is kafka-python, confluent-kafka or aiokafka.  It subscribes to TOPIC in
GROUP (static when INSTANCE_ID is given), commits synchronously after every
batch, and prints one line per event on stdout (flushed):
    ASSIGN <sorted partitions, comma separated>
    REC <partition> <offset> <value>
It runs until killed (SIGKILL: no LeaveGroup) or sent SIGTERM (closes cleanly).
"""
from __future__ import annotations

import asyncio
import signal
import sys

SESSION_MS = 6000
HEARTBEAT_MS = 500
_stop = False


def _on_term(*_):
    global _stop
    _stop = True


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class _Tracker:
    def __init__(self) -> None:
        self.last: list[int] | None = None

    def update(self, partitions) -> None:
        current = sorted(partitions)
        if current != self.last:
            self.last = current
            _say("ASSIGN " + ",".join(map(str, current)))


def run_kafka_python(bootstrap, topic, group, instance_id):
    from kafka import KafkaConsumer
    from kafkapy.cli._common import kafka_python_poll
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                      group_instance_id=instance_id, auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=SESSION_MS,
                      heartbeat_interval_ms=HEARTBEAT_MS)
    t = _Tracker()
    while not _stop:
        batch = kafka_python_poll(c, 200, join_wait_ms=5000)
        t.update(tp.partition for tp in c.assignment())
        for tp, records in batch.items():
            for r in records:
                _say(f"REC {r.partition} {r.offset} {r.value.decode()}")
        if batch:
            c.commit()
    c.close()


def run_confluent(bootstrap, topic, group, instance_id):
    from confluent_kafka import Consumer
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS}
    if instance_id:
        conf["group.instance.id"] = instance_id
    c = Consumer(conf)
    c.subscribe([topic])
    t = _Tracker()
    while not _stop:
        msg = c.poll(0.2)
        t.update(tp.partition for tp in c.assignment())
        if msg is None or msg.error():
            continue
        _say(f"REC {msg.partition()} {msg.offset()} {msg.value().decode()}")
        c.commit(message=msg, asynchronous=False)
    c.close()


async def _aiokafka(bootstrap, topic, group, instance_id):
    from aiokafka import AIOKafkaConsumer
    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                         group_instance_id=instance_id, auto_offset_reset="earliest",
                         enable_auto_commit=False, session_timeout_ms=SESSION_MS,
                         heartbeat_interval_ms=HEARTBEAT_MS)
    await c.start()
    t = _Tracker()
    while not _stop:
        batch = await c.getmany(timeout_ms=200)
        t.update(tp.partition for tp in c.assignment())
        for tp, records in batch.items():
            for r in records:
                _say(f"REC {r.partition} {r.offset} {r.value.decode()}")
        if batch:
            await c.commit()
    await c.stop()


def main(argv: list[str]) -> None:
    client, bootstrap, topic, group = argv[:4]
    instance_id = argv[4] if len(argv) > 4 else None
    signal.signal(signal.SIGTERM, _on_term)
    if client == "kafka-python":
        run_kafka_python(bootstrap, topic, group, instance_id)
    elif client == "confluent-kafka":
        run_confluent(bootstrap, topic, group, instance_id)
    elif client == "aiokafka":
        asyncio.run(_aiokafka(bootstrap, topic, group, instance_id))
    else:
        raise SystemExit(f"unknown client {client}")


if __name__ == "__main__":
    main(sys.argv[1:])
