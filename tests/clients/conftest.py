"""Fixtures for the stock-client tests: the broker under test and the Java client jars.

``broker`` (module): as in tests/conftest.py, a kafkapy process per module;
but with ``KAFKAPY_E2E_BOOTSTRAP=host:port`` set, the client tests run against
that already-running broker instead (for instance another Kafka-compatible
broker, to check the tests themselves). Such a broker has no known log
directory (``log_dir`` is None), so the on-disk codec checks are skipped, and
topic names get a per-run suffix so reruns do not collide.

``java_clients`` (session): runs ``scripts/fetch_java_clients.sh`` (idempotent;
jars land in ``.cache/java-clients/<version>/``) and compiles
``tests/java/ClientE2E.java`` once per kafka-clients version into the pytest
temp dir. Skips only when ``java``/``javac`` are not installed; a failing fetch
or compile is a test error.

``share_broker`` and ``share_java`` (session): the share-group client tests' one broker and
their Java program (tests/support/share_clients.py).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.java_clients import (JAVA_CLIENT_VERSIONS, JAVA_SOURCE, JavaClient,
                                       client_jars, compiled)
from tests.support.share_clients import share_broker, share_java  # noqa: F401  (fixtures)


@dataclass
class ExternalBroker:
    bootstrap: str
    log_dir: None = None


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    external = os.environ.get("KAFKAPY_E2E_BOOTSTRAP")
    if external:
        yield ExternalBroker(external)
        return
    with BrokerProcess(tmp_path_factory.mktemp("broker") / "logs").start() as b:
        yield b


@pytest.fixture(scope="session")
def java_clients(tmp_path_factory) -> dict[str, JavaClient]:
    client_jars(JAVA_CLIENT_VERSIONS)
    build = tmp_path_factory.mktemp("java-build")
    sources = list(JAVA_SOURCE.parent.glob("*.java"))   # not kafka4/: 4.x-only programs
    return {version: compiled(version, sources, build / version)
            for version in JAVA_CLIENT_VERSIONS}

