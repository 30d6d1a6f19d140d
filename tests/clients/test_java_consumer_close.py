"""A stock Java consumer's close leaves the broker's log clean.

On close the Java consumer sends a Fetch naming no partitions (max_wait_ms > 0) to end its
fetch session; the broker answered that with a traceback and a dropped connection once.
Runs tests/java/ConsumerClose.java against a broker of its own, so its output holds only
this client's traffic.
"""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.support.broker_process import BrokerProcess

pytestmark = [pytest.mark.java, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("close") / "logs").start() as b:
        yield b


@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_consumer_close_logs_no_error(own_broker, java_clients, version):
    client = java_clients[version]
    proc = subprocess.run(client.command("ConsumerClose", own_broker.bootstrap, f"close-{version}"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"ok": True, "records": 5}
    output = own_broker.output()
    assert "Traceback" not in output and "[error" not in output.lower(), output
