"""Topic and config administration: CreateTopics (19), DeleteTopics (20), DescribeConfigs
(32), AlterConfigs (33), DescribeLogDirs (35), CreatePartitions (37), ElectLeaders (43),
IncrementalAlterConfigs (44), DescribeCluster (60), ACLs (29-31)."""
from __future__ import annotations

from tests.conformance.cases import Side, for_api
from tests.conformance.cases.common import UNKNOWN_TOPIC_ID, case
from tests.conformance.state import MISSING, MULTI, PLAIN, refresh_topic_ids

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


def created(name: str, partitions: int = 1):
    """Setup: a topic of the case's own, its id known to the side."""
    def setup(side: Side) -> None:
        side.call(19, 5, {"timeout_ms": 30000, "topics": [
            {"name": name, "num_partitions": partitions, "replication_factor": 1,
             "assignments": [], "configs": []}]})
        side.call(3, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False},
                  retry_codes=(1,), code=lambda r: int(any(
                      p.leader_id < 0 for t in r.topics for p in t.partitions)
                      or r.topics[0].error_code != 0))
        refresh_topic_ids(side)
    return setup


def _ct(*topics, validate_only=False):
    return {"timeout_ms": 30000, "validate_only": validate_only, "topics": list(topics)}


def _topic(name, partitions=1, rf=1, configs=None, assignments=None):
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": assignments or [],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}


@for_api(19)
def create_topics(v: int):
    t = f"conf-ct-v{v}"
    yield case("ordinary", _ct(_topic(f"{t}-ok", 2)))
    yield case("with-configs", _ct(_topic(f"{t}-cfg", configs={"retention.ms": "1000",
                                                               "cleanup.policy": "compact"})))
    yield case("already-exists", _ct(_topic(PLAIN)))
    yield case("invalid-name", _ct(_topic("bad name!")))
    yield case("name-too-long", _ct(_topic("x" * 250)))
    yield case("zero-partitions", _ct(_topic(f"{t}-zero", 0)))
    yield case("replication-too-high", _ct(_topic(f"{t}-rf", rf=3)))
    yield case("invalid-config-value", _ct(_topic(f"{t}-badv", configs={
        "cleanup.policy": "bogus"})))
    yield case("unknown-config", _ct(_topic(f"{t}-badk", configs={"no.such.config": "1"})))
    yield case("null-config-value", _ct(_topic(f"{t}-nullv", configs={"retention.ms": None})))
    yield case("duplicate-topic", _ct(_topic(f"{t}-dup"), _topic(f"{t}-dup")))
    yield case("validate-only", _ct(_topic(f"{t}-val", 3), validate_only=True))
    yield case("manual-assignment", _ct(_topic(f"{t}-man", -1, -1, assignments=[
        {"partition_index": 0, "broker_ids": [1]}, {"partition_index": 1, "broker_ids": [1]}])))
    # Kafka creates it and waits for a leader that never comes: short timeout_ms
    yield case("assignment-unknown-broker", dict(_ct(_topic(f"{t}-manbad", -1, -1, assignments=[
        {"partition_index": 0, "broker_ids": [5]}])), timeout_ms=300))
    yield case("no-topics", _ct())
    if v >= 4:
        yield case("default-partitions", _ct(_topic(f"{t}-def", -1, -1)))


def gone(name: str):
    """After: Kafka deletes asynchronously; wait until Metadata no longer knows the topic."""
    def after(side: Side) -> None:
        side.call(3, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False},
                  retry_codes=(0,), code=lambda r: r.topics[0].error_code)
    return after


