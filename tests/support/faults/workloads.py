"""The workloads of a fault run: confluent-kafka clients, one thread each, recording every
operation into a ``History`` (format in ``history.py``).

- ``ProducerWorkload``: idempotent producers (acks=all, enable.idempotence) sending unique
  values ``"<process>-<seq>"`` to one topic. Each send is an invocation, completed by its
  delivery report: ``ok`` with partition and offset; ``fail`` when the client knows the record
  was never appended (``produce`` refused it, or a delivery error that rules out an append);
  ``info`` otherwise (timeouts, purged while in flight): it may or may not be in the log.
- ``GroupConsumerWorkload``: consumers in one group subscribed to a topic, auto-commit off.
  Each non-empty poll is recorded with its records and the consumer's position epoch (one
  more at every assignment); after each poll the consumer commits, asynchronously and one
  commit in flight at a time, the next offsets of what it polled in this epoch and has not
  committed yet; each commit is an invocation completed by the commit callback (matched by
  its offsets), one in flight longer than ``COMMIT_STALE_S`` is left without a completion
  (unknown) unless its callback comes later.
- ``TxnCopierWorkload``: read_committed consumers in a group over an input topic, each with a
  transactional producer copying every polled batch into an output topic in one transaction
  (the value ``"<input value>@<partition>.<offset>><process>.<txn>"``: its input record, unique
  per transaction), its input offsets
  committed with ``send_offsets_to_transaction``. Every ``abort_every``-th transaction is
  aborted on purpose and its batch copied again. A transaction is an invocation completed
  ``ok`` (the intended commit or abort returned), ``fail`` (it ended aborted: an abortable
  error, or a fatal one before commit was called) or ``info`` (commit called, outcome
  unknown); after a fatal error or an unknown outcome the copier takes a new producer with
  the same transactional id (which settles the old transaction) and starts again from the
  group's committed offsets.

Every workload is bounded in ops (per client) and in seconds, never spins without sleeping,
and ``stop()`` returns within a bounded time even when the cluster is cut off: client calls
carry timeouts, and a client close that outlives its bound is left to its daemon thread.

``final_reads(bootstrap, topic, history)`` reads every partition of a topic from offset 0 to
its end, read_uncommitted (to the high watermark) and read_committed (to the last stable
offset), one ``read-final`` op each, then the offsets every group of the history committed on
the topic, one ``read-offsets`` op per group.
"""
from __future__ import annotations

import logging
import threading
import time
import traceback
import uuid

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)

CALL_TIMEOUT_S = 10.0          # every blocking client call
STOP_TIMEOUT_S = 30.0          # stop(): how long the threads get to finish
COMMIT_STALE_S = 15.0          # a consumer's commit in flight longer is left unknown
CLIENT_SETTINGS = {
    "socket.timeout.ms": 5000,
    "topic.metadata.refresh.interval.ms": 2000,
    "reconnect.backoff.max.ms": 1000,
    "log_level": 3,
}
# Delivery errors after which the record is certainly not in the log: refused for what it
# is, so that no earlier attempt of it can have been appended either. Everything else
# (timeouts, transport, leadership errors after a retry, purged) is unknown.
DEFINITE_SEND_ERRORS = frozenset({
    KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_RECORD,
    KafkaError.RECORD_LIST_TOO_LARGE, KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.INVALID_REQUIRED_ACKS,
})
# Commit errors the group coordinator returns without storing anything.
DEFINITE_COMMIT_ERRORS = frozenset({
    KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.REBALANCE_IN_PROGRESS, KafkaError.FENCED_INSTANCE_ID, KafkaError._NO_OFFSET,
    KafkaError._STATE,
})


