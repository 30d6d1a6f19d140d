"""Fixtures of the fault tests: the session's iptables chain (``net``) and a ZooKeeper
server of the fault tests' own (``faults_zookeeper``), run under ``net.gid("zk")`` so that
brokers can be cut from it (the other tests' shared ZooKeeper runs under the test's group
and cannot be)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.faults.cluster import ZK
from tests.support.faults.net import Net, iptables_available
from tests.support.zookeeper_server import (ZOOKEEPER_SKIP_REASON, ZooKeeperServer,
                                            zookeeper_classpath)


@pytest.fixture(scope="session")
def net():
    """This session's iptables chain; removed at the end however the session ends."""
    if os.geteuid() != 0:
        pytest.skip("iptables rules need root")
    assert iptables_available(), "no iptables binary (scripts/install_test_deps.sh installs it)"
    with Net() as n:
        yield n


@pytest.fixture(scope="session")
def faults_zookeeper(net):
    if zookeeper_classpath() is None:
        pytest.skip(ZOOKEEPER_SKIP_REASON)
    server = ZooKeeperServer(Path(tempfile.mkdtemp(prefix="kafkapy-faults-zk-")),
                             gid=net.gid(ZK)).start()
    yield server
    server.stop()
    shutil.rmtree(server.base_dir, ignore_errors=True)
