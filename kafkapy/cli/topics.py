"""``kafkapy-topics``: Kafka's ``bin/kafka-topics.sh`` (TopicCommand) over kafka-python.

Exactly one action: ``--create``, ``--list``, ``--describe``, ``--alter`` (more
partitions) or ``--delete``, with Kafka's options (``--topic`` is a regex except for
``--create``; ``--partitions``, ``--replication-factor``, ``--replica-assignment``,
repeatable ``--config k=v``, ``--if-exists``, ``--if-not-exists``, ``--exclude-internal``,
and the ``--describe`` reports ``--topics-with-overrides``, ``--under-replicated-partitions``,
``--unavailable-partitions``, ``--under-min-isr-partitions``, ``--at-min-isr-partitions``).

Output as Kafka prints it: "Created topic X."; ``--list`` one name a line, sorted, internal
topics included unless ``--exclude-internal``; ``--describe`` a line
``Topic: X<TAB>TopicId: ...<TAB>PartitionCount: N<TAB>ReplicationFactor: R<TAB>Configs: k=v,...``
(every config whose source is not DEFAULT_CONFIG, so static broker settings show too) and per
partition ``<TAB>Topic: X<TAB>Partition: 0<TAB>Leader: 0<TAB>Replicas: 0<TAB>Isr: 0<TAB>Elr: N/A
<TAB>LastKnownElr: N/A``; ``--alter`` and ``--delete`` print nothing. Usage errors and a missing
topic ("Topic 'X' does not exist as expected") go to stderr; a failed operation prints
"Error while executing topic command : <reason>" to stdout; both exit 1.

Differences from Kafka:
- ``--topic-id``, ``--partition-size-limit-per-response`` and the deprecated
  ``--delete-config`` are not offered.
- ``Configs:`` is sorted by name (Kafka prints it in hash-map order) and topics are described
  in name order.
- ``Elr``/``LastKnownElr`` are always ``N/A``: they come from DescribeTopicPartitions
  (KIP-966), which kafka-python does not use; Kafka prints the same for a broker without it.
- Topic config names and values are checked by the broker, not beforehand by the tool.
"""
from __future__ import annotations

import argparse
import sys

from kafka.admin import ConfigResource, ConfigResourceType

from kafkapy.cli import _common as common
from kafkapy.cli._common import UsageError

_ACTIONS = ("create", "list", "alter", "describe", "delete")
_REPORTS = ("under_replicated_partitions", "unavailable_partitions",
            "under_min_isr_partitions", "at_min_isr_partitions")
_FLAG_HELP = {
    "if-exists": "with --alter, --delete or --describe: only if the topic exists",
    "if-not-exists": "with --create: only if the topic does not exist yet",
    "exclude-internal": "leave internal topics out of --list and --describe",
    "topics-with-overrides": "with --describe: only topics with config overrides",
    "under-replicated-partitions": "with --describe: only partitions missing in-sync replicas",
    "unavailable-partitions": "with --describe: only partitions whose leader is unavailable",
    "under-min-isr-partitions": "with --describe: only partitions with fewer in-sync "
                                "replicas than min.insync.replicas",
    "at-min-isr-partitions": "with --describe: only partitions with exactly "
                             "min.insync.replicas in-sync replicas",
}
# Options and the actions they may go with (Kafka's checkInvalidArgs).
_ALLOWED_WITH = {
    "config": ("create",),
    "partitions": ("alter", "create"),
    "replication_factor": ("create",),
    "replica_assignment": ("alter", "create"),
    "if_exists": ("alter", "delete", "describe"),
    "if_not_exists": ("create",),
    "exclude_internal": ("list", "describe"),
    "topics_with_overrides": ("describe",),
    **{report: ("describe",) for report in _REPORTS},
}
_CONFIGS_HINT = " (To alter topic configurations, the kafka-configs tool can be used.)"
_TOPIC_ALREADY_EXISTS = 36


def main(argv: list[str] | None = None) -> int:
    return common.run(_execute, _parser(), argv, _report)


def _report(message: str) -> None:
    print(f"Error while executing topic command : {message}")


def _parser() -> common.ToolParser:
    parser = common.ToolParser("kafkapy-topics", "Create, delete, describe, or change a topic.")
    for action in _ACTIONS:
        parser.add_argument(f"--{action}", action="store_true", help=f"{action} topics")
    parser.add_argument("--topic", help="topic name (a regex except with --create)")
    parser.add_argument("--partitions", type=int, help="number of partitions")
    parser.add_argument("--replication-factor", type=int,
                        help="replicas of each partition of the created topic")
    parser.add_argument("--replica-assignment", metavar="B1:B2,B3:B4,...",
                        help="broker ids of each partition's replicas, partitions separated by "
                             "commas, the preferred leader first")
    parser.add_argument("--config", action="append", default=[], metavar="name=value",
                        help="a topic config override for the created topic (may be repeated)")
    for flag, text in _FLAG_HELP.items():
        parser.add_argument(f"--{flag}", action="store_true", help=text)
    return parser