# librdkafka's log lines (connection refused, timed out) are expected during faults: the
# clients log to a logger that drops them.
_QUIET = logging.getLogger("tests.faults.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
_QUIET.setLevel(logging.CRITICAL + 1)


def _decode(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("utf-8", "replace")


class _Workload:
    """Threads of one kind of client, each running ``_run(process, index)`` until the stop
    event, its op bound or the deadline."""

    kind = "client"

    def __init__(self, clients: int, max_ops: int, max_seconds: float, name: str | None):
        self.clients = clients
        self.max_ops = max_ops
        self.max_seconds = max_seconds
        self.name = name or self.kind
        self.bootstrap = ""
        self.history = None
        self.errors: list[str] = []     # unexpected exceptions of the client threads
        # process -> the partitions its group assigned it last, [(topic, partition)]
        self.assignments: dict[str, list[tuple[str, int]]] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._deadline = 0.0
        self._stop_by = 0.0

    def start(self, bootstrap: str, history) -> "_Workload":
        self.bootstrap = bootstrap
        self.history = history
        self._deadline = time.monotonic() + self.max_seconds
        for index in range(self.clients):
            process = f"{self.name}-{index}"
            thread = threading.Thread(target=self._guarded, args=(process, index),
                                      name=process, daemon=True)
            self._threads.append(thread)
            thread.start()
        return self

    def _guarded(self, process: str, index: int) -> None:
        try:
            self._run(process, index)
        except Exception as exc:  # noqa: BLE001 -- a thread's failure is reported, not lost
            where = traceback.extract_tb(exc.__traceback__)[-1]
            self.errors.append(f"{process}: {exc!r} at {where.name}:{where.lineno}")

    def running(self) -> bool:
        return not self._stop.is_set() and time.monotonic() < self._deadline

    def done(self) -> bool:
        return not any(thread.is_alive() for thread in self._threads)

    def wait(self, timeout: float) -> bool:
        """Wait until every client reached its bound; True when they all did."""
        end = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))
        return self.done()

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop every client; returns within about ``timeout`` seconds (a call in flight
        ends at its own timeout, ``CALL_TIMEOUT_S``; a close is cut short at the bound)."""
        self._stop_by = time.monotonic() + timeout
        self._stop.set()
        self.wait(timeout)

    def _close_consumer(self, consumer: Consumer) -> None:
        bound = CALL_TIMEOUT_S
        if self._stop.is_set():
            bound = min(bound, max(0.5, self._stop_by - time.monotonic() - 0.5))
        _close_bounded(consumer, bound)

    def _run(self, process: str, index: int) -> None:
        raise NotImplementedError


class ProducerWorkload(_Workload):
    """Idempotent acks=all producers of unique values; ``max_ops`` sends per producer."""

    kind = "producer"

    def __init__(self, topic: str, producers: int = 2, max_ops: int = 1000,
                 max_seconds: float = 60.0, interval: float = 0.01, window: int = 50,
                 delivery_timeout_ms: int = 60000, name: str | None = None) -> None:
        super().__init__(producers, max_ops, max_seconds, name)
        self.topic = topic
        self.interval = interval
        self.window = window
        self.delivery_timeout_ms = delivery_timeout_ms

    def _producer(self) -> Producer:
        # message.timeout.ms outlasts every fault of the scenarios: once a message times
        # out, librdkafka bumps the producer epoch and sends the messages still of unknown
        # outcome again under the new epoch and sequence 0, where no broker can recognize
        # a batch it already appended (measured: duplicates on kafkapy and Kafka 3.9 alike
        # with 15 s).  Retried within one epoch, they are deduplicated.
        return Producer({**CLIENT_SETTINGS, "bootstrap.servers": self.bootstrap,
                         "enable.idempotence": True, "acks": "all", "linger.ms": 5,
                         "message.timeout.ms": self.delivery_timeout_ms,
                         "request.timeout.ms": 5000, "logger": _QUIET})

    def _run(self, process: str, index: int) -> None:
        history = self.history
        outstanding = set()
        fatal = threading.Event()

        def delivered(invocation, err, msg):
            outstanding.discard(invocation["index"])
            if err is None:
                history.complete(invocation, "ok", partition=msg.partition(),
                                 offset=msg.offset())
            else:
                if err.fatal():
                    fatal.set()
                definite = err.code() in DEFINITE_SEND_ERRORS
                history.complete(invocation, "fail" if definite else "info", error=err.name())

        producer = self._producer()
        seq = 0
        while self.running() and seq < self.max_ops:
            if fatal.is_set():          # e.g. an out-of-order sequence: a new producer id
                self._close(producer, outstanding)
                producer, outstanding, fatal = self._producer(), set(), threading.Event()
            if len(outstanding) >= self.window:
                producer.poll(0.05)
                continue
            value = f"{process}-{seq}"
            seq += 1
            invocation = history.invoke(process, "send", value, topic=self.topic)
            try:
                producer.produce(self.topic, value.encode(), on_delivery=(
                    lambda err, msg, inv=invocation: delivered(inv, err, msg)))
                outstanding.add(invocation["index"])
            except (BufferError, KafkaException) as exc:
                history.complete(invocation, "fail", error=repr(exc))
            producer.poll(self.interval)
        self._close(producer, outstanding)

    def _close(self, producer: Producer, outstanding: set) -> None:
        """Wait a bounded time for the deliveries, then purge: what is left completes as
        info (purged in flight) or stays an invocation without completion."""
        end = time.monotonic() + CALL_TIMEOUT_S
        while outstanding and time.monotonic() < end and not self._stop.is_set():
            producer.poll(0.1)
        producer.flush(0 if self._stop.is_set() else 1.0)
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        producer.poll(0)


class GroupConsumerWorkload(_Workload):
    """Consumers of one group over one topic; ``max_ops`` polls per consumer."""

    kind = "consumer"

    def __init__(self, topic: str, group: str | None = None, consumers: int = 2,
                 max_ops: int = 100000, max_seconds: float = 60.0,
                 isolation: str = "read_uncommitted", poll_timeout: float = 0.2,
                 name: str | None = None) -> None:
        super().__init__(consumers, max_ops, max_seconds, name)
        self.topic = topic
        self.group = group or f"{topic}-group"
        self.isolation = isolation
        self.poll_timeout = poll_timeout

    def _run(self, process: str, index: int) -> None:
        history = self.history
        # consumed: (topic, partition) -> next offset polled in this epoch; attempted: the
        # offsets of the commits made since (a commit that did not succeed is tried again);
        # pending: the offsets of each commit in flight -> its invocations.
        state = {"epoch": 0, "consumed": {}, "attempted": {}, "pending": {}}

        def committed(err, partitions):
            key = frozenset((tp.topic, tp.partition, tp.offset) for tp in partitions or [])
            waiting = state["pending"].get(key)
            if not waiting and len(state["pending"]) == 1:
                waiting = next(iter(state["pending"].values()))
            if not waiting:
                return
            invocation = waiting.pop(0)
            state["pending"] = {k: v for k, v in state["pending"].items() if v}
            error = err or next((tp.error for tp in partitions or [] if tp.error), None)
            if error is None:
                history.complete(invocation, "ok")
                return
            definite = error.code() in DEFINITE_COMMIT_ERRORS
            history.complete(invocation, "fail" if definite else "info", error=error.name())
            for topic, partition, offset in invocation["value"]:
                if state["attempted"].get((topic, partition)) == offset:
                    del state["attempted"][(topic, partition)]

        def assigned(_consumer, partitions):
            state["epoch"] += 1
            state["consumed"] = {}
            state["attempted"] = {}
            self.assignments[process] = [(tp.topic, tp.partition) for tp in partitions]

        consumer = _group_consumer(self.bootstrap, self.group, self.topic, self.isolation,
                                   assigned, on_commit=committed)
        polls = 0
        last_commit = 0.0
        try:
            while self.running() and polls < self.max_ops:
                messages = consumer.consume(num_messages=200, timeout=self.poll_timeout)
                polls += 1
                records = [[m.topic(), m.partition(), m.offset(), _decode(m.value())]
                           for m in messages if m.error() is None]
                if records:
                    history.record(process, "ok", "poll", records, group=self.group,
                                   isolation=self.isolation, epoch=state["epoch"])
                    for topic, partition, offset, _ in records:
                        state["consumed"][(topic, partition)] = offset + 1
                # One commit in flight at a time; one that outlived COMMIT_STALE_S stays
                # unknown (its completion, if it ever comes, is still recorded).
                if not state["pending"] or time.monotonic() - last_commit > COMMIT_STALE_S:
                    if self._commit(consumer, process, state):
                        last_commit = time.monotonic()
        finally:
            self._close_consumer(consumer)

    def _commit(self, consumer: Consumer, process: str, state: dict) -> bool:
        """Commit what was consumed since the last commit; False when there is nothing."""
        due = {key: offset for key, offset in state["consumed"].items()
               if state["attempted"].get(key) != offset}
        if not due:
            return False
        value = [[t, p, o] for (t, p), o in sorted(due.items())]
        invocation = self.history.invoke(process, "commit", value, group=self.group)
        state["attempted"].update(due)
        key = frozenset((t, p, o) for t, p, o in value)
        state["pending"].setdefault(key, []).append(invocation)
        try:
            consumer.commit(offsets=[TopicPartition(t, p, o) for t, p, o in value],
                            asynchronous=True)
        except KafkaException as exc:
            state["pending"][key].remove(invocation)
            state["pending"] = {k: v for k, v in state["pending"].items() if v}
            for item in due:
                state["attempted"].pop(item, None)
            error = exc.args[0]
            definite = error.code() in DEFINITE_COMMIT_ERRORS
            self.history.complete(invocation, "fail" if definite else "info",
                                  error=error.name())
        return True


def copied_value(output_value: str) -> str:
    """The input value a copier's output value was copied from."""
    return output_value.split(">", 1)[0].rsplit("@", 1)[0]