@for_api(20)
def delete_topics(v: int):
    t = f"conf-dt-v{v}"
    if v < 6:
        yield case("ordinary", {"topic_names": [f"{t}-ok"], "timeout_ms": 30000},
                   setup=created(f"{t}-ok"), after=gone(f"{t}-ok"))
        yield case("unknown-topic", {"topic_names": [MISSING], "timeout_ms": 30000})
        yield case("no-topics", {"topic_names": [], "timeout_ms": 30000})
    else:
        yield case("by-name", {"topics": [{"name": f"{t}-n", "topic_id": None}],
                               "timeout_ms": 30000}, setup=created(f"{t}-n"),
                   after=gone(f"{t}-n"))
        yield case("by-id", lambda s: {"topics": [{"name": None,
                                                   "topic_id": s.topic_ids[f"{t}-i"]}],
                                       "timeout_ms": 30000}, setup=created(f"{t}-i"),
                   after=gone(f"{t}-i"))
        yield case("unknown-name", {"topics": [{"name": MISSING}], "timeout_ms": 30000})
        yield case("unknown-id", {"topics": [{"name": None, "topic_id": UNKNOWN_TOPIC_ID}],
                                  "timeout_ms": 30000})
        yield case("no-topics", {"topics": [], "timeout_ms": 30000})


def _dc(*resources, synonyms=False, docs=False):
    return {"include_synonyms": synonyms, "include_documentation": docs, "resources": [
        {"resource_type": rt, "resource_name": name, "configuration_keys": keys}
        for rt, name, keys in resources]}


@for_api(32)
def describe_configs(v: int):
    yield case("topic-all", _dc((TOPIC, PLAIN, None)))
    yield case("topic-keys", _dc((TOPIC, PLAIN, ["retention.ms", "cleanup.policy",
                                                  "no.such.key"])))
    yield case("topic-no-keys", _dc((TOPIC, PLAIN, [])))
    yield case("unknown-topic", _dc((TOPIC, MISSING, None)))
    yield case("broker-keys", _dc((BROKER, "1", ["num.partitions", "log.retention.hours",
                                                 "offsets.topic.replication.factor"])))
    yield case("broker-all", _dc((BROKER, "1", None)))
    yield case("default-broker", _dc((BROKER, "", ["num.partitions"])))
    yield case("other-broker", _dc((BROKER, "2", None)))
    yield case("invalid-broker-id", _dc((BROKER, "x", None)))
    yield case("unknown-resource-type", _dc((9, "x", None)))
    yield case("broker-logger", _dc((BROKER_LOGGER, "1", ["kafka.server.KafkaApis", "root"])))
    yield case("no-resources", _dc())
    yield case("topic-and-unknown", _dc((TOPIC, PLAIN, ["retention.ms"]),
                                        (TOPIC, MISSING, ["retention.ms"])))
    if v >= 1:
        yield case("synonyms", _dc((TOPIC, PLAIN, ["retention.ms", "segment.bytes"]),
                                   synonyms=True))
    if v >= 3:
        yield case("documentation", _dc((TOPIC, PLAIN, ["retention.ms"]), docs=True))
    # Dynamic broker configs: a cluster default and a per-broker value, described (both
    # resources) while set, removed afterwards.
    yield case("dynamic-broker", _dc((BROKER, "", None), (BROKER, "1", list(_DYNAMIC_KEYS)),
                                     (TOPIC, PLAIN, ["segment.bytes", "retention.ms"]),
                                     synonyms=v >= 1),
               setup=_dynamic_set, after=_dynamic_clear)


_DYNAMIC_DEFAULT = {"log.cleaner.backoff.ms": "16000", "log.segment.bytes": "536870912"}
_DYNAMIC_BROKER = {"log.cleaner.backoff.ms": "17000", "leader.replication.throttled.rate": "1048576"}
_DYNAMIC_KEYS = ("log.cleaner.backoff.ms", "leader.replication.throttled.rate",
                 "follower.replication.throttled.rate", "log.segment.bytes")


