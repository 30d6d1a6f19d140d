"""``kafkapy-transactions``: Kafka 3.9's ``bin/kafka-transactions.sh`` (TransactionsCommand).

Sub-commands, with Kafka's options and tables (every cell padded to its column's width and
followed by a tab, header first):

- ``list``: ListTransactions to every broker; TransactionalId, Coordinator, ProducerId,
  TransactionState.
- ``describe --transactional-id ID``: DescribeTransactions at its coordinator; the
  transaction's producer, state, timeout, start time, duration and partitions.
- ``describe-producers --topic T --partition P [--broker-id B]``: DescribeProducers at the
  leader (or at broker B); one row per active producer.
- ``abort --topic T --partition P`` and either ``--start-offset O`` (the producer whose open
  transaction starts at O, found with DescribeProducers) or ``--producer-id``,
  ``--producer-epoch`` and ``--coordinator-epoch``: an abort marker (WriteTxnMarkers) written
  by the partition's leader; prints nothing.
- ``find-hanging (--broker-id B | --topic T [--partition P]) [--max-transaction-timeout M]``:
  open transactions older than M minutes (15) whose producer id no coordinator lists, or
  whose coordinator does not count the partition in the transaction.

Invariants, as Kafka's tool and admin client behave:
- A failure prints "<what failed>: <Kafka's exception message>. Enable debug logging for
  additional detail." (or Kafka's plain sentence for bad option combinations) to stderr and
  exits 1; usage errors exit 1 too.
- Lookups Kafka's admin client retries (a topic with no leader, a coordinator not yet
  available) are retried until ``default.api.timeout.ms`` (``--command-config``, 60 s), then
  fail with Kafka's TimeoutException text.
- Rows built from Java maps (brokers, partitions, producer ids) come in the maps' iteration
  order (``java_set_order``).
"""
from __future__ import annotations

import argparse
import sys
import time

from kafka.admin._transactions import AbortTransactionSpec, TransactionsAdminMixin
from kafka.protocol.admin.transactions import (DescribeProducersRequest,
                                               DescribeTransactionsRequest,
                                               ListTransactionsRequest)
from kafka.protocol.metadata import CoordinatorType
from kafka.structs import TopicPartition

from kafkapy.cli import _common as common
from kafkapy.cli._common import CommandError
from kafkapy.jvm import long_hash

_BACKOFF_S = 0.1
_BATCH = 500          # Kafka's MAX_BATCH_SIZE for find-hanging's requests
_DEBUG_HINT = " Enable debug logging for additional detail."
# Errors after which Kafka's admin client looks the leader up again.
_REMAP = {3, 5, 6, 8}          # UNKNOWN_TOPIC_OR_PARTITION, LEADER/REPLICA/BROKER_NOT_AVAILABLE
_COORDINATOR_RETRY = {14, 15, 16}   # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


class _Failed(Exception):
    """An admin call failed; the text is Kafka's exception message for it."""


def main(argv: list[str] | None = None) -> int:
    try:
        return common.run(_execute, _parser(), argv, common.to_stderr)
    except SystemExit as done:
        # Kafka's argparse4j parser exits 1 after --help as after any parse failure.
        raise SystemExit(done.code or 1) from None


# --------------------------------------------------------------------------- options

class _SubParser(argparse.ArgumentParser):
    """A sub-command's parser: fails like the main one (message, usage, exit 1)."""

    def error(self, message: str):
        print(message, file=sys.stderr)
        self.print_usage(sys.stderr)
        sys.exit(1)


def _parser() -> common.ToolParser:
    parser = common.ToolParser(
        "kafkapy-transactions",
        "This tool is used to analyze the transactional state of producers in the cluster. "
        "It can be used to detect and recover from hanging transactions.")
    options = parser._option_string_actions
    options["--bootstrap-server"].help = (
        "hostname and port for the broker to connect to, in the form `host:port` (multiple "
        "comma-separated entries can be given)")
    options["--bootstrap-server"].metavar = "host:port"
    options["--bootstrap-server"].required = True
    options["--command-config"].help = ("property file containing configs to be passed to "
                                        "admin client")
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND",
                                     required=True, parser_class=_SubParser)
    commands.add_parser("list", help="list transactions")
    _describe_options(commands)
    _producers_options(commands)
    _abort_options(commands)
    _hanging_options(commands)
    return parser


def _describe_options(commands) -> None:
    sub = commands.add_parser("describe", help="describe the state of an active transactional-id",
                              description="Describe the state of an active transactional-id.")
    sub.add_argument("--transactional-id", required=True, help="transactional id")


