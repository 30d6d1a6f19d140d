"""kafkapy._kafka_package: the broker loads kafka-python's codecs without its clients, a tool
only the client it uses, and the package is whole again the moment anything asks it for a
name.

Each case runs in a fresh interpreter: the test process has imported kafka-python already.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

_CLIENTS = ("kafka.admin", "kafka.consumer", "kafka.producer")


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_broker_imports_no_client():
    out = _run(f"""
        import sys
        import kafkapy.cli.server_start, kafkapy.server
        print(sorted(m for m in {_CLIENTS!r} if m in sys.modules))
        print('kafka.protocol' in sys.modules, 'kafka.errors' in sys.modules)
        """)
    assert out.splitlines() == ["[]", "True True"]


def test_a_tool_imports_only_the_client_it_uses():
    out = _run(f"""
        import sys
        import kafkapy.cli.topics, kafkapy.cli.consumer_groups, kafkapy.cli.reassign_partitions
        print(sorted(m for m in {_CLIENTS!r} if m in sys.modules))
        """)
    assert out == "['kafka.admin']"


def test_a_name_asked_of_the_package_loads_it_whole():
    out = _run("""
        import importlib.metadata
        from kafkapy._kafka_package import defer_client_imports
        defer_client_imports()
        import kafka.protocol
        import kafka
        assert kafka.__version__ == importlib.metadata.version("kafka-python")
        from kafka import KafkaProducer, TopicPartition
        from kafka.producer import KafkaProducer as same
        assert KafkaProducer is same
        try:
            kafka.no_such_name
        except AttributeError as err:
            print(err)
        """)
    assert out == "module 'kafka' has no attribute 'no_such_name'"


def test_nothing_changes_when_kafka_is_imported_first():
    out = _run("""
        import kafka, sys
        before = sys.modules["kafka"]
        from kafkapy._kafka_package import defer_client_imports
        defer_client_imports()
        print(sys.modules["kafka"] is before, "kafka.admin" in sys.modules)
        """)
    assert out == "True True"