class TxnCopierWorkload(_Workload):
    """Transactional copiers from ``input_topic`` to ``output_topic``; ``max_ops``
    transactions per copier."""

    kind = "copier"

    def __init__(self, input_topic: str, output_topic: str, group: str | None = None,
                 copiers: int = 1, max_ops: int = 1000, max_seconds: float = 60.0,
                 abort_every: int = 5, batch: int = 50, transaction_timeout_ms: int = 10000,
                 name: str | None = None) -> None:
        super().__init__(copiers, max_ops, max_seconds, name)
        self.input_topic = input_topic
        self.output_topic = output_topic
        self.group = group or f"{output_topic}-copier"
        self.abort_every = abort_every
        self.batch = batch
        self.transaction_timeout_ms = transaction_timeout_ms
        self.txn_prefix = f"{self.group}-{uuid.uuid4().hex[:6]}"

    def _consumer(self, process: str, state: dict) -> Consumer:
        def assigned(_consumer, partitions):
            state["epoch"] += 1
            self.assignments[process] = [(tp.topic, tp.partition) for tp in partitions]

        return _group_consumer(self.bootstrap, self.group, self.input_topic, "read_committed",
                               assigned)

    def _producer(self, index: int) -> Producer | None:
        producer = Producer({**CLIENT_SETTINGS, "bootstrap.servers": self.bootstrap,
                             "transactional.id": f"{self.txn_prefix}-{index}",
                             "transaction.timeout.ms": self.transaction_timeout_ms,
                             "message.timeout.ms": self.transaction_timeout_ms,
                             "linger.ms": 5, "logger": _QUIET})
        while self.running():
            try:
                # in short calls, so that stop() is not held (a timed-out call is resumed
                # by the next)
                producer.init_transactions(2.0)
                return producer
            except KafkaException as exc:
                if exc.args[0].fatal():
                    self.errors.append(f"{self.txn_prefix}-{index}: init_transactions: "
                                       f"{exc.args[0].name()}")
                    return None
                time.sleep(0.2)
        return None

    def _run(self, process: str, index: int) -> None:
        state = {"epoch": 0}
        consumer = self._consumer(process, state)
        producer = self._producer(index)
        txns = 0
        try:
            while producer is not None and self.running() and txns < self.max_ops:
                messages = consumer.consume(num_messages=self.batch, timeout=0.2)
                records = [[m.topic(), m.partition(), m.offset(), _decode(m.value())]
                           for m in messages if m.error() is None]
                if not records:
                    continue
                self.history.record(process, "ok", "poll", records, group=self.group,
                                    isolation="read_committed", epoch=state["epoch"])
                intent = "abort" if self.abort_every and txns % self.abort_every == \
                    self.abort_every - 1 else "commit"
                healthy = self._copy(producer, consumer, process, txns, records, intent,
                                     state)
                txns += 1
                if not healthy:
                    _close_producer(producer)
                    producer = self._producer(index)
                    _rewind_to_committed(consumer, records, state, self.running)
        finally:
            if producer is not None:
                _close_producer(producer)
            self._close_consumer(consumer)

    def _copy(self, producer: Producer, consumer: Consumer, process: str, txn: int,
              records: list, intent: str, state: dict) -> bool:
        """One transaction copying ``records``; False when the producer must be replaced."""
        delivered = {}

        def on_delivery(err, msg):
            if err is None:
                delivered[_decode(msg.value())] = (msg.partition(), msg.offset())

        # an output value names its input record: the input may hold one value twice (a
        # producer's duplicate), and each copy must still be traced to its own record
        values = [f"{value}@{partition}.{offset}>{process}.{txn}"
                  for _, partition, offset, value in records]
        next_offsets = {}
        for topic, partition, offset, _ in records:
            next_offsets[(topic, partition)] = max(next_offsets.get((topic, partition), 0),
                                                   offset + 1)
        offsets = [[t, p, o] for (t, p), o in sorted(next_offsets.items())]
        invocation = self.history.invoke(process, "txn", {
            "writes": [[self.output_topic, None, None, v] for v in values],
            "offsets": offsets, "intent": intent, "copies": records}, group=self.group)

        def complete(type_: str, end_time: float | None, **fields) -> None:
            writes = [[self.output_topic, *delivered.get(v, (None, None)), v] for v in values]
            self.history.complete(invocation, type_, {"writes": writes, "offsets": offsets,
                                                      "intent": intent, "copies": records},
                                  end_time=end_time, **fields)

        end_time = None
        try:
            producer.begin_transaction()
            for value in values:
                self._produce(producer, value, on_delivery)
            producer.send_offsets_to_transaction(
                [TopicPartition(t, p, o) for t, p, o in offsets],
                consumer.consumer_group_metadata(), CALL_TIMEOUT_S)
            if intent == "abort":
                # Written first, so the log holds the records the abort marker cancels.
                producer.flush(CALL_TIMEOUT_S)
            end_time = time.monotonic()
            if intent == "commit":
                self._retrying(producer.commit_transaction)
            else:
                self._retrying(producer.abort_transaction)
                _rewind(consumer, records, state)
            complete("ok", end_time)
            return True
        except KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                try:
                    producer.abort_transaction(CALL_TIMEOUT_S)
                    complete("fail", end_time, error=error.name())
                    _rewind(consumer, records, state)
                    return True
                except KafkaException as abort_exc:
                    error = abort_exc.args[0]
            # Fatal, or the end of the transaction timed out: before commit was called (or
            # when the intent was to abort) the transaction cannot commit (the coordinator
            # aborts it, at the latest when the next producer with this id fences it);
            # after, its outcome is unknown.
            unknown = end_time is not None and intent == "commit"
            complete("info" if unknown else "fail", end_time, error=error.name())
            return False

    def _retrying(self, end_transaction) -> None:
        """Commit or abort, called again after a retriable error (a timeout: the client
        keeps the transaction's state for the next call), for a bounded time."""
        give_up = time.monotonic() + 3 * CALL_TIMEOUT_S
        while True:
            try:
                end_transaction(CALL_TIMEOUT_S)
                return
            except KafkaException as exc:
                if (not exc.args[0].retriable() or self._stop.is_set()
                        or time.monotonic() > give_up):
                    raise

    def _produce(self, producer: Producer, value: str, on_delivery) -> None:
        end = time.monotonic() + CALL_TIMEOUT_S
        while True:
            try:
                producer.produce(self.output_topic, value.encode(), on_delivery=on_delivery)
                return
            except BufferError:
                if time.monotonic() > end:
                    raise KafkaException(KafkaError(KafkaError._QUEUE_FULL))
                producer.poll(0.05)


