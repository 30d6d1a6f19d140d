"""The list of deliberate differences and the consumer protocol's shaping, without brokers:
each ``known.KAFKA_4`` rule changes only the fields it names and is used by some case, every
listed case exists, and ``consumer_shape`` labels ids by order of sight (keeping their
form), counts assignments and keeps their coverage."""
from __future__ import annotations

import copy

from tests.conformance.cases import Case
from tests.conformance.catalogue import CASES, KRAFT_CASES
from tests.conformance.compare import Keyed, diff
from tests.conformance.consumer_shape import shaped
from tests.conformance.known import (
    KAFKA_4, KNOWN_DIFFERENCES, SHARE_BROKER_KEYS, SHARE_GROUP_APIS, STAND_IN_VERSIONS, expected)

ALL = CASES + KRAFT_CASES


def _case(api_key: int, version: int, name: str = "x") -> Case:
    return Case(name=name, build=lambda s: {}, api_key=api_key, version=version)


def _paths(before, after) -> set[str]:
    return {d.path for d in diff(before, after)}


def test_every_listed_difference_names_a_case():
    ids = {c.id for c in ALL}
    assert not sorted(set(KNOWN_DIFFERENCES) - ids)
    assert all(any((c.api_key, c.version) == key for c in ALL) for key in STAND_IN_VERSIONS)


def test_every_kafka_4_rule_applies_to_some_case():
    unused = [rule.name for rule in KAFKA_4 if not any(rule.applies(c) for c in ALL)]
    assert not unused


def test_api_versions_rules_touch_only_the_group_apis():
    entries = [{"api_key": k, "min_version": 0, "max_version": m}
               for k, m in ((3, 12), (15, 5), (68, 0), (69, 0), (75, 0))]
    kafka = {"error_code": 0, "api_keys": entries, "finalized_features": Keyed([], ["name"]),
             "supported_features": Keyed([], ["name"])}
    ours = expected(_case(18, 4), copy.deepcopy(kafka))
    ranges = {e["api_key"]: (e["min_version"], e["max_version"]) for e in ours["api_keys"]}
    assert ranges == {3: (0, 12), 15: (0, 6), 68: (0, 1), 69: (0, 1), 75: (0, 0),
                      **SHARE_GROUP_APIS}
    assert [e["api_key"] for e in ours["api_keys"]] == sorted(ranges)      # the list's order
    assert [f["name"] for f in ours["finalized_features"]] == ["group.version", "share.version"]
    assert [(f["name"], f["min_version"], f["max_version"])
            for f in ours["supported_features"]] == [("group.version", 0, 1),
                                                     ("share.version", 0, 1),
                                                     ("transaction.version", 0, 2)]
    v3 = expected(_case(18, 3), copy.deepcopy(kafka))
    assert not v3["supported_features"]            # minimum 0: left out below v4
    assert [f["name"] for f in v3["finalized_features"]] == ["group.version", "share.version"]
    refused = dict(kafka, error_code=35)
    assert _paths(refused, expected(_case(18, 4), copy.deepcopy(refused))) <= {
        "api_keys[1].max_version", "api_keys[2].max_version", "api_keys[3].max_version"}


def test_describe_groups_v6_turns_only_a_missing_group_into_group_id_not_found():
    def group(gid, state):
        return {"error_code": 0, "group_id": gid, "group_state": state, "members": [],
                "authorized_operations": {3, 6, 8}}
    kafka = {"groups": Keyed([group("a", "Dead"), group("b", "Stable")], ["group_id"])}
    ours = expected(_case(15, 6), copy.deepcopy(kafka))
    dead, stable = ours["groups"]
    assert (dead["error_code"], dead["error_message"], dead["authorized_operations"]) == (
        69, "Group a not found.", None)
    assert stable == dict(group("b", "Stable"), error_message=None)
    assert expected(_case(15, 5), copy.deepcopy(kafka)) == kafka


def _config(name, value, config_type=7, **fields):
    return {"name": name, "value": value, "read_only": True, "config_source": 5,
            "is_sensitive": False, "config_type": config_type, "synonyms": [], **fields}


def test_describe_configs_rules_change_the_group_keys_and_add_the_share_keys_only():
    configs = Keyed([_config("group.consumer.assignors",
                             "org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
                             "org.apache.kafka.coordinator.group.assignor.RangeAssignor"),
                     _config("group.coordinator.rebalance.protocols", "classic"),
                     _config("num.partitions", "1", 3)], ["name"])
    kafka = {"results": [{"resource_type": 4, "configs": configs}]}
    ours = expected(_case(32, 4), copy.deepcopy(kafka))
    assert _paths(kafka, ours) == {
        "results[0].configs[name='group.consumer.assignors'].value",
        "results[0].configs[name='group.coordinator.rebalance.protocols'].value",
        "results[0].configs[name='group.consumer.migration.policy']",
        *(f"results[0].configs[name='{k}']" for k in SHARE_BROKER_KEYS)}
    by_name = {c["name"]: c for c in ours["results"][0]["configs"]}
    assert (by_name["group.consumer.migration.policy"]["value"],
            by_name["group.consumer.migration.policy"]["config_type"]) == ("bidirectional", 2)
    assert by_name["group.coordinator.rebalance.protocols"]["value"] == "classic,consumer,share"
    assert [c["name"] for c in ours["results"][0]["configs"]] == sorted(by_name)
    cached = by_name["share.coordinator.cached.buffer.max.bytes"]
    assert (cached["value"], cached["read_only"], cached["config_type"]) == ("1048588", False, 3)
    prefix = by_name["errors.deadletterqueue.topic.name.prefix"]
    assert (prefix["value"], prefix["read_only"], prefix["config_type"]) == ("dlq.", True, 2)
    topic = {"results": [{"resource_type": 2, "configs": configs}]}
    assert expected(_case(32, 4), copy.deepcopy(topic)) == topic
    some_keys = {"results": [{"resource_type": 4, "configs": Keyed(
        [_config("num.partitions", "1", 3)], ["name"])}]}
    assert expected(_case(32, 4), copy.deepcopy(some_keys)) == some_keys


