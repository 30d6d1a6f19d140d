"""``kafkapy-log-dirs``: Kafka's ``bin/kafka-log-dirs.sh`` (LogDirsCommand).

``--describe`` asks each broker of ``--broker-list`` (all brokers without it) for its log
directories (DescribeLogDirs, all partitions), keeps the topics of ``--topic-list`` (all
without it) and prints Kafka's three lines::

    Querying brokers for log directories information
    Received log directory information from brokers 0,1
    {"brokers":[{"broker":0,"logDirs":[{"partitions":[{"partition":"t-0","size":130,
    "offsetLag":0,"isFuture":false}],"error":null,"logDir":"/var/kafka"}]}],"version":1}

Invariants, as Kafka's tool prints them:
- Every JSON object, and every list built from a Java map (brokers, log dirs, partitions),
  comes in the iteration order of the Java ``HashMap``/``HashSet`` Kafka builds
  (``java_set_order``); the JSON is compact (Jackson's ``ObjectMapper``), ``error`` is the
  Java class name of a log dir's error or ``null``.
- A ``--broker-list`` id that is not in the cluster: "ERROR: The given brokers do not exist
  from --broker-list: 5. Current existent brokers: 0" on stderr, exit 1; a non-number:
  Java's ``For input string: "x"``, exit 1. Without ``--describe``: Kafka's usage error.
"""
from __future__ import annotations

import argparse
import json
import sys

from kafka.protocol.admin import DescribeLogDirsRequest

from kafkapy.cli import _common as common
from kafkapy.cli._common import CommandError, UsageError


def main(argv: list[str] | None = None) -> int:
    return common.run(_execute, _parser(), argv, common.to_stderr)


def _parser() -> common.ToolParser:
    parser = common.ToolParser(
        "kafkapy-log-dirs",
        "This tool helps to query log directory usage on the specified brokers.")
    parser.add_argument("--describe", action="store_true",
                        help="Describe the specified log directories on the specified brokers.")
    parser.add_argument("--broker-list", default="", metavar="BROKER_LIST",
                        help='The list of brokers to be queried in the form "0,1,2". All '
                             "brokers in the cluster will be queried if no broker list is "
                             "specified")
    parser.add_argument("--topic-list", default="", metavar="TOPIC_LIST",
                        help='The list of topics to be queried in the form '
                             '"topic1,topic2,topic3". All topics will be queried if no topic '
                             "list is specified")
    return parser


def _execute(args: argparse.Namespace) -> None:
    common.require_bootstrap(args)
    if not args.describe:
        raise UsageError('Missing required argument "[describe]"')
    topics = {t for t in args.topic_list.split(",") if t}
    wanted = _broker_ids(args.broker_list)
    admin = common.admin_client(args, client_id="log-dirs-tool")
    try:
        cluster = [b["broker_id"] for b in admin.describe_cluster()["brokers"]]
        chosen = [b for b in (wanted or cluster) if b in cluster]
        missing = [b for b in wanted if b not in cluster]
        if missing:
            raise CommandError("ERROR: The given brokers do not exist from --broker-list: "
                               f"{_ids(missing)}. Current existent brokers: {_ids(cluster)}")
        print("Querying brokers for log directories information")
        described = {broker: _describe(admin, broker) for broker in chosen}
    finally:
        admin.close()
    print(f"Received log directory information from brokers {_ids(chosen)}")
    print(_as_json(described, topics))


def _broker_ids(text: str) -> list[int]:
    ids = []
    for item in (i for i in text.split(",") if i):
        try:
            ids.append(int(item))
        except ValueError:
            raise CommandError(f'For input string: "{item}"') from None
    return ids


def _ids(ids) -> str:
    """A Java ``HashSet<Integer>`` of broker ids joined by commas."""
    return ",".join(str(i) for i in common.java_set_order(ids, common.int_hash))


def _describe(admin, broker: int) -> list[dict]:
    """One broker's log dirs as (path, error code, [(topic, partition, info)]) dicts."""
    response = common.send(admin, DescribeLogDirsRequest(topics=None), broker)
    dirs = []
    for result in response.results:
        replicas = [((t.name, p.partition_index), p) for t in result.topics for p in t.partitions]
        dirs.append({"path": result.log_dir, "error": result.error_code, "replicas": replicas})
    return dirs


def _as_json(described: dict[int, list[dict]], topics: set[str]) -> str:
    brokers = [_ordered({"broker": broker, "logDirs": _log_dirs(described[broker], topics)})
               for broker in common.java_set_order(list(described), common.int_hash)]
    document = _ordered({"version": 1, "brokers": brokers})
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def _log_dirs(dirs: list[dict], topics: set[str]) -> list[dict]:
    by_path = {d["path"]: d for d in dirs}
    shown = []
    for path in common.java_set_order(list(by_path), common.string_hash):
        entry = by_path[path]
        error = common.java_exception_name(entry["error"]) if entry["error"] else None
        shown.append(_ordered({"logDir": path, "error": error,
                               "partitions": _partitions(entry["replicas"], topics)}))
    return shown


def _partitions(replicas: list, topics: set[str]) -> list[dict]:
    # Kafka's admin client keeps a HashMap per log dir; the tool filters it into another.
    infos = dict(replicas)
    order = common.java_set_order(list(infos), common.topic_partition_hash)
    kept = [tp for tp in order if not topics or tp[0] in topics]
    return [_ordered({"partition": f"{tp[0]}-{tp[1]}", "size": infos[tp].partition_size,
                      "offsetLag": infos[tp].offset_lag, "isFuture": infos[tp].is_future_key})
            for tp in common.java_set_order(kept, common.topic_partition_hash)]


def _ordered(fields: dict) -> dict:
    """``fields`` in the iteration order of a Java ``HashMap<String, Object>``."""
    return {key: fields[key] for key in common.java_set_order(list(fields), common.string_hash)}


if __name__ == "__main__":
    sys.exit(main())
