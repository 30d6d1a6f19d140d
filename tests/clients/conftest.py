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
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.java_clients import (FETCH_SCRIPT, JAVA_CLIENT_VERSIONS, JAVA_SOURCE, ROOT,
                                       JavaClient, java_clients_dir)


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
    b = BrokerProcess(tmp_path_factory.mktemp("broker") / "logs").start()
    yield b
    b.stop()


@pytest.fixture(scope="session")
def java_clients(tmp_path_factory) -> dict[str, JavaClient]:
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"JDK not installed ({', '.join(missing)} not on PATH)")
    dest = java_clients_dir()
    if not all((dest / v / ".complete").is_file() for v in JAVA_CLIENT_VERSIONS):
        env = dict(os.environ)
        env.setdefault("PIP", str(ROOT / ".venv" / "bin" / "pip"))
        proc = subprocess.run(["bash", str(FETCH_SCRIPT), str(dest)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (
            f"{FETCH_SCRIPT.name} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    build = tmp_path_factory.mktemp("java-build")
    clients = {}
    for version in JAVA_CLIENT_VERSIONS:
        jars = dest / version
        assert list(jars.glob(f"kafka-clients-{version}.jar")), f"no kafka-clients jar in {jars}"
        classes = build / version
        classes.mkdir()
        proc = subprocess.run(["javac", "-Xlint:none", "-d", str(classes), "-cp", str(jars / "*"),
                               *sorted(str(p) for p in JAVA_SOURCE.parent.glob("*.java"))],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"javac against kafka-clients {version} failed:\n{proc.stdout}\n{proc.stderr}"
        clients[version] = JavaClient(version, jars, classes)
    return clients