def _group_consumer(bootstrap: str, group: str, topic: str, isolation: str, on_assign,
                    **settings) -> Consumer:
    """A member of ``group`` subscribed to ``topic``: commits by hand, from the earliest
    offset, with a 6 s session; ``settings`` adds to the client's configuration."""
    consumer = Consumer({**CLIENT_SETTINGS, "bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": isolation, "session.timeout.ms": 6000,
                         "heartbeat.interval.ms": 1000, "logger": _QUIET, **settings})
    consumer.subscribe([topic], on_assign=on_assign)
    return consumer


def _rewind(consumer: Consumer, records: list, state: dict) -> None:
    """Seek back to the first record of an aborted batch, so it is copied again (the
    partitions given away since then are skipped: their new owner starts from the group's
    committed offsets). A seek starts a new epoch: the next poll may go back."""
    state["epoch"] += 1
    first = {}
    for topic, partition, offset, _ in records:
        first[(topic, partition)] = min(first.get((topic, partition), offset), offset)
    assigned = {(tp.topic, tp.partition) for tp in consumer.assignment()}
    for (topic, partition), offset in first.items():
        if (topic, partition) in assigned:
            try:
                consumer.seek(TopicPartition(topic, partition, offset))
            except KafkaException:
                pass     # the partition went away in a rebalance meanwhile