def _dynamic_layers(side: Side, default: dict, broker: dict) -> None:
    """Set both layers (AlterConfigs), then wait until the broker describes them: Kafka
    applies its own change only when the /config/changes notification reaches it."""
    side.call(33, 1, {"validate_only": False, "resources": [
        {"resource_type": BROKER, "resource_name": name,
         "configs": [{"name": k, "value": val} for k, val in layer.items()]}
        for name, layer in (("", default), ("1", broker))]})

    def pending(response) -> int:
        found = {(r.resource_name, c.name): c.value for r in response.results for c in r.configs}
        want = {**{("", k): val for k, val in default.items()},
                **{("1", k): val for k, val in broker.items()}}
        shown = {key for key in found if key[0] == ""}
        return int(any(found.get(key) != val for key, val in want.items())
                   or shown != {("", k) for k in default})
    side.call(32, 1, _dc((BROKER, "", None), (BROKER, "1", list(_DYNAMIC_KEYS))),
              retry_codes=(1,), code=pending)


def _dynamic_set(side: Side) -> None:
    _dynamic_layers(side, _DYNAMIC_DEFAULT, _DYNAMIC_BROKER)


def _dynamic_clear(side: Side) -> None:
    _dynamic_layers(side, {}, {})


def _ac(name, configs, validate_only=False, rt=TOPIC):
    return {"validate_only": validate_only, "resources": [
        {"resource_type": rt, "resource_name": name,
         "configs": [{"name": k, "value": v} for k, v in configs.items()]}]}


@for_api(33)
def alter_configs(v: int):
    t = f"conf-ac-v{v}"
    yield case("ordinary", _ac(f"{t}-ok", {"retention.ms": "3600000"}), setup=created(f"{t}-ok"))
    yield case("invalid-value", _ac(f"{t}-bad", {"retention.ms": "abc"}),
               setup=created(f"{t}-bad"))
    yield case("unknown-config", _ac(f"{t}-uk", {"no.such.config": "1"}),
               setup=created(f"{t}-uk"))
    yield case("null-value", _ac(f"{t}-null", {"retention.ms": None}),
               setup=created(f"{t}-null"))
    yield case("validate-only", _ac(PLAIN, {"retention.ms": "1000"}, validate_only=True))
    yield case("unknown-topic", _ac(MISSING, {"retention.ms": "1000"}))
    yield case("broker-validate-only", _ac("1", {"log.cleaner.threads": "2"},
                                           validate_only=True, rt=BROKER))
    yield case("broker-read-only", _ac("1", {"broker.id": "5"}, validate_only=True, rt=BROKER))
    yield case("broker-invalid-value", _ac("1", {"log.cleaner.threads": "x"}, validate_only=True,
                                           rt=BROKER))
    yield case("broker-unknown-key", _ac("1", {"no.such.config": "1"}, validate_only=True, rt=BROKER))
    yield case("broker-default-per-broker-key", _ac("", {"ssl.client.auth": "required"},
                                                    validate_only=True, rt=BROKER))
    yield case("broker-ssl-without-prefix", _ac("1", {"ssl.keystore.type": "PKCS12"},
                                                validate_only=True, rt=BROKER))
    yield case("broker-throttle-rate", _ac("1", {"leader.replication.throttled.rate": "-5"},
                                           validate_only=True, rt=BROKER))
    yield case("broker-thread-pool-jump", _ac("1", {"num.io.threads": "100"}, validate_only=True,
                                              rt=BROKER))
    yield case("broker-cleaner-threads-jump", _ac("1", {"log.cleaner.threads": "5"},
                                                  validate_only=True, rt=BROKER))
    yield case("broker-compaction-lags", _ac("1", {"log.cleaner.min.compaction.lag.ms": "10",
                                                   "log.cleaner.max.compaction.lag.ms": "5"},
                                             validate_only=True, rt=BROKER))
    yield case("broker-default-write", _ac("", {"log.cleaner.backoff.ms": "15000"}, rt=BROKER),
               after=_dynamic_clear)
    yield case("no-resources", {"validate_only": False, "resources": []})


def _iac(name, ops, validate_only=False, rt=TOPIC):
    return {"validate_only": validate_only, "resources": [
        {"resource_type": rt, "resource_name": name, "configs": [
            {"name": k, "config_operation": op, "value": val} for k, op, val in ops]}]}