def _execute(args: argparse.Namespace) -> None:
    action = _check_args(args)
    admin = common.admin_client(args)
    try:
        {"create": _create, "list": _list, "alter": _alter, "describe": _describe,
         "delete": _delete}[action](admin, args)
    finally:
        admin.close()


def _check_args(args: argparse.Namespace) -> str:
    action = common.single_action(args, _ACTIONS,
                                  "--list, --describe, --create, --alter or --delete")
    if not args.bootstrap_server:
        raise UsageError("--bootstrap-server must be specified")
    if action not in ("list", "describe") and args.topic is None:
        raise UsageError('Missing required argument "[topic]"')
    if action == "alter" and args.config:
        raise UsageError(f'Option "[config]" can\'t be used with option "[alter]"{_CONFIGS_HINT}')
    if action == "alter" and args.partitions is None:
        raise UsageError('Missing required argument "[partitions]"')
    for option, allowed in _ALLOWED_WITH.items():
        if _given(args, option) and action not in allowed:
            raise UsageError(f'Option "[{_dashed(option)}]" can\'t be used with option '
                             f'"[{action}]"')
    if action == "create" and args.replica_assignment:
        for option in ("partitions", "replication_factor"):
            if _given(args, option):
                raise UsageError(f'Option "[replica-assignment]" can\'t be used with option '
                                 f'"[{_dashed(option)}]"')
    return action


def _given(args: argparse.Namespace, option: str) -> bool:
    value = getattr(args, option)
    return value not in (None, False, [])


def _dashed(option: str) -> str:
    return option.replace("_", "-")


def _create(admin, args: argparse.Namespace) -> None:
    configs = _topic_configs(args.config)
    assignment = _replica_assignment(args.replica_assignment)
    if "." in args.topic or "_" in args.topic:
        print("WARNING: Due to limitations in metric names, topics with a period ('.') or "
              "underscore ('_') could collide. To avoid issues it is best to use either, but "
              "not both.")
    if args.replication_factor is not None and not 1 <= args.replication_factor <= 32767:
        raise UsageError("The replication factor must be between 1 and 32767 inclusive")
    if args.partitions is not None and args.partitions < 1:
        raise UsageError("The partitions must be greater than 0")
    spec: dict = {"configs": configs}
    if assignment:
        spec["assignments"] = assignment
    else:
        # -1 asks the broker for its defaults (num.partitions, default.replication.factor).
        spec["num_partitions"] = _or_default(args.partitions)
        spec["replication_factor"] = _or_default(args.replication_factor)
    result = admin.create_topics({args.topic: spec}, raise_errors=False)["topics"][0]
    if result["error_code"] == _TOPIC_ALREADY_EXISTS and args.if_not_exists:
        return
    common.check_error(result["error_code"], result["error_message"])
    print(f"Created topic {args.topic}.")


def _or_default(value: int | None) -> int:
    return -1 if value is None else value


def _topic_configs(items: list[str]) -> dict[str, str]:
    configs = {}
    for item in items:
        parts = [part.strip() for part in item.split("=")]
        if len(parts) != 2:
            raise UsageError('requirement failed: Invalid topic config: all configs to be added '
                             'must be in the format "key=val".')
        configs[parts[0]] = parts[1]
    return configs


def _replica_assignment(text: str | None) -> dict[int, list[int]]:
    """``0:1,1:2`` -> {0: [0, 1], 1: [1, 2]}: partitions by comma, replicas by colon."""
    if not text:
        return {}
    assignment: dict[int, list[int]] = {}
    for partition, replicas in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in replicas.split(":")]
        except ValueError:
            raise UsageError(f"Invalid replica assignment: {text}") from None
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise UsageError("Partition replica lists may not contain duplicate entries: "
                             + ",".join(map(str, duplicates)))
        if assignment and len(brokers) != len(assignment[0]):
            raise UsageError(f"Partition {partition} has different replication factor: {brokers}")
        assignment[partition] = brokers
    return assignment


