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
    KAFKA_4, KNOWN_DIFFERENCES, STAND_IN_VERSIONS, expected)

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


def test_api_versions_rule_touches_only_the_consumer_group_apis():
    entries = [{"api_key": k, "min_version": 0, "max_version": m}
               for k, m in ((3, 12), (15, 5), (68, 0), (69, 0))]
    kafka = {"error_code": 0, "api_keys": entries, "finalized_features": Keyed([], ["name"]),
             "supported_features": Keyed([], ["name"])}
    ours = expected(_case(18, 4), copy.deepcopy(kafka))
    assert _paths(kafka, ours) == {
        "api_keys[1].max_version", "api_keys[2].max_version", "api_keys[3].max_version",
        "finalized_features[name='group.version']",
        "supported_features[name='group.version']"}
    v3 = expected(_case(18, 3), copy.deepcopy(kafka))
    assert "supported_features[name='group.version']" not in _paths(kafka, v3)     # minimum 0: left out below v4
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


def test_describe_configs_rule_changes_the_three_group_keys_only():
    def entry(name, value):
        return {"name": name, "value": value, "read_only": True, "config_source": 5,
                "config_type": 7, "synonyms": []}
    configs = Keyed([entry("group.consumer.assignors",
                           "org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
                           "org.apache.kafka.coordinator.group.assignor.RangeAssignor"),
                     entry("group.coordinator.rebalance.protocols", "classic"),
                     entry("num.partitions", "1")], ["name"])
    kafka = {"results": [{"resource_type": 4, "configs": configs}]}
    ours = expected(_case(32, 4), copy.deepcopy(kafka))
    assert _paths(kafka, ours) == {
        "results[0].configs[name='group.consumer.assignors'].value",
        "results[0].configs[name='group.coordinator.rebalance.protocols'].value",
        "results[0].configs[name='group.consumer.migration.policy']"}
    policy = next(c for c in ours["results"][0]["configs"]
                  if c["name"] == "group.consumer.migration.policy")
    assert (policy["value"], policy["config_type"]) == ("bidirectional", 2)
    topic = {"results": [{"resource_type": 2, "configs": configs}]}
    assert expected(_case(32, 4), copy.deepcopy(topic)) == topic


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