def test_describe_configs_share_rule_turns_kafka_39_share_values_into_kafka_42s():
    unknown = {"is_sensitive": True, "config_type": 0, "config_source": 4}
    configs = Keyed([_config("group.share.partition.max.record.locks", "200", 3),
                     _config("group.share.max.size", "200", 4),
                     _config("share.coordinator.state.topic.min.isr", None, **unknown),
                     _config("share.coordinator.state.topic.replication.factor", None,
                             **unknown)], ["name"])
    kafka = {"results": [{"resource_type": 4, "configs": configs}]}
    ours = {c["name"]: c for c in expected(_case(32, 4), copy.deepcopy(kafka))["results"][0][
        "configs"]}
    assert ours["group.share.partition.max.record.locks"]["value"] == "2000"
    assert ours["group.share.max.size"]["config_type"] == 3
    for name in ("share.coordinator.state.topic.min.isr",
                 "share.coordinator.state.topic.replication.factor"):
        entry = ours[name]
        assert (entry["value"], entry["is_sensitive"], entry["config_type"],
                entry["config_source"]) == ("1", False, 4, 4)      # config/server.properties


def test_dead_letter_topic_key_joins_topic_listings_only():
    template = _config("remote.log.copy.disable", "false", 1, read_only=False)
    topic_configs = Keyed([_config("cleanup.policy", "delete", 7), template], ["name"])
    described = {"results": [{"resource_type": 2, "configs": topic_configs},
                             {"resource_type": 4, "configs": Keyed([], ["name"])}]}
    ours = expected(_case(32, 4), copy.deepcopy(described))
    assert _paths(described, ours) == {
        "results[0].configs[name='errors.deadletterqueue.group.enable']"}
    added = next(c for c in ours["results"][0]["configs"]
                 if c["name"] == "errors.deadletterqueue.group.enable")
    assert added == dict(template, name="errors.deadletterqueue.group.enable")
    created = {"topics": Keyed([{"name": "t", "configs": copy.deepcopy(topic_configs)}],
                               ["name"])}
    assert _paths(created, expected(_case(19, 5), copy.deepcopy(created))) == {
        "topics[name='t'].configs[name='errors.deadletterqueue.group.enable']"}
    assert expected(_case(19, 4), copy.deepcopy(created)) == created
    keys_only = {"results": [{"resource_type": 2, "configs": Keyed(
        [_config("cleanup.policy", "delete", 7)], ["name"])}]}
    assert expected(_case(32, 4), copy.deepcopy(keys_only)) == keys_only


class _Side:
    def __init__(self):
        self.vars = {}


def test_member_ids_become_labels_in_order_of_sight_keeping_their_form():
    side = _Side()
    kafka_form, text_form = "UJXaBAdsS661lM5NSLLp2A", "a828f88c-a704-42fe-b5da-7cfa77f7f52b"
    tree = {"member_id": kafka_form,
            "error_message": f"Static member {text_form} is fenced by {kafka_form}."}
    assert shaped()(tree, side) == {
        "member_id": "<m1 kafka-uuid>",
        "error_message": "Static member <m2 36 chars> is fenced by <m1 kafka-uuid>."}
    assert shaped()({"error_message": "group cgp-hb-v0-fenced-epoch"}, side) == {
        "error_message": "group cgp-hb-v0-fenced-epoch"}      # 22 characters, no capital


def test_counts_keep_the_coverage_and_sort_members_by_label():
    def member(mid, parts):
        topics = [{"topic_id": "<t>", "topic_name": "t", "partitions": parts}]
        return {"member_id": mid, "assignment": {"topic_partitions": topics},
                "target_assignment": {"topic_partitions": topics}}
    side = _Side()
    side.vars["labels"] = {"B" * 22: "m1", "A" * 22: "m2"}
    group = {"members": [member("A" * 22, [2, 3]), member("B" * 22, [0, 1])]}
    out = shaped(counts=True)(group, side)
    assert [m["member_id"] for m in out["members"]] == ["<m1 kafka-uuid>", "<m2 kafka-uuid>"]
    assert out["members"][0]["assignment"]["topic_partitions"][0]["partitions"] == \
        "<2 partitions>"
    assert out["<assigned>"] == out["<target>"] == {"t": [0, 1, 2, 3]}
    short = {"members": [member("A" * 22, [2]), member("B" * 22, [0, 1])]}
    assert diff(out, shaped(counts=True)(short, side))
