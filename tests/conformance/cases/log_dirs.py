"""AlterReplicaLogDirs (34): moving replicas between the log dirs of one broker.

Both brokers have one log dir each (``<base>/logs``, each its own path), so the cases
compare the answers that need no second dir: the dir a partition already lives in
(NONE, nothing moves), a dir that is not configured (LOG_DIR_NOT_FOUND), partitions
that do not exist (UNKNOWN_TOPIC_OR_PARTITION), a topic name too long for a ``-future``
dir (INVALID_TOPIC_EXCEPTION, checked before anything else), a partition named under
two dirs (the last one wins), and an empty request.  The broker's own dir is asked with
DescribeLogDirs in the setup, so the request means the same thing on both sides.
Moves between two dirs are compared against Kafka 3.9 in
tests/integration/test_alter_replica_log_dirs.py.
"""
from __future__ import annotations

from tests.conformance.cases import Side, for_api
from tests.conformance.cases.common import case
from tests.conformance.state import MISSING, MULTI, PLAIN

NOT_A_LOG_DIR = "/nonexistent/conformance-log-dir"
LONG_TOPIC = "conf-arld-" + "l" * 210     # 220 chars: a valid topic, too long once "-future"


def _own_dir(side: Side) -> None:
    response = side.call(35, 1, {"topics": None})
    side.vars["dir"] = response.results[0].log_dir


def _request(*entries):
    """entries: (dir or None for the broker's own, [(topic, [partitions])])."""
    def build(side: Side) -> dict:
        return {"dirs": [{"path": side.vars["dir"] if d is None else d,
                          "topics": [{"name": t, "partitions": ps} for t, ps in topics]}
                         for d, topics in entries]}
    return build


@for_api(34)
def alter_replica_log_dirs(v: int):
    yield case("same-dir", _request((None, [(PLAIN, [0])])), setup=_own_dir)
    yield case("multi-same-dir", _request((None, [(MULTI, [0, 1, 2])])), setup=_own_dir)
    yield case("unknown-dir", _request((NOT_A_LOG_DIR, [(PLAIN, [0])])), setup=_own_dir)
    yield case("unknown-topic", _request((None, [(MISSING, [0])])), setup=_own_dir)
    yield case("unknown-partition", _request((None, [(PLAIN, [9])])), setup=_own_dir)
    yield case("unknown-dir-unknown-topic", _request((NOT_A_LOG_DIR, [(MISSING, [0])])),
               setup=_own_dir)
    yield case("topic-too-long", _request((None, [(LONG_TOPIC, [0])])), setup=_own_dir)
    yield case("last-dir-wins", _request((NOT_A_LOG_DIR, [(PLAIN, [0])]),
                                         (None, [(PLAIN, [0])])), setup=_own_dir)
    yield case("mixed", _request((None, [(MULTI, [0, 7]), (MISSING, [1])]),
                                 (NOT_A_LOG_DIR, [(PLAIN, [0])])), setup=_own_dir)
    yield case("no-dirs", {"dirs": []})
    yield case("dir-without-topics", _request((None, [])), setup=_own_dir)
