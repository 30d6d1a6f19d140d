"""What ``kafkapy-producer-perf-test`` and ``kafkapy-consumer-perf-test`` share.

- The client: confluent-kafka (librdkafka, C) when it is installed, since a perf test must
  push real load and kafka-python's pure-Python batching caps out far below a broker; else
  kafka-python, which is always there. ``backend()`` says which, and ``announce()`` tells
  the user with one line on stderr ("using confluent-kafka 2.16.1 (librdkafka 2.16.0)"), so
  stdout keeps Kafka's report format.
- Client properties: Kafka's Java client names from a ``.properties`` file and ``key=value``
  pairs (later ones win). librdkafka shares most names; one it does not know (a Java-only
  setting such as ``buffer.memory`` or ``key.serializer``) is dropped with Kafka's warning
  "The configuration 'x' was supplied but isn't a known config." (``confluent_client``).
- ``print_metrics``: Kafka's ToolsUtils.printMetrics table (``group:name:{tags} : value``,
  sorted by name, doubles with three decimals). librdkafka's statistics and kafka-python's
  ``metrics()`` are what is printed; the names are theirs, not the Java client's.
"""
from __future__ import annotations

import json
import logging
import re
import sys
import time

log = logging.getLogger("kafkapy.cli")
_UNKNOWN_PROPERTY = re.compile(r'No such configuration property: "([^"]+)"')
# Java-only names librdkafka would reject or misread; never passed on.
_JAVA_ONLY = {"key.serializer", "value.serializer", "key.deserializer", "value.deserializer"}
# Java names librdkafka spells differently.
_RENAMED = {"receive.buffer.bytes": "socket.receive.buffer.bytes",
            "send.buffer.bytes": "socket.send.buffer.bytes"}


def backend() -> str:
    try:
        import confluent_kafka
    except ImportError:
        return "kafka-python"
    del confluent_kafka
    return "confluent-kafka"


def announce() -> str:
    """Prints which client library (and version) this run uses, one line on stderr."""
    if backend() == "confluent-kafka":
        import confluent_kafka
        line = (f"using confluent-kafka {confluent_kafka.__version__} "
                f"(librdkafka {confluent_kafka.libversion()[0]})")
    else:
        import kafka
        line = f"using kafka-python {kafka.__version__} (confluent-kafka is not installed)"
    print(line, file=sys.stderr, flush=True)
    return line


def client_errors() -> tuple[type[BaseException], ...]:
    """The client library's own failure types (kafka-python's are handled by ``common.run``)."""
    try:
        from confluent_kafka import KafkaException
    except ImportError:
        return ()
    return (KafkaException,)


def failure_text(err: BaseException) -> str:
    """librdkafka's error text (its KafkaError's ``str()``), else the exception's."""
    first = err.args[0] if err.args else None
    return first.str() if hasattr(first, "str") else str(err)


def warn_unknown(name: str) -> None:
    log.warning("The configuration '%s' was supplied but isn't a known config.", name)


def confluent_client(factory, props: dict[str, str]):
    """``factory(config)`` with the properties librdkafka knows; unknown ones warned about
    and dropped (one at a time: librdkafka names the first it rejects)."""
    from confluent_kafka import KafkaException

    config = {_RENAMED.get(k, k): v for k, v in props.items() if k not in _JAVA_ONLY}
    for _attempt in range(len(config) + 1):
        try:
            return factory(config)
        except KafkaException as err:
            found = _UNKNOWN_PROPERTY.search(str(err))
            if not found or found.group(1) not in config:
                raise
            warn_unknown(found.group(1))
            del config[found.group(1)]
    return factory(config)


class StatsSink:
    """The latest librdkafka statistics document (``stats_cb``)."""

    def __init__(self) -> None:
        self.latest: dict | None = None

    def __call__(self, text: str) -> None:
        self.latest = json.loads(text)

    def wait(self, poll, timeout_s: float = 3.0) -> dict:
        """A statistics document emitted after now (``poll`` serves the callback)."""
        self.latest = None
        deadline = time.monotonic() + timeout_s
        while self.latest is None and time.monotonic() < deadline:
            poll(0.1)
        return self.latest or {}


def librdkafka_metrics(stats: dict, group: str, client_id: str) -> dict[str, object]:
    """librdkafka's top-level numeric statistics as ``group:name:{client-id=..}`` entries."""
    tags = f"{{client-id={client_id}}}"
    return {f"{group}:{name}:{tags}": float(value) for name, value in stats.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)}


def kafka_python_metrics(metrics: dict, client_id: str) -> dict[str, object]:
    """kafka-python's ``metrics()`` ({group: {name: value}}) as Kafka's merged names."""
    tags = f"{{client-id={client_id}}}"
    return {f"{group}:{name}:{tags}": value for group, values in metrics.items()
            for name, value in values.items()}


def print_metrics(metrics: dict[str, object]) -> None:
    """Kafka's ToolsUtils.printMetrics."""
    if not metrics:
        return
    width = max(len(name) for name in metrics)
    print(f"\n{'Metric Name':<{width}}   Value")
    for name in sorted(metrics):
        value = metrics[name]
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"{name:<{width}} : {shown}")
