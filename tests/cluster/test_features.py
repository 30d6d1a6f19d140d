"""Finalized features on a real three-broker kafkapy cluster: Kafka 3.9's
``kafka-features.sh`` and kafkapy's ``kafkapy-features`` against it.

- every broker registers its supported features in ``/brokers/ids/<id>``;
- ``describe`` lists transaction.version 0-2 (finalized 0), group.version and
  share.version 0-1 (finalized 1) with the ``/feature`` epoch;
- ``upgrade --dry-run`` validates without writing (``/feature`` keeps its version);
  ``upgrade --feature transaction.version=2`` writes ``/feature`` and every broker's
  ApiVersions then shows transaction.version finalized at 2 under the new epoch;
  ``downgrade`` to 1 and ``disable`` follow; ``disable`` of group.version is refused with
  INVALID_UPDATE_VERSION's message naming the broker config, and nothing is written;
- UpdateFeatures sent to a broker that is not the controller answers NOT_CONTROLLER;
- Kafka 4.3's Admin (``FeaturesAdmin.java``): describeFeatures, updateFeatures with
  validateOnly, an upgrade, group.version's refusal (InvalidUpdateVersionException) and a
  disable, as kafka-features.sh sees them.
One cluster for the module; each test ends with transaction.version disabled.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli_tools import tool
from tests.support.cluster import running_cluster, wait_for
from tests.support.cluster import kafka_tool
from tests.support.java_clients import client_jars
from kafkapy.protocol.messages import REQUESTS
from tests.support.wire import WireClient

FEATURE_TIMEOUT = 20
ADMIN_PROGRAM = Path(__file__).with_name("FeaturesAdmin.java")
_Key = REQUESTS[57].FeatureUpdateKey


@pytest.fixture(scope="module")
def features_cluster(tmp_path_factory, zookeeper_server):
    yield from running_cluster(tmp_path_factory.mktemp("features"), zookeeper_server)


def _feature_znode(c) -> tuple[dict, int]:
    data, stat = c.zk.get("/feature")
    return json.loads(data), stat.version


def _api_versions(c, node_id: int):
    wire = WireClient(c.bootstrap(node_id), timeout=10)
    try:
        return wire.request(18, 4, client_software_name="features-test",
                            client_software_version="1")
    finally:
        wire.close()


def _finalized_everywhere(c, wanted: dict[str, int], epoch: int) -> bool:
    for node in c.running_ids():
        r = _api_versions(c, node)
        levels = {f.name: f.max_version_level for f in r.finalized_features}
        if (levels, r.finalized_features_epoch) != (wanted, epoch):
            return False
    return True


def _describe_lines(epoch: int, transaction_level: int) -> list[str]:
    return [f"Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
            f"FinalizedVersionLevel: 1\tEpoch: {epoch}",
            f"Feature: share.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
            f"FinalizedVersionLevel: 1\tEpoch: {epoch}",
            f"Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\t"
            f"FinalizedVersionLevel: {transaction_level}\tEpoch: {epoch}"]


def _run(runner, c, *args):
    """Kafka's script (``kafka``) or kafkapy's tool (``kafkapy``) with ``args``."""
    bootstrap = ("--bootstrap-server", c.bootstrap(c.running_ids()[0]))
    if runner == "kafka":
        return kafka_tool("kafka-features.sh", *bootstrap, *args)
    return tool("features", *bootstrap, *args)


def test_registrations_carry_supported_features(features_cluster):
    c = features_cluster
    for node in c.running_ids():
        assert c.znode_json(f"/brokers/ids/{node}")["features"] == {
            "group.version": {"min_version": 0, "max_version": 1},
            "share.version": {"min_version": 0, "max_version": 1},
            "transaction.version": {"min_version": 0, "max_version": 2}}


def test_update_features_elsewhere_than_the_controller_is_refused(features_cluster):
    c = features_cluster
    other = next(n for n in c.running_ids() if n != c.controller_id())
    wire = WireClient(c.bootstrap(other), timeout=10)
    try:
        r = wire.request(57, 1, timeout_ms=5000, validate_only=False, feature_updates=[
            _Key(feature="transaction.version", max_version_level=2, upgrade_type=1)])
    finally:
        wire.close()
    assert (r.error_code, r.error_message, r.results) == (
        41, "This is not the correct controller for this cluster.", [])


@pytest.mark.parametrize("runner", ["kafka", "kafkapy"])
def test_describe_upgrade_downgrade_disable(features_cluster, runner):
    c = features_cluster
    node, epoch = _feature_znode(c)
    assert node["features"] == {}

    done = _run(runner, c, "describe")
    assert (done.returncode, done.stdout.splitlines()) == (0, _describe_lines(epoch, 0)), \
        done.stderr

    done = _run(runner, c, "upgrade", "--feature", "transaction.version=2", "--dry-run")
    assert (done.returncode, done.stdout) == (0, "transaction.version can be upgraded to 2.\n")
    assert _feature_znode(c) == (node, epoch)               # validated, not written

    done = _run(runner, c, "upgrade", "--feature", "transaction.version=2")
    assert (done.returncode, done.stdout) == (0, "transaction.version was upgraded to 2.\n")
    node, new_epoch = _feature_znode(c)
    assert node["features"] == {"transaction.version": {"max_version_level": 2}}
    assert new_epoch == epoch + 1
    wait_for(lambda: _finalized_everywhere(
        c, {"group.version": 1, "share.version": 1, "transaction.version": 2}, new_epoch),
        FEATURE_TIMEOUT, "every broker showing transaction.version 2")
    done = _run(runner, c, "describe")
    assert done.stdout.splitlines() == _describe_lines(new_epoch, 2)

    # an upgrade to the level it has, and a downgrade without the downgrade flag
    done = _run(runner, c, "upgrade", "--feature", "transaction.version=2")
    assert done.returncode == 1
    assert done.stdout == ("Could not upgrade transaction.version to 2. Can not upgrade a "
                           "finalized feature from existing versionLevel:2 to the same "
                           "value.\n")
    assert "1 out of 1 operation(s) failed." in done.stderr

    done = _run(runner, c, "downgrade", "--feature", "transaction.version=1")
    assert (done.returncode, done.stdout) == (0, "transaction.version was downgraded to 1.\n")
    assert _feature_znode(c) == ({**node, "features": {
        "transaction.version": {"max_version_level": 1}}}, epoch + 2)

    done = _run(runner, c, "disable", "--feature", "group.version", "--feature",
                "transaction.version")
    assert done.returncode == 1
    assert done.stdout == (
        "Could not disable group.version. group.version follows the broker config "
        "group.coordinator.rebalance.protocols: remove consumer from it to switch the "
        "consumer group protocol off.\n"
        "transaction.version was disabled.\n")
    assert "1 out of 2 operation(s) failed." in done.stderr
    node, final_epoch = _feature_znode(c)
    assert (node["features"], final_epoch) == ({}, epoch + 3)   # no level 0 written
    wait_for(lambda: _finalized_everywhere(
        c, {"group.version": 1, "share.version": 1}, final_epoch),
        FEATURE_TIMEOUT, "every broker showing transaction.version disabled")


def test_kafka_4_3_admin(features_cluster):
    c = features_cluster
    jars = client_jars(("4.3.0",)) / "4.3.0"
    done = subprocess.run([shutil.which("java") or "java", "-cp", str(jars / "*"),
                           str(ADMIN_PROGRAM), c.bootstrap(c.running_ids()[0])],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    _, epoch = _feature_znode(c)
    supported = "group.version=0-1:{} share.version=0-1:{} transaction.version=0-2:{}"
    assert done.stdout.splitlines() == [
        f"describe epoch={epoch - 2} " + supported.format(1, 1, 0),
        "update transaction.version=2 ok",
        "update transaction.version=2 ok",
        f"describe epoch={epoch - 1} " + supported.format(1, 1, 2),
        "update group.version=0 InvalidUpdateVersionException: group.version follows the "
        "broker config group.coordinator.rebalance.protocols: remove consumer from it to "
        "switch the consumer group protocol off.",
        "update transaction.version=0 ok",
        f"describe epoch={epoch} " + supported.format(1, 1, 0)]