@for_api(44)
def incremental_alter_configs(v: int):
    t = f"conf-iac-v{v}"
    yield case("set", _iac(f"{t}-set", [("retention.ms", 0, "7200000")]),
               setup=created(f"{t}-set"))
    yield case("delete", _iac(f"{t}-del", [("retention.ms", 1, None)]),
               setup=created(f"{t}-del"))
    yield case("append-list", _iac(f"{t}-app", [("cleanup.policy", 2, "compact")]),
               setup=created(f"{t}-app"))
    yield case("subtract-list", _iac(f"{t}-sub", [("cleanup.policy", 3, "delete")]),
               setup=created(f"{t}-sub"))
    yield case("append-non-list", _iac(f"{t}-anl", [("retention.ms", 2, "5")]),
               setup=created(f"{t}-anl"))
    yield case("invalid-operation", _iac(f"{t}-op", [("retention.ms", 9, "5")]),
               setup=created(f"{t}-op"))
    yield case("invalid-value", _iac(f"{t}-iv", [("retention.ms", 0, "abc")]),
               setup=created(f"{t}-iv"))
    yield case("unknown-config", _iac(f"{t}-uk", [("no.such.config", 0, "1")]),
               setup=created(f"{t}-uk"))
    yield case("null-set", _iac(f"{t}-ns", [("retention.ms", 0, None)]),
               setup=created(f"{t}-ns"))
    yield case("duplicate-key", _iac(f"{t}-dk", [("retention.ms", 0, "1"),
                                                 ("retention.ms", 0, "2")]),
               setup=created(f"{t}-dk"))
    yield case("unknown-topic", _iac(MISSING, [("retention.ms", 0, "1")]))
    yield case("broker-validate-only", _iac("1", [("log.cleaner.threads", 0, "2")],
                                            validate_only=True, rt=BROKER))
    yield case("broker-append-list", _iac("1", [("log.cleanup.policy", 2, "compact")],
                                          validate_only=True, rt=BROKER))
    yield case("broker-append-non-list", _iac("1", [("log.cleaner.threads", 2, "2")],
                                              validate_only=True, rt=BROKER))
    yield case("broker-append-unknown", _iac("1", [("no.such.config", 2, "x")],
                                             validate_only=True, rt=BROKER))
    yield case("broker-default-invalid", _iac("", [("num.io.threads", 0, "0")],
                                              validate_only=True, rt=BROKER))
    yield case("broker-read-only", _iac("1", [("log.dirs", 1, None)], validate_only=True,
                                        rt=BROKER))
    yield case("broker-set-and-delete", _iac("1", [("log.cleaner.backoff.ms", 0, "15000"),
                                                   ("no.such.config", 1, None)], rt=BROKER),
               after=_dynamic_clear)
    # BROKER_LOGGER changes, validate-only so Kafka's levels stay as they are for other cases
    for name, broker, ops in (("logger-set", "1", [("root", 0, "DEBUG")]),
                              ("logger-unknown", "1", [("no.such.logger", 0, "DEBUG")]),
                              ("logger-bad-level", "1", [("root", 0, "LOUD")]),
                              ("logger-delete-root", "1", [("root", 1, None)]),
                              ("logger-append", "1", [("root", 2, "DEBUG")]),
                              ("logger-other-broker", "2", [("root", 0, "DEBUG")]),
                              ("logger-bad-broker-id", "x", [("root", 0, "DEBUG")])):
        yield case(name, _iac(broker, ops, validate_only=True, rt=BROKER_LOGGER))


@for_api(35)
def describe_log_dirs(v: int):
    yield case("topic", {"topics": [{"topic": PLAIN, "partitions": [0]}]})
    yield case("multi", {"topics": [{"topic": MULTI, "partitions": [0, 1, 2, 7]}]})
    yield case("unknown-topic", {"topics": [{"topic": MISSING, "partitions": [0]}]})
    yield case("no-topics", {"topics": []})
    yield case("all", {"topics": None})


def _cp(*topics, validate_only=False):
    return {"timeout_ms": 30000, "validate_only": validate_only, "topics": [
        {"name": n, "count": c, "assignments": a} for n, c, a in topics]}


