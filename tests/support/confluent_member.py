"""A confluent-kafka consumer-group member speaking the consumer group protocol, run as a process.

    python -m tests.support.confluent_member BOOTSTRAP GROUP TOPIC [key=value ...]

It subscribes to TOPIC in GROUP with ``group.protocol=consumer`` (``key=value`` settings are
added to, or replace, its configuration) and prints the lines of
tests/java/ConsumerProtocol.java (read by tests/support/group_members.py):
    ASSIGNED <ms> <topic:partition,...>   at the start of on_assign
    REVOKED <ms> <topic:partition,...>    at the end of on_revoke
    LOST <ms> <topic:partition,...>       at the end of on_lost
    CLOSED <ms>                           once the consumer closed
<ms> is the wall clock in milliseconds.  The consumer group protocol's rebalances are
incremental: on_assign gets the added partitions and on_revoke the removed ones, and the client
assigns or unassigns them when the callback returns.  It runs until a line "stop" on stdin or
stdin's end (then closes the consumer, leaving the group), or SIGKILL.
"""
from __future__ import annotations

import sys
import threading
import time


def _say(kind: str, rest: str = "") -> None:
    sys.stdout.write(f"{kind} {int(time.time() * 1000)}{' ' + rest if rest else ''}\n")
    sys.stdout.flush()


def _names(partitions) -> str:
    return ",".join(f"{t}:{p}" for t, p in sorted((tp.topic, tp.partition) for tp in partitions))


def _watch_stdin(stop: threading.Event) -> None:
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    stop.set()


def main(argv: list[str]) -> int:
    # confluent-kafka is an optional dependency of the tests
    from confluent_kafka import Consumer
    bootstrap, group, topic, *settings = argv
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    conf.update(setting.split("=", 1) for setting in settings)
    consumer = Consumer(conf)
    consumer.subscribe([topic],
                       on_assign=lambda _c, ps: _say("ASSIGNED", _names(ps)),
                       on_revoke=lambda _c, ps: _say("REVOKED", _names(ps)),
                       on_lost=lambda _c, ps: _say("LOST", _names(ps)))
    stop = threading.Event()
    threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    while not stop.is_set():
        consumer.poll(0.1)
    consumer.close()
    _say("CLOSED")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
