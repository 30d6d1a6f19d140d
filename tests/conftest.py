"""Shared fixtures: a real broker process per test module or per test."""
from __future__ import annotations

import pytest

from tests.broker_process import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A broker shared by the tests of one module."""
    b = BrokerProcess(tmp_path_factory.mktemp("broker") / "logs").start()
    yield b
    b.stop()


@pytest.fixture
def fresh_broker(tmp_path):
    """A broker of this test's own, for restart and crash tests."""
    b = BrokerProcess(tmp_path / "logs").start()
    yield b
    b.kill()