def _producers_options(commands) -> None:
    sub = commands.add_parser("describe-producers",
                              help="describe the states of active producers for a topic "
                                   "partition")
    sub.add_argument("--broker-id", type=int, help="optional broker id to describe the "
                                                   "producer state on a specific replica")
    sub.add_argument("--topic", required=True, help="topic name")
    sub.add_argument("--partition", type=int, required=True, help="partition number")


def _abort_options(commands) -> None:
    sub = commands.add_parser("abort", help="abort a hanging transaction (requires "
                                            "administrative privileges)")
    sub.add_argument("--topic", required=True, help="topic name")
    sub.add_argument("--partition", type=int, required=True, help="partition number")
    newer = sub.add_argument_group("Brokers on versions 3.0 and above",
                                   "For newer brokers, only the start offset of the "
                                   "transaction to be aborted is required")
    newer.add_argument("--start-offset", type=int,
                       help="start offset of the transaction to abort")
    older = sub.add_argument_group("Brokers on versions older than 3.0",
                                   "For older brokers, you must provide all of these arguments")
    older.add_argument("--producer-id", type=int, help="producer id")
    older.add_argument("--producer-epoch", type=int, help="producer epoch")
    older.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")


def _hanging_options(commands) -> None:
    sub = commands.add_parser("find-hanging", help="find hanging transactions")
    sub.add_argument("--broker-id", type=int,
                     help="broker id to search for hanging transactions")
    sub.add_argument("--max-transaction-timeout", type=int, default=15,
                     help="maximum transaction timeout in minutes to limit the scope of the "
                          "search (15 minutes by default)")
    sub.add_argument("--topic", help="topic name to limit search to (required if --partition "
                                     "is specified)")
    sub.add_argument("--partition", type=int, help="partition number")


def _execute(args: argparse.Namespace) -> None:
    run = {"list": _list, "describe": _describe, "describe-producers": _describe_producers,
           "abort": _abort, "find-hanging": _find_hanging}[args.command]
    _check_hanging_scope(args)
    admin, timeout_ms = common.admin_client_and_timeout(args)
    try:
        run(_Admin(admin, timeout_ms), args)
    finally:
        admin.close()


def _check_hanging_scope(args: argparse.Namespace) -> None:
    # Kafka checks these before its first request (the admin client exists already, but a
    # down broker is not noticed until a request).
    if args.command != "find-hanging":
        return
    if args.topic is None and args.broker_id is None:
        raise CommandError("The `find-hanging` command requires either --topic or "
                           "--broker-id to limit the scope of the search")
    if args.partition is not None and args.topic is None:
        raise CommandError("The --partition argument requires --topic to be provided")


def _fail(what: str, err: _Failed) -> CommandError:
    return CommandError(f"{what}: {err}.{_DEBUG_HINT}")


# --------------------------------------------------------------------------- tables