def _rewind_to_committed(consumer: Consumer, records: list, state: dict,
                         running) -> None:
    """After a producer was replaced (its transaction's outcome unknown, settled by the new
    producer's init): start again from the group's committed offsets, from the beginning of
    a partition with none; when the coordinator does not answer, from the batch's start."""
    state["epoch"] += 1
    committed = None
    while committed is None and running():
        try:
            committed = consumer.committed(consumer.assignment(), timeout=CALL_TIMEOUT_S)
        except KafkaException:
            time.sleep(0.2)
    if committed is None:
        _rewind(consumer, records, state)
        return
    for tp in committed:
        start = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
        try:
            consumer.seek(TopicPartition(tp.topic, tp.partition, start))
        except KafkaException:
            pass     # the partition went away in a rebalance meanwhile


def _close_bounded(consumer: Consumer, timeout: float = CALL_TIMEOUT_S) -> None:
    """Close a consumer in a daemon thread: a close that cannot reach the coordinator (the
    cluster is cut) is left behind instead of holding the workload's stop."""
    closer = threading.Thread(target=consumer.close, daemon=True)
    closer.start()
    closer.join(timeout)


def _close_producer(producer: Producer) -> None:
    try:
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        producer.poll(0)
    except KafkaException:
        pass     # a fenced (fatal) producer refuses even this: it is dropped as it is


