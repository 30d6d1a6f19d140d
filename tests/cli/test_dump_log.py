"""``kafkapy-dump-log`` against Kafka 3.9's own ``kafka-dump-log.sh`` on the same files.

Two log dirs are written once per module through real brokers on a real ZooKeeper
(``tests/mixed``): one by a kafkapy broker, one by a Kafka 3.9 broker, each filled by
``tests/mixed/workload.write`` (multi-segment topics with keys, headers and indexes, gzip /
snappy / lz4 / zstd batches, idempotent producers, a transactional producer's commits and
abort, a compacted topic, a consumer group's offsets, hence ``__consumer_offsets`` and
``__transaction_state``), then the broker is stopped. Both tools then dump the SAME files
with the same options, and stdout, exit code and stderr must be identical (stderr's
problems per file come in the order of Kafka's Scala hash maps). Every file kind (``.log``, ``.index``, ``.timeindex``, ``.snapshot``,
``.txnindex``, unknown files) and every option (deep iteration, data printing, skipped
record metadata, index verification and sanity check, ``--max-bytes``, the decoder classes,
the offsets and transaction-log decoders) is covered.

Bad input (trailing garbage, an index pointing at the wrong batch, an index of a torn
length, an entry too small to be a batch, a batch above ``--max-message-size``, a corrupt
producer snapshot, a checkpoint file, a time index out of order) must give Kafka's
messages: stdout identical, stderr's first line identical (where Java dies, the line it
prints before its stack trace), same exit code, no Python traceback.

Every subprocess and broker wait is bounded.
"""
from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kafkapy.records.batch import crc32c
from tests.support.cluster import tool_env
from tests.support import workload
from tests.support.mixed import SINGLE_BROKER_SETTINGS, Mixed, _require_kafka
from tests.support.zookeeper_server import zookeeper_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.java, pytest.mark.timeout(900)]

KAFKA_DUMP = Path("/work/shared/kafka_2.13-3.9.0/bin/kafka-dump-log.sh")
OURS = Path(sys.executable).parent / "kafkapy-dump-log"
SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".txnindex", ".metadata", ".deleted")
OPTION_SETS = [
    [],
    ["--deep-iteration"],
    ["--print-data-log"],
    ["--print-data-log", "--skip-record-metadata"],
    ["--deep-iteration", "--skip-record-metadata"],
    ["--verify-index-only"],
    ["--index-sanity-check"],
    ["--max-bytes", "1000", "--deep-iteration"],
    ["--key-decoder-class", "kafka.serializer.StringDecoder", "--value-decoder-class"],
    ["--value-decoder-class", "org.apache.kafka.tools.api.StringDecoder",
     "--key-decoder-class", "org.apache.kafka.tools.api.StringDecoder"],
]
SETTINGS = dict(SINGLE_BROKER_SETTINGS, **{"log.cleaner.backoff.ms": "500"})


def run(exe: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=tool_env())


def compare(args: list[str], cwd: Path) -> str | None:
    """None when both tools agree on ``args``, else a short description of the difference."""
    kafka = run(KAFKA_DUMP, args, cwd)
    ours = run(OURS, args, cwd)
    assert "Traceback" not in ours.stderr, ours.stderr
    if kafka.stdout != ours.stdout:
        k, o = kafka.stdout.splitlines(), ours.stdout.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(k, o)) if a != b), min(len(k), len(o)))
        return (f"{args[:1]}..{args[2:]}: stdout differs at line {first}:\n"
                f"  kafka:   {k[first] if first < len(k) else '<end>'}\n"
                f"  kafkapy: {o[first] if first < len(o) else '<end>'}")
    if kafka.returncode != ours.returncode:
        return f"{args}: exit {kafka.returncode} (kafka) vs {ours.returncode}"
    if kafka.returncode == 0 and kafka.stderr != ours.stderr:
        return f"{args}: stderr {kafka.stderr!r} (kafka) vs {ours.stderr!r}"
    if kafka.returncode != 0 and (kafka.stderr.splitlines()[:1] != ours.stderr.splitlines()[:1]):
        return f"{args}: stderr {kafka.stderr[:300]!r} (kafka) vs {ours.stderr!r}"
    return None


def partition_files(log_dir: Path, topic_prefix: str = "") -> list[str]:
    """Relative paths of every file of every partition dir (checkpoints aside)."""
    out = []
    for d in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        if not d.name.startswith(topic_prefix):
            continue
        out += [str(f.relative_to(log_dir)) for f in sorted(d.iterdir())
                if f.is_file() and f.suffix in SUFFIXES]
    return out