def _table(headers: list[str], rows: list[list[str]]) -> None:
    """Kafka's prettyPrintTable: each cell left-aligned to its column's width, then a tab."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    for row in [headers, *rows]:
        print("".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths)))


def _tp(tp: tuple[str, int]) -> str:
    return f"{tp[0]}-{tp[1]}"


# --------------------------------------------------------------------------- admin calls

class _Admin:
    """The admin calls of the tool, retried like Kafka's admin client until the timeout."""

    def __init__(self, client, timeout_ms: int) -> None:
        self.client = client
        self.timeout_ms = timeout_ms

    def _retry(self, call: str, attempt):
        """Run ``attempt()`` until it returns a value other than None (a stage name while
        it must retry), or fail with Kafka's call timeout after ``timeout_ms``."""
        started, tries = _now_ms(), 0
        while True:
            tries += 1
            outcome = attempt()
            if not isinstance(outcome, str):
                return outcome
            now = _now_ms()
            if now - started >= self.timeout_ms:
                if outcome.startswith("!"):
                    raise _Failed(f"Timed out waiting for a node assignment. Call: "
                                  f"{call}(api={outcome[1:]})")
                raise _Failed(common.call_timeout_text(call, outcome, started, self.timeout_ms,
                                                       tries, now))
            time.sleep(_BACKOFF_S)

    def brokers(self) -> list[int]:
        return [b["broker_id"] for b in self.client.describe_cluster()["brokers"]]

    def metadata(self, topics: list[str] | None) -> dict:
        return self.client._manager.run(self.client._get_cluster_metadata, topics)

    # -- DescribeProducers

    def producers(self, tps: list, broker_id: int | None) -> dict:
        """{partition: [active producer]} for each of ``tps``, at the leaders or at one
        broker; _Failed with Kafka's message (DescribeProducersHandler) otherwise."""
        found: dict = {}

        def attempt():
            pending = [tp for tp in tps if tp not in found]
            if broker_id is not None:
                if broker_id not in self.brokers():
                    return "!DESCRIBE_PRODUCERS"
                targets = {broker_id: pending}
            else:
                leaders = common.partition_leaders(self.client, {t for t, _ in pending})
                targets = {}
                for tp in pending:
                    if tp in leaders:
                        targets.setdefault(leaders[tp], []).append(tp)
                if len(sum(targets.values(), [])) < len(pending):
                    self._describe_producers_at(targets, found, broker_id)
                    return "METADATA"
            self._describe_producers_at(targets, found, broker_id)
            return found if len(found) == len(tps) else "DESCRIBE_PRODUCERS"
        return self._retry("describeProducers", attempt)

    def _describe_producers_at(self, targets: dict, found: dict, broker_id) -> None:
        for node, tps in targets.items():
            by_topic: dict[str, list[int]] = {}
            for t, p in tps:
                by_topic.setdefault(t, []).append(p)
            request = DescribeProducersRequest(topics=[
                DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps)
                for t, ps in by_topic.items()])
            response = common.send(self.client, request, node)
            for topic in response.topics:
                for part in topic.partitions:
                    tp = (topic.name, part.partition_index)
                    if part.error_code == 0:
                        found[tp] = list(part.active_producers)
                    else:
                        _producers_error(tp, part.error_code, part.error_message, broker_id)

    # -- ListTransactions / DescribeTransactions

    def listings(self, producer_ids: list[int] | None = None) -> dict[int, list]:
        """{broker: [transaction state]} from ListTransactions at every broker."""
        listed = {}
        for broker in self.brokers():
            request = ListTransactionsRequest(state_filters=[],
                                              producer_id_filters=list(producer_ids or []))
            response = common.send(self.client, request, broker)
            if response.error_code:
                raise _Failed(common.kafka_error_message(response.error_code))
            listed[broker] = list(response.transaction_states)
        return listed

    def describe(self, transactional_id: str):
        """(coordinator, the DescribeTransactions entry), retrying a missing coordinator."""
        def attempt():
            coordinator = self._coordinator(transactional_id)
            if coordinator is None:
                return "FIND_COORDINATOR"
            request = DescribeTransactionsRequest(transactional_ids=[transactional_id])
            [state] = common.send(self.client, request, coordinator).transaction_states
            if state.error_code in _COORDINATOR_RETRY:
                return "DESCRIBE_TRANSACTIONS"
            if state.error_code:
                raise _Failed(_describe_error(transactional_id, state.error_code))
            return coordinator, state
        return self._retry("describeTransactions", attempt)

    def _coordinator(self, transactional_id: str) -> int | None:
        try:
            found = self.client._manager.run(self.client._find_coordinator_ids,
                                             [transactional_id], CoordinatorType.TRANSACTION)
        except Exception:   # noqa: BLE001 - any lookup failure is retried, as Kafka does
            return None
        return found.get(transactional_id)

    # -- WriteTxnMarkers

    def abort(self, spec) -> None:
        tp = (spec.topic_partition.topic, spec.topic_partition.partition)

        def attempt():
            leader = common.partition_leaders(self.client, [tp[0]]).get(tp)
            if leader is None:
                return "METADATA"
            request = TransactionsAdminMixin._abort_transaction_request(spec)
            response = common.send(self.client, request, leader)
            code = response.markers[0].topics[0].partitions[0].error_code
            if code in _REMAP:
                return "METADATA"
            if code:
                raise _Failed(_abort_error(spec, code))
            return True
        self._retry("abortTransaction", attempt)


def _producers_error(tp, code: int, message: str | None, broker_id: int | None) -> None:
    """DescribeProducersHandler.handlePartitionError: raise, or return to retry."""
    if code == 6 and broker_id is None or code == 3:
        return
    if code == 6:
        raise _Failed(f"Failed to describe active producers for partition {_tp(tp)} on "
                      f"brokerId {broker_id}")
    if code == 17:
        raise _Failed(f"Failed to fetch metadata for partition {_tp(tp)} due to invalid topic "
                      f"error: {message or common.kafka_error_message(code)}")
    if code == 29:
        raise _Failed(f"Failed to describe active producers for partition {_tp(tp)} due to "
                      f"authorization failure on topic `{tp[0]}`")
    raise _Failed(f"Failed to describe active producers for partition {_tp(tp)} due to "
                  "unexpected error")


