"""kcat end to end: produce 10,000 records with keys and headers under every
codec, read them back in order, query offsets by timestamp, list metadata.

kcat cannot create topics or set per-record timestamps or headers, so:
- the topic is created by kcat's first metadata request (broker-side
  auto.create.topics.enable, Kafka's default) and checked with ``kcat -L``;
- every record carries the same two headers given with ``-H``;
- timestamps are librdkafka's CreateTime at produce time: they must lie within
  the window the producer ran in, and ``kcat -Q`` look-ups are checked against
  the timestamps actually consumed.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import time

import pytest

from tests.support import client_common as common

pytestmark = [
    pytest.mark.kcat,
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat binary not installed"),
]

CLIENT = "kcat"
KCAT = shutil.which("kcat") or "kcat"


def kcat_headers(codec: str) -> list[tuple[str, bytes]]:
    return [("e2e-client", b"kcat"), ("e2e-codec", codec.encode())]


def run_kcat(args: list[str], *, input: bytes | None = None, timeout: float = 120) -> bytes:
    proc = subprocess.run([KCAT, *args], input=input, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"kcat {' '.join(args)} exited {proc.returncode}\nstderr:\n{proc.stderr.decode(errors='replace')[-4000:]}")
    return proc.stdout


def _produce(bootstrap: str, topic: str, codec: str) -> tuple[int, int]:
    lines = b"".join(common.key(i) + b"\t" + common.value(i) + b"\n" for i in range(common.N_RECORDS))
    args = ["-P", "-b", bootstrap, "-t", topic, "-p", "0", "-K", "\t", "-z", codec,
            "-X", "linger.ms=20", "-X", "message.timeout.ms=120000"]
    for name, val in kcat_headers(codec):
        args += ["-H", f"{name}={val.decode()}"]
    t0 = int(time.time() * 1000) - 1
    out = run_kcat(args, input=lines)
    t1 = int(time.time() * 1000) + 1
    assert out == b"", out[:200]
    return t0, t1


def _metadata(bootstrap: str, topic: str) -> None:
    md = json.loads(run_kcat(["-L", "-J", "-b", bootstrap, "-t", topic]))
    assert len(md["brokers"]) == 1, md
    broker_id = md["brokers"][0]["id"]
    assert md["brokers"][0]["name"] == bootstrap, md["brokers"]
    (t,) = md["topics"]
    assert t["topic"] == topic and "error" not in t, t
    assert [p["partition"] for p in t["partitions"]] == [0], t
    assert t["partitions"][0]["leader"] == broker_id, t
    plain = run_kcat(["-L", "-b", bootstrap, "-t", topic]).decode()
    assert f'topic "{topic}" with 1 partitions:' in plain, plain
    assert re.search(rf"partition 0, leader {broker_id}, replicas: {broker_id}, isrs: {broker_id}", plain), plain


def _consume(bootstrap: str, topic: str) -> list[common.Got]:
    out = run_kcat(["-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
                    "-f", "%o\t%k\t%s\t%h\t%T\t%K\t%S\n"])
    lines = out.split(b"\n")
    assert lines[-1] == b"", lines[-1][:200]
    got = []
    for line in lines[:-1]:
        off, k, v, hdrs, ts, klen, vlen = line.split(b"\t")
        assert (int(klen), int(vlen)) == (len(k), len(v)), line[:200]
        parsed = []
        for h in hdrs.split(b","):
            name, _, val = h.partition(b"=")
            parsed.append((name.decode(), val))
        got.append(common.Got(int(off), k, v, parsed, int(ts)))
    return got


def _consume_json(bootstrap: str, topic: str) -> list[dict]:
    out = run_kcat(["-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-J"])
    return [json.loads(line) for line in out.splitlines()]


def _query(bootstrap: str, topic: str, ts: int) -> int:
    out = run_kcat(["-Q", "-b", bootstrap, "-t", f"{topic}:0:{ts}"]).decode()
    m = re.search(rf"^{re.escape(topic)} \[0\] offset (-?\d+)$", out, re.M)
    assert m, f"unexpected kcat -Q output: {out!r}"
    return int(m.group(1))


@pytest.mark.parametrize("codec", common.CODECS)
def test_roundtrip(broker, codec):
    topic = common.topic_name(CLIENT, codec)
    t0, t1 = _produce(broker.bootstrap, topic, codec)
    _metadata(broker.bootstrap, topic)

    got = _consume(broker.bootstrap, topic)
    expected = [common.Expected(i, common.key(i), common.value(i), kcat_headers(codec), None)
                for i in range(common.N_RECORDS)]
    common.check_records(got, expected, what=f"{CLIENT}/{codec}")
    stamps = [g.timestamp for g in got]
    bad = [(g.offset, g.timestamp) for g in got if not t0 <= g.timestamp <= t1]
    assert not bad, f"CreateTime outside the produce window [{t0}, {t1}]: {bad[:5]}"

    records = _consume_json(broker.bootstrap, topic)
    assert len(records) == common.N_RECORDS
    assert {r["tstype"] for r in records} == {"create"}
    assert [r["ts"] for r in records] == stamps
    assert all(r["headers"] == ["e2e-client", "kcat", "e2e-codec", codec] for r in records), records[0]

    # Offsets: -2 earliest, -1 latest, and by timestamp against what was consumed.
    assert _query(broker.bootstrap, topic, -2) == 0
    assert _query(broker.bootstrap, topic, -1) == common.N_RECORDS
    for k in (0, 1234, common.N_RECORDS // 2, common.N_RECORDS - 1):
        target = stamps[k]
        want = min(j for j, ts in enumerate(stamps) if ts >= target)
        assert _query(broker.bootstrap, topic, target) == want, f"kcat -Q at ts of record {k}"
    assert _query(broker.bootstrap, topic, max(stamps) + 1) == -1
    common.check_librdkafka_stored_codec(broker.bootstrap, broker.log_dir, topic, codec)