def _more(bootstrap: str) -> None:
    """What the shared workload lacks: LogAppendTime batches, a transaction over many
    partitions (Kafka prints them in Scala hash-set order), and a consumer group that joined
    (group metadata with members' subscriptions and assignments)."""
    from kafka import KafkaConsumer, KafkaProducer

    from tests.support.cluster_clients import create_topic
    create_topic(bootstrap, "append-time", partitions=1,
                 configs={"message.timestamp.type": "LogAppendTime"})
    create_topic(bootstrap, "many", partitions=14)
    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type="lz4", linger_ms=20)
    for i in range(6):
        p.send("append-time", key=b"k", value=f"at-{i}".encode(), headers=[("h", b"v")])
    p.flush(30)
    p.close()
    t = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="dump-txn", acks="all")
    t.init_transactions()
    for outcome in ("commit", "abort"):
        t.begin_transaction()
        for partition in range(14):
            t.send("many", value=f"{outcome}-{partition}".encode(), partition=partition)
        t.flush(30)
        (t.commit_transaction if outcome == "commit" else t.abort_transaction)()
    t.close()
    c = KafkaConsumer("many", bootstrap_servers=bootstrap, group_id="dump-group",
                      auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        for _ in range(30):  # bounded: until the group assigned and something was read
            if c.poll(1000) and c.assignment():
                break
        c.commit()
    finally:
        c.close()


@pytest.fixture(scope="module")
def log_dirs(tmp_path_factory, zookeeper_server):  # noqa: F811
    """``{kind: log dir}``: the workload written by a kafkapy and by a Kafka 3.9 broker."""
    _require_kafka()
    out = {}
    for kind in ("kafkapy", "kafka"):
        m = Mixed(tmp_path_factory.mktemp(f"dump-{kind}"), zookeeper_server, SETTINGS)
        try:
            m.ensure_chroot()
            m.add(1, kind)
            m.launch_all(timeout=120)
            m.wait_ready([1], timeout=120)
            workload.write(m.bootstrap(1))
            _more(m.bootstrap(1))
            assert m.terminate(1) in (0, 143), m.log_text(1)[-3000:]
        finally:
            m.stop()
        out[kind] = m.log_dir(1)
    return out


@pytest.mark.parametrize("kind", ["kafkapy", "kafka"])
def test_every_file_and_option_matches_kafka(log_dirs, kind):
    log_dir = log_dirs[kind]
    files = partition_files(log_dir)
    kinds = {Path(f).suffix for f in files}
    assert {".log", ".index", ".timeindex", ".snapshot", ".txnindex"} <= kinds, kinds
    differences = []
    for options in OPTION_SETS:
        differences.append(compare(["--files", ",".join(files), *options], log_dir))
    offsets = [f for f in partition_files(log_dir, "__consumer_offsets") if f.endswith(".log")]
    txns = [f for f in partition_files(log_dir, "__transaction_state") if f.endswith(".log")]
    assert offsets and txns
    differences.append(compare(["--files", ",".join(offsets), "--offsets-decoder"], log_dir))
    differences.append(compare(["--files", ",".join(offsets), "--offsets-decoder",
                                "--skip-record-metadata"], log_dir))
    differences.append(compare(["--files", ",".join(txns), "--transaction-log-decoder"],
                               log_dir))
    # Integer and Long decoders where every key and value has the bytes they read (where one
    # is short, Kafka dies mid-line and whether that half line reaches stdout is a race).
    codecs = [f for f in partition_files(log_dir, "codec-") if f.endswith(".log")]
    differences.append(compare(["--files", ",".join(codecs), "--value-decoder-class",
                                "org.apache.kafka.tools.api.IntegerDecoder",
                                "--key-decoder-class", "kafka.serializer.LongDecoder"],
                               log_dir))
    # Each decoder on the other internal topic: Kafka's words for records it cannot read.
    differences.append(compare(["--files", ",".join(txns), "--offsets-decoder"], log_dir))
    differences.append(compare(["--files", ",".join(offsets), "--transaction-log-decoder"],
                               log_dir))
    assert [d for d in differences if d] == []


def test_decoded_internal_topics_say_what_was_written(log_dirs):
    """The decoders' output carries the workload's group, offsets and transaction."""
    log_dir = log_dirs["kafkapy"]
    offsets = [f for f in partition_files(log_dir, "__consumer_offsets") if f.endswith(".log")]
    out = run(OURS, ["--files", ",".join(offsets), "--offsets-decoder"], log_dir).stdout
    assert (f'key: {{"type":"1","data":{{"group":"{workload.GROUP}","topic":"plain",'
            f'"partition":0}}}} payload: {{"version":"3","data":{{"offset":37,') in out
    txns = [f for f in partition_files(log_dir, "__transaction_state") if f.endswith(".log")]
    out = run(OURS, ["--files", ",".join(txns), "--transaction-log-decoder"], log_dir).stdout
    assert "key: transaction_metadata::transactionalId=mixed-txn payload: producerId:" in out
    assert "state=CompleteAbort,partitions=[]" in out
    assert "transactionalId=dump-txn payload: producerId:" in out
    out = run(OURS, ["--files", ",".join(offsets), "--offsets-decoder"], log_dir).stdout
    assert '"protocolType":"consumer"' in out and '"subscription":{"topics":["many"]' in out
    txn_index = [f for f in partition_files(log_dir, "txn-") if f.endswith(".txnindex")]
    out = run(OURS, ["--files", ",".join(txn_index)], log_dir).stdout
    assert "version: 0 producerId: " in out


# --------------------------------------------------------------------------- bad input

def _segment(log_dir: Path, topic: str) -> tuple[Path, Path, Path]:
    d = log_dir / f"{topic}-0"
    log = sorted(d.glob("*.log"))[0]
    return log, log.with_suffix(".index"), log.with_suffix(".timeindex")


@pytest.fixture(scope="module")
def bad_dir(log_dirs, tmp_path_factory):
    """Damaged copies of kafkapy-written files, in one partition-like dir."""
    src = log_dirs["kafkapy"]
    out = tmp_path_factory.mktemp("bad") / "bad-0"
    out.mkdir()
    log, index, time_index = _segment(src, "plain")
    assert index.stat().st_size >= 16 and time_index.stat().st_size >= 24
    data = log.read_bytes()

    # Trailing garbage after the last whole batch.
    (out / "00000000000000000000.log").write_bytes(data + b"\x00" * 7 + b"\x01" * 20)
    shutil.copy(time_index, out / "00000000000000000000.timeindex")
    # An index whose second entry names the wrong offset (+1), and one of a torn length.
    entries = bytearray(index.read_bytes())
    rel, pos = struct.unpack_from(">ii", entries, 8)
    struct.pack_into(">ii", entries, 8, rel + 1, pos)
    (out / "00000000000000000000.index").write_bytes(bytes(entries))
    shutil.copy(log, out / "00000000000000000100.log")
    (out / "00000000000000000100.index").write_bytes(index.read_bytes()[:8] + b"\x00\x00\x01")
    # A time index whose entries go back in time.
    ti = bytearray(time_index.read_bytes())
    ts, rel = struct.unpack_from(">qi", ti, 12)
    struct.pack_into(">qi", ti, 12, 5, rel)
    order = out / "order"
    order.mkdir()
    shutil.copy(log, order / "00000000000000000000.log")
    shutil.copy(index, order / "00000000000000000000.index")
    (order / "00000000000000000000.timeindex").write_bytes(bytes(ti))
    # A segment cut in the middle of its last batch.
    (out / "00000000000000000400.log").write_bytes(data[:len(data) - 9])
    # A batch length below the smallest entry (14 bytes) after the first batch.
    first = 12 + struct.unpack_from(">i", data, 8)[0]
    broken = bytearray(data)
    struct.pack_into(">i", broken, first + 8, 5)
    (out / "00000000000000000300.log").write_bytes(bytes(broken))
    # Producer snapshots: a flipped byte (CRC) and an unknown version.
    snap = next(iter(sorted((src / "idem-0").glob("*.snapshot")))).read_bytes()
    (out / "00000000000000000010.snapshot").write_bytes(snap[:-1] + bytes([snap[-1] ^ 1]))
    (out / "00000000000000000020.snapshot").write_bytes(b"\x00\x07" + snap[2:])
    body = snap[6:]
    (out / "00000000000000000030.snapshot").write_bytes(
        b"\x00\x01" + struct.pack(">I", crc32c(body)) + body)
    for i, cut in enumerate((1, 5, 8, 20, len(snap) - 3)):  # torn snapshots
        (out / f"{40 + i:020d}.snapshot").write_bytes(snap[:cut])
    shutil.copy(src / "plain-0" / "leader-epoch-checkpoint", out / "leader-epoch-checkpoint")
    (out / "notanumber.log").write_bytes(data)
    # The same damage in several dirs: Kafka reports them in its hash map's order.
    for name in ("alpha-0", "beta-3", "gamma-12", "delta-1", "epsilon-7"):
        (out / name).mkdir()
        shutil.copy(out / "00000000000000000000.log", out / name)
        shutil.copy(out / "00000000000000000000.index", out / name)
        shutil.copy(order / "00000000000000000000.timeindex", out / name)
    return out


_MANY = ["alpha-0", "beta-3", "gamma-12", "delta-1", "epsilon-7"]
BAD_CASES = [
    ["--files", ",".join(f"{d}/00000000000000000000.{s}" for d in _MANY
                         for s in ("index", "timeindex")), "--verify-index-only"],
    ["--files", "00000000000000000000.log", "--deep-iteration"],
    ["--files", "00000000000000000000.log", "--max-bytes", "100"],
    ["--files", "00000000000000000000.index"],
    ["--files", "00000000000000000000.index", "--verify-index-only"],
    ["--files", "00000000000000000000.index", "--max-message-size", "20"],
    ["--files", "00000000000000000100.index", "--index-sanity-check"],
    ["--files", "order/00000000000000000000.timeindex"],
    ["--files", "order/00000000000000000000.timeindex", "--verify-index-only"],
    ["--files", "order/00000000000000000000.timeindex", "--index-sanity-check"],
    ["--files", "00000000000000000400.log", "--print-data-log"],
    ["--files", "00000000000000000300.log"],
    ["--files", "00000000000000000010.snapshot,00000000000000000020.snapshot,"
                "00000000000000000030.snapshot"],
    ["--files", ",".join(f"{40 + i:020d}.snapshot" for i in range(5))],
    ["--files", "leader-epoch-checkpoint"],
    ["--files", "notanumber.log"],
    ["--files", "00000000000000000999.log"],
    ["--files", "00000000000000000000.log", "--value-decoder-class", "com.example.Nope"],
    ["--files", "00000000000000000000.log,00000000000000000300.log,00000000000000000000.index"],
]


@pytest.mark.parametrize("args", BAD_CASES, ids=lambda a: " ".join(a[1:])[:60])
def test_bad_input_gives_kafkas_messages(bad_dir, args):
    assert compare(args, bad_dir) is None


def test_missing_files_option_is_a_usage_error(tmp_path):
    kafka = run(KAFKA_DUMP, ["--print-data-log"], tmp_path)
    ours = run(OURS, ["--print-data-log"], tmp_path)
    assert kafka.returncode == ours.returncode == 1
    assert ours.stderr.splitlines()[0] == kafka.stderr.splitlines()[0] \
        == 'Missing required argument "[files]"'


# --------------------------------------------------------------------------- legacy formats

@pytest.fixture(scope="module")
def legacy_dir(tmp_path_factory, zookeeper_server):  # noqa: F811
    """A Kafka 3.9 broker on inter.broker.protocol 2.8 with message formats 0.10.2 and 0.9.0:
    magic 1 and magic 0 message sets, plain and gzip/snappy/lz4 compressed, LogAppendTime."""
    _require_kafka()
    from kafka import KafkaProducer

    from tests.support.cluster_clients import create_topic
    settings = dict(SETTINGS, **{"inter.broker.protocol.version": "2.8",
                                 "log.message.format.version": "0.10.2"})
    m = Mixed(tmp_path_factory.mktemp("dump-legacy"), zookeeper_server, settings)
    try:
        m.ensure_chroot()
        m.add(1, "kafka")
        m.launch_all(timeout=120)
        m.wait_ready([1], timeout=120)
        bootstrap = m.bootstrap(1)
        create_topic(bootstrap, "v1", partitions=1)
        create_topic(bootstrap, "v0", partitions=1,
                     configs={"message.format.version": "0.9.0"})
        create_topic(bootstrap, "v1gz", partitions=1, configs={"compression.type": "gzip"})
        create_topic(bootstrap, "v0lz4", partitions=1,
                     configs={"message.format.version": "0.9.0", "compression.type": "lz4"})
        create_topic(bootstrap, "v1snappy", partitions=1,
                     configs={"compression.type": "snappy",
                              "message.timestamp.type": "LogAppendTime"})
        for codec in (None, "gzip", "snappy", "lz4"):
            p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec,
                              linger_ms=20, enable_idempotence=False)
            for topic in ("v1", "v0", "v1gz", "v0lz4", "v1snappy"):
                for i in range(4):
                    p.send(topic, key=f"k{i}".encode() if i % 2 else None,
                           value=f"{codec}-{i}".encode())
            p.flush(30)
            p.close()
        assert m.terminate(1) in (0, 143), m.log_text(1)[-3000:]
    finally:
        m.stop()
    return m.log_dir(1)


def test_legacy_message_sets_match_kafka(legacy_dir):
    files = partition_files(legacy_dir, "v")
    magics = set()
    for f in files:
        if f.endswith(".log"):
            data = (legacy_dir / f).read_bytes()
            magics.add(data[16])
    assert magics == {0, 1}, magics
    differences = [compare(["--files", ",".join(files), *options], legacy_dir)
                   for options in OPTION_SETS]
    assert [d for d in differences if d] == []