def _describe_error(transactional_id: str, code: int) -> str:
    if code == 53:
        return (f"DescribeTransactions request for transactionalId `{transactional_id}` failed "
                "due to authorization failure")
    if code == 105:
        return (f"DescribeTransactions request for transactionalId `{transactional_id}` failed "
                "because the ID could not be found")
    return (f"DescribeTransactions request for transactionalId `{transactional_id}` failed due "
            "to unexpected error")


def _spec_text(spec) -> str:
    tp = spec.topic_partition
    return (f"AbortTransactionSpec(topicPartition={tp.topic}-{tp.partition}, "
            f"producerId={spec.producer_id}, producerEpoch={spec.producer_epoch}, "
            f"coordinatorEpoch={spec.coordinator_epoch})")


def _abort_error(spec, code: int) -> str:
    """AbortTransactionHandler.handleError's messages."""
    text = _spec_text(spec)
    if code == 31:
        return f"WriteTxnMarkers request with {text} failed due to cluster authorization error"
    if code == 47:
        return f"WriteTxnMarkers request with {text} failed due an invalid producer epoch"
    if code == 52:
        return (f"WriteTxnMarkers request with {text} failed since the provided coordinator "
                f"epoch {spec.coordinator_epoch} has been fenced by the active coordinator")
    return (f"WriteTxnMarkers request with {text} failed due to unexpected error: "
            f"{common.kafka_error_message(code)}")


# --------------------------------------------------------------------------- commands

def _list(admin: _Admin, args: argparse.Namespace) -> None:
    try:
        listed = admin.listings()
    except _Failed as err:
        raise _fail("Failed to list transactions", err) from None
    rows = [[state.transactional_id, str(broker), str(state.producer_id),
             state.transaction_state]
            for broker in common.java_set_order(list(listed), common.int_hash)
            for state in listed[broker]]
    _table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows)


def _describe(admin: _Admin, args: argparse.Namespace) -> None:
    tid = args.transactional_id
    try:
        coordinator, state = admin.describe(tid)
    except _Failed as err:
        raise _fail(f"Failed to describe transaction state of transactional-id `{tid}`",
                    err) from None
    start = state.transaction_start_time_ms
    started, duration = ("None", "None") if start < 0 else (str(start), str(_now_ms() - start))
    tps = [(t.topic, p) for t in state.topics for p in t.partitions]
    partitions = ",".join(_tp(tp) for tp in
                          common.java_set_order(tps, common.topic_partition_hash))
    _table(["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
            "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs",
            "TransactionDurationMs", "TopicPartitions"],
           [[str(coordinator), tid, str(state.producer_id), str(state.producer_epoch),
             state.transaction_state, str(state.transaction_timeout_ms), started, duration,
             partitions]])


def _describe_producers(admin: _Admin, args: argparse.Namespace) -> None:
    tp = (args.topic, args.partition)
    try:
        producers = admin.producers([tp], args.broker_id)[tp]
    except _Failed as err:
        where = "leader" if args.broker_id is None else f"broker {args.broker_id}"
        raise _fail(f"Failed to describe producers for partition {_tp(tp)} on {where}",
                    err) from None
    rows = [[str(p.producer_id), str(p.producer_epoch), str(max(p.coordinator_epoch, -1)),
             str(p.last_sequence), str(p.last_timestamp),
             str(p.current_txn_start_offset) if p.current_txn_start_offset >= 0 else "None"]
            for p in producers]
    _table(["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
            "LastTimestamp", "CurrentTransactionStartOffset"], rows)


def _abort(admin: _Admin, args: argparse.Namespace) -> None:
    tp = (args.topic, args.partition)
    if args.start_offset is None and args.producer_id is None:
        raise CommandError("The transaction to abort must be identified either with "
                           "--start-offset (for brokers on 3.0 or above) or with "
                           "--producer-id, --producer-epoch, and --coordinator-epoch (for "
                           "older brokers)")
    if args.start_offset is None:
        if args.producer_epoch is None:
            raise CommandError("Missing required argument --producer-epoch")
        if args.coordinator_epoch is None:
            raise CommandError("Missing required argument --coordinator-epoch")
        # A coordinator epoch of -1 (a transaction hanging before its first marker) becomes
        # 0, which is at most any leader epoch (Kafka's comment and rule).
        pid, epoch, coordinator_epoch = (args.producer_id, args.producer_epoch,
                                         max(args.coordinator_epoch, 0))
    else:
        pid, epoch, coordinator_epoch = _open_transaction_at(admin, tp, args.start_offset)
    spec = AbortTransactionSpec(TopicPartition(*tp), pid, epoch, coordinator_epoch)
    try:
        admin.abort(spec)
    except _Failed as err:
        raise _fail(f"Failed to abort transaction {_spec_text(spec)}", err) from None


