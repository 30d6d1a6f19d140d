"""Kafka's own reading of message bytes: ``decoded([(name, version, bytes)])`` runs
``WireOracle.java`` (beside this module) against the Kafka 4.3 client jar, which decodes
each body with Kafka's generated ``<name>Data`` class and prints it as its
``<name>DataJsonConverter`` writes it (camelCase field names, topic ids in Kafka's
base64 form: ``kafka_uuid``).  A body Kafka cannot read, or reads with bytes left over,
fails the call.

Needs a JDK and the kafka-clients 4.3.0 jar (``scripts/fetch_java_clients.sh``) plus the
Jackson jars of Kafka 3.9's distribution (``$KAFKA_HOME/libs``, for the JSON converters);
without them the test is skipped.
"""
from __future__ import annotations

import atexit
import base64
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.support.java_clients import java_clients_dir
from tests.support.kafka_jvm import CLIENT_JVM_FLAGS, JAVAC

ROOT = Path(__file__).resolve().parents[2]
KAFKA_HOME = Path(os.environ.get("KAFKA_HOME", ROOT.parent / "shared" / "kafka_2.13-3.9.0"))
ORACLE = Path(__file__).with_name("WireOracle.java")
CLIENT_VERSION = "4.3.0"


_compiled: list[str] = []      # this process's compiled oracle: [classpath]


def _classpath() -> str:
    """The oracle compiled once per process (into a temporary folder of its own)."""
    if _compiled:
        return _compiled[0]
    jars = java_clients_dir() / CLIENT_VERSION
    jackson = sorted((KAFKA_HOME / "libs").glob("jackson-*.jar"))
    if shutil.which("javac") is None or not jackson \
            or not (jars / f"kafka-clients-{CLIENT_VERSION}.jar").is_file():
        pytest.skip("needs a JDK, kafka-clients 4.3.0 and Kafka 3.9's Jackson jars")
    libs = os.pathsep.join([str(jars / "*"), *map(str, jackson)])
    classes = tempfile.mkdtemp(prefix="wire-oracle-")
    atexit.register(shutil.rmtree, classes, True)
    done = subprocess.run([*JAVAC, "-Xlint:none", "-d", classes, "-cp", libs, str(ORACLE)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    _compiled.append(os.pathsep.join([classes, libs]))
    return _compiled[0]


def decoded(messages: list[tuple[str, int, bytes]]) -> list[dict]:
    """Each (message name, e.g. ``ConsumerGroupHeartbeatResponse``, version, body bytes)
    as Kafka reads it."""
    lines = "".join(f"{name} {version} {body.hex()}\n" for name, version, body in messages)
    done = subprocess.run(["java", *CLIENT_JVM_FLAGS, "-cp", _classpath(), "WireOracle"],
                          input=lines, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(out) == len(messages), done.stderr[-3000:]
    return out


def kafka_uuid(value: uuid.UUID) -> str:
    """A Uuid as Kafka prints it: URL-safe base64 of its 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