def _topics(admin, args: argparse.Namespace) -> list[dict]:
    """Metadata of the topics ``--topic`` selects (all without it), sorted by name."""
    matcher = common.TopicFilter(args.topic) if args.topic else None
    selected = [t for t in admin.describe_topics()
                if (matcher is None or matcher.allows(t["name"]))
                and not (args.exclude_internal and t["is_internal"])]
    return sorted(selected, key=lambda t: t["name"])


def _existing(admin, args: argparse.Namespace) -> list[dict]:
    topics = _topics(admin, args)
    if args.topic and not topics and not args.if_exists:
        raise UsageError(f"Topic '{args.topic}' does not exist as expected")
    return topics


def _list(admin, args: argparse.Namespace) -> None:
    # Like Kafka, an empty cluster prints one empty line.
    print("\n".join(t["name"] for t in _topics(admin, args)))


def _alter(admin, args: argparse.Namespace) -> None:
    topics = _existing(admin, args)
    if not topics:
        return
    assignment = list(_replica_assignment(args.replica_assignment).values())
    request = {}
    for topic in topics:
        # A replica assignment lists every partition; only the new ones are sent.
        new = assignment[len(topic["partitions"]):]
        request[topic["name"]] = {"count": args.partitions, "assignments": new} if new \
            else args.partitions
    response = admin.create_partitions(request, raise_errors=False)
    for result in response.results:
        common.check_error(result.error_code, result.error_message)


def _delete(admin, args: argparse.Namespace) -> None:
    topics = _existing(admin, args)
    if not topics:
        return
    result = admin.delete_topics([t["name"] for t in topics], raise_errors=False)
    for topic in result["topics"]:
        common.check_error(topic["error_code"], topic.get("error_message"))


def _describe(admin, args: argparse.Namespace) -> None:
    topics = _existing(admin, args)
    if not topics:
        return
    for topic in topics:
        common.check_error(topic["error_code"])
    resources = [ConfigResource(ConfigResourceType.TOPIC, t["name"]) for t in topics]
    configs = admin.describe_configs(resources, config_filter="all").get("topic", {})
    live = {b["broker_id"] for b in admin.describe_cluster()["brokers"]}
    for topic in topics:
        _print_topic(topic, configs.get(topic["name"], {}), live, args)


def _print_topic(topic: dict, configs: dict, live: set[int], args: argparse.Namespace) -> None:
    partitions = sorted(topic["partitions"], key=lambda p: p["partition_index"])
    reports = [r for r in _REPORTS if getattr(args, r)]
    overrides = {k: v for k, v in sorted(configs.items()) if v["config_source"] != "DEFAULT_CONFIG"}
    if not reports and (not args.topics_with_overrides or overrides):
        print(_topic_line(topic, partitions, overrides))
    if args.topics_with_overrides:
        return
    min_isr = int(configs.get("min.insync.replicas", {}).get("value") or 1)
    for partition in partitions:
        if not reports or any(_reported(r, partition, live, min_isr) for r in reports):
            print(_partition_line(topic["name"], partition))


def _topic_line(topic: dict, partitions: list[dict], overrides: dict) -> str:
    fields = [f"Topic: {topic['name']}"]
    topic_id = common.kafka_uuid(topic.get("topic_id"))
    if topic_id:
        fields.append(f"TopicId: {topic_id}")
    replication = len(partitions[0]["replica_nodes"]) if partitions else 0
    configs = ",".join(f"{k}={common.java_text(v['value'])}" for k, v in overrides.items())
    fields += [f"PartitionCount: {len(partitions)}", f"ReplicationFactor: {replication}",
               f"Configs: {configs}"]
    return "\t".join(fields)


def _partition_line(name: str, partition: dict) -> str:
    leader = partition["leader_id"] if partition["leader_id"] >= 0 else "none"
    replicas = ",".join(map(str, partition["replica_nodes"]))
    isr = ",".join(map(str, partition["isr_nodes"]))
    return (f"\tTopic: {name}\tPartition: {partition['partition_index']}\tLeader: {leader}"
            f"\tReplicas: {replicas}\tIsr: {isr}\tElr: N/A\tLastKnownElr: N/A")


def _reported(report: str, partition: dict, live: set[int], min_isr: int) -> bool:
    has_leader = partition["leader_id"] >= 0
    isr = len(partition["isr_nodes"])
    if report == "under_replicated_partitions":
        return len(partition["replica_nodes"]) > isr
    if report == "unavailable_partitions":
        return not has_leader or partition["leader_id"] not in live
    if report == "under_min_isr_partitions":
        return not has_leader or isr < min_isr
    return isr == min_isr


if __name__ == "__main__":
    sys.exit(main())