def _open_transaction_at(admin: _Admin, tp, start_offset: int) -> tuple[int, int, int]:
    try:
        producers = admin.producers([tp], None)[tp]
    except _Failed as err:
        raise _fail(f"Failed to validate producer state for partition {_tp(tp)}", err) from None
    for p in producers:
        if p.current_txn_start_offset >= 0 and p.current_txn_start_offset == start_offset:
            return p.producer_id, p.producer_epoch, max(p.coordinator_epoch, 0)
    raise CommandError(f"Could not find any open transactions starting at offset "
                       f"{start_offset} on partition {_tp(tp)}")


# --------------------------------------------------------------------------- find-hanging

_HANGING_HEADERS = ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                    "StartOffset", "LastTimestamp", "Duration(min)"]


def _find_hanging(admin: _Admin, args: argparse.Namespace) -> None:
    max_ms = args.max_transaction_timeout * 60_000
    tps = _partitions_to_search(admin, args.topic, args.partition, args.broker_id)
    candidates = []
    for start in range(0, len(tps), _BATCH):
        candidates += _open_transactions(admin, tps[start:start + _BATCH], args.broker_id,
                                         max_ms)
    hanging = _hanging(admin, candidates) if candidates else []
    now = _now_ms()
    _table(_HANGING_HEADERS, [
        [tp[0], str(tp[1]), str(p.producer_id), str(p.producer_epoch),
         str(max(p.coordinator_epoch, -1)), str(p.current_txn_start_offset),
         str(p.last_timestamp), str((now - p.last_timestamp) // 60_000)]
        for tp, p in hanging])


def _partitions_to_search(admin: _Admin, topic, partition, broker_id) -> list:
    if topic is not None and partition is not None:
        return [(topic, partition)]
    if topic is not None:
        topics = [topic]
    else:
        metadata = admin.metadata(None)
        topics = [t["name"] for t in metadata["topics"] if not t["is_internal"]]
    found = []
    for start in range(0, len(topics), _BATCH):
        batch = topics[start:start + _BATCH]
        metadata = admin.metadata(batch)
        for t in metadata["topics"]:
            if t["error_code"]:
                raise _fail(f"Failed to describe {len(batch)} topics",
                            _Failed(common.kafka_error_message(t["error_code"])))
            found += [(t["name"], p["partition_index"]) for p in t["partitions"]
                      if broker_id is None or broker_id in p["replica_nodes"]]
    return found


def _open_transactions(admin: _Admin, tps: list, broker_id, max_ms: int) -> list:
    """(partition, producer) for open transactions idle longer than ``max_ms``."""
    try:
        producers = admin.producers(tps, broker_id)
    except _Failed as err:
        where = "Optional.empty" if broker_id is None else f"Optional[{broker_id}]"
        raise _fail(f"Failed to describe producers for {len(tps)} partitions on broker "
                    f"{where}", err) from None
    now = _now_ms()
    return [(tp, p) for tp in common.java_set_order(tps, common.topic_partition_hash)
            for p in producers[tp]
            if p.current_txn_start_offset >= 0 and now - p.last_timestamp > max_ms]


def _hanging(admin: _Admin, candidates: list) -> list:
    by_producer: dict[int, list] = {}
    for tp, p in candidates:
        by_producer.setdefault(p.producer_id, []).append((tp, p))
    pids = common.java_set_order(list(by_producer), long_hash)
    try:
        listed = admin.listings(pids)
    except _Failed as err:
        raise _fail(f"Failed to list transactions for {len(pids)} producers", err) from None
    tids = {s.producer_id: s.transactional_id
            for states in listed.values() for s in states if s.producer_id in by_producer}
    described = _descriptions(admin, list(dict.fromkeys(tids.values())))
    hanging = []
    for pid in pids:
        state = described.get(tids.get(pid))
        in_txn = set() if state is None else {(t.topic, p) for t in state.topics
                                               for p in t.partitions}
        hanging += [(tp, p) for tp, p in by_producer[pid] if tp not in in_txn]
    return hanging


def _descriptions(admin: _Admin, tids: list[str]) -> dict:
    """{transactional id: DescribeTransactions entry}; an unknown id is left out."""
    found = {}
    for tid in tids:
        try:
            found[tid] = admin.describe(tid)[1]
        except _Failed as err:
            if "could not be found" in str(err):
                continue
            raise _fail(f"Failed to describe {len(tids)} transactions", err) from None
    return found


def _now_ms() -> int:
    return int(time.time() * 1000)


if __name__ == "__main__":
    sys.exit(main())
