"""Fixtures of the cluster tests: ``shared_cluster`` (module), ``cluster`` (per test),
``unique`` and the session's ``zookeeper_server``.  The cluster itself, its nodes and the
helpers the tests import live in ``tests/support/cluster.py``."""
from tests.support.cluster import cluster, shared_cluster, unique  # noqa: F401 (fixtures)
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401 (fixture)