def final_reads(bootstrap: str, topic: str, history, timeout: float = 60.0) -> None:
    """Read every partition of ``topic`` from offset 0 to its end, at both isolations, into
    ``history`` (one read-final op per partition and isolation: ok when it reached the end,
    info with what it read when ``timeout`` ran out first); then the offsets committed on
    ``topic`` by every group the history commits for (one read-offsets op per group)."""
    deadline = time.monotonic() + timeout
    partitions = _partitions(bootstrap, topic, deadline)
    for isolation in ("read_uncommitted", "read_committed"):
        for partition in partitions:
            _final_read(bootstrap, topic, partition, isolation, history, deadline)
    for group in _groups_committing(history, topic):
        _read_offsets(bootstrap, topic, partitions, group, history, deadline)


def _groups_committing(history, topic: str) -> list[str]:
    groups = set()
    for op in history.ops:
        if op["type"] != "invoke":
            continue
        if op["f"] == "commit":
            offsets = op["value"]
        elif op["f"] == "txn":
            offsets = op["value"].get("offsets", [])
        else:
            continue
        if any(t == topic for t, _, _ in offsets):
            groups.add(op["group"])
    return sorted(groups)


def _read_offsets(bootstrap, topic, partitions, group, history, deadline) -> None:
    consumer = Consumer({**CLIENT_SETTINGS, "bootstrap.servers": bootstrap,
                         "group.id": group, "enable.auto.commit": False, "logger": _QUIET})
    try:
        while True:
            try:
                committed = consumer.committed(
                    [TopicPartition(topic, p) for p in partitions], timeout=CALL_TIMEOUT_S)
                history.record("final", "ok", "read-offsets",
                               [[tp.partition, max(tp.offset, -1)] for tp in committed],
                               topic=topic, group=group)
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    history.record("final", "fail", "read-offsets", [], topic=topic,
                                   group=group)
                    return
                time.sleep(0.2)
    finally:
        _close_bounded(consumer)


def _partitions(bootstrap: str, topic: str, deadline: float) -> list[int]:
    producer = Producer({**CLIENT_SETTINGS, "bootstrap.servers": bootstrap,
                         "logger": _QUIET})
    try:
        while True:
            try:
                metadata = producer.list_topics(topic, timeout=CALL_TIMEOUT_S)
                found = metadata.topics.get(topic)
                if found is not None and found.error is None and found.partitions:
                    return sorted(found.partitions)
            except KafkaException:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"no metadata for {topic} from {bootstrap}")
            time.sleep(0.2)
    finally:
        producer.flush(0)


def _final_read(bootstrap, topic, partition, isolation, history, deadline) -> None:
    consumer = Consumer({**CLIENT_SETTINGS, "bootstrap.servers": bootstrap,
                         "group.id": f"final-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True, "logger": _QUIET})
    tp = TopicPartition(topic, partition, 0)
    records: list[list] = []
    end = None
    try:
        while end is None and time.monotonic() < deadline:
            try:
                end = consumer.get_watermark_offsets(tp, timeout=CALL_TIMEOUT_S)[1]
            except KafkaException:
                time.sleep(0.2)
        if end is not None:
            consumer.assign([tp])
            position = 0
            while position < end and time.monotonic() < deadline:
                for message in consumer.consume(num_messages=500, timeout=0.1):
                    if message.error() is None:
                        if message.offset() < end:
                            records.append([message.offset(), _decode(message.value())])
                        position = max(position, message.offset() + 1)
                # A read_committed consumer passes markers and aborted records without
                # returning them: its position says how far it got.
                reached = consumer.position([tp])[0].offset
                position = max(position, reached if reached is not None else 0)
        complete = end is not None and position >= end
        history.record("final", "ok" if complete else "info", "read-final", records,
                       topic=topic, partition=partition, isolation=isolation,
                       end=end if end is not None else 0)
    finally:
        _close_bounded(consumer)