@for_api(37)
def create_partitions(v: int):
    t = f"conf-cp-v{v}"
    yield case("increase", _cp((f"{t}-inc", 3, None)), setup=created(f"{t}-inc"))
    yield case("same-count", _cp((MULTI, 3, None)))
    yield case("decrease", _cp((MULTI, 2, None)))
    yield case("unknown-topic", _cp((MISSING, 3, None)))
    yield case("duplicate-topic", _cp((f"{t}-dup", 2, None), (f"{t}-dup", 3, None)),
               setup=created(f"{t}-dup"))
    yield case("validate-only", _cp((PLAIN, 4, None), validate_only=True))
    yield case("assignment", _cp((f"{t}-as", 2, [{"broker_ids": [1]}])),
               setup=created(f"{t}-as"))
    yield case("assignment-unknown-broker", _cp((f"{t}-asb", 2, [{"broker_ids": [9]}])),
               setup=created(f"{t}-asb"))
    yield case("assignment-count-mismatch", _cp((f"{t}-asc", 3, [{"broker_ids": [1]}])),
               setup=created(f"{t}-asc"))
    yield case("empty-assignments", _cp((f"{t}-ea", 2, [])), setup=created(f"{t}-ea"))
    yield case("no-topics", _cp())


@for_api(43)
def elect_leaders(v: int):
    def el(tps, election=0):
        return {"election_type": election, "timeout_ms": 10000, "topic_partitions": tps}
    yield case("preferred", el([{"topic": PLAIN, "partitions": [0]}]))
    yield case("unknown-topic", el([{"topic": MISSING, "partitions": [0]}]))
    yield case("unknown-partition", el([{"topic": PLAIN, "partitions": [3]}]))
    yield case("no-partitions", el([]))
    yield case("all-partitions", el(None))
    if v >= 1:
        yield case("unclean", el([{"topic": MULTI, "partitions": [0, 1]}], election=1))
        yield case("invalid-election-type", el([{"topic": PLAIN, "partitions": [0]}], 5))


@for_api(60)
def describe_cluster(v: int):
    yield case("ordinary", {"include_cluster_authorized_operations": False})
    yield case("authorized-ops", {"include_cluster_authorized_operations": True})
    if v >= 1:
        yield case("controller-endpoints", {"include_cluster_authorized_operations": False,
                                            "endpoint_type": 2})
        yield case("invalid-endpoint-type", {"include_cluster_authorized_operations": False,
                                             "endpoint_type": 7})


_FILTER = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
           "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}


@for_api(29)
def describe_acls(v: int):
    yield case("any", _FILTER)
    yield case("topic", dict(_FILTER, resource_type_filter=2, resource_name_filter=PLAIN,
                             pattern_type_filter=3))


@for_api(30)
def create_acls(v: int):
    yield case("allow-read", {"creations": [
        {"resource_type": 2, "resource_name": PLAIN, "resource_pattern_type": 3,
         "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}]})
    yield case("no-creations", {"creations": []})
    yield case("prefixed-deny-host", {"creations": [
        {"resource_type": 3, "resource_name": "grp-", "resource_pattern_type": 4 if v >= 1 else 3,
         "principal": "User:bob", "host": "10.0.0.1", "operation": 8, "permission_type": 2}]})
    yield case("cluster-bad-name", {"creations": [
        {"resource_type": 4, "resource_name": "other", "resource_pattern_type": 3,
         "principal": "User:alice", "host": "*", "operation": 9, "permission_type": 3}]})
    yield case("empty-name", {"creations": [
        {"resource_type": 2, "resource_name": "", "resource_pattern_type": 3,
         "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}]})


@for_api(31)
def delete_acls(v: int):
    yield case("any", {"filters": [_FILTER]})
    yield case("no-filters", {"filters": []})
    yield case("principal-nothing-matches", {"filters": [
        dict(_FILTER, principal_filter="User:nobody-at-all")]})
