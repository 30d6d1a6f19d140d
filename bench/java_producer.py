"""Kafka's own producer as the rf3 workload's second client: Kafka 3.9's
``kafka-producer-perf-test.sh`` (the Java producer, kafka-clients 3.9).

Why a second client: librdkafka's idempotent producer keeps one Produce request per
partition in flight (its window of 5 in-flight requests is compared with the count of
in-flight *messages*), so the rf3 figures with it measure one batch per acknowledgement
round trip.  The Java producer with ``enable.idempotence=true`` keeps up to
``max.in.flight.requests.per.connection`` (5) requests in flight, so a follower's fetch
carries whatever has arrived since its last one: this measures what replication costs the
brokers when the client pipelines, as production clients do.

One process writes ``count`` records of ``size`` bytes to every partition of ``topic``
(the producer's default partitioner), flat out (``--throughput -1``), with the librdkafka
driver's settings that both clients know (acks, enable.idempotence, linger.ms, batch.size,
compression.type; the Java producer's ``buffer.memory`` default is the 32 MiB the librdkafka
driver is capped at; linger.ms and batch.size must be passed, the Java defaults being 0 ms
and 16 KiB in 3.9), with a 512 MiB heap.  It runs at normal priority, in a session (so an
autogroup) of its own like each broker: unlike the librdkafka producer it sleeps while it
waits for an answer, so the CPU it takes is the client's own work, not a busy wait.

The tool prints one summary line when done (``parse_summary``); its rate and latencies are
the tool's own: from its start of sending to the last acknowledgement, and per record from
send() to the callback (time queued in the client included, as the librdkafka driver's).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers import DEFAULT_KAFKA_HOME, KAFKA_SCRIPT_ENV  # noqa: E402

# The Kafka the kafka3 cluster runs (peers.find_kafka_home's place).
KAFKA_HOME = Path(os.environ.get("KAFKA_HOME") or DEFAULT_KAFKA_HOME)
SCRIPT = KAFKA_HOME / "bin" / "kafka-producer-perf-test.sh"
HEAP = "-Xmx512m"
# The librdkafka settings the Java producer also has, under the same names.
SHARED_SETTINGS = ("acks", "enable.idempotence", "linger.ms", "batch.size", "compression.type")

_SUMMARY = re.compile(
    r"(?P<records>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mb>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+|NaN) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99\.9th\.")


def available() -> bool:
    return SCRIPT.is_file()


def parse_summary(text: str) -> dict | None:
    """The last summary line of the tool's output as numbers (latencies in ms), or None."""
    found = list(_SUMMARY.finditer(text))
    if not found:
        return None
    m = found[-1]
    return {"records_acked": int(m["records"]), "records_per_s": float(m["rate"]),
            "mb_per_s": float(m["mb"]),
            "latency_ms": {"mean": float(m["avg"]), "max": float(m["max"]),
                           "p50": int(m["p50"]), "p95": int(m["p95"]), "p99": int(m["p99"]),
                           "p99_9": int(m["p999"])}}


def command(bootstrap: str, topic: str, count: int, size: int, conf: dict) -> list[str]:
    """The tool's command line, with ``conf``'s settings that the Java producer shares."""
    props = [f"bootstrap.servers={bootstrap}", "client.id=bench-java-producer"]
    props += [f"{k}={_value(conf[k])}" for k in SHARED_SETTINGS if k in conf]
    return [str(SCRIPT), "--topic", topic, "--num-records", str(count), "--record-size", str(size),
            "--throughput", "-1", "--producer-props", *props]


def _value(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def produce(bootstrap: str, topic: str, count: int, size: int, conf: dict,
            timeout: float) -> dict:
    """Runs the tool once; its summary, its CPU, and ``ok`` when every record was
    acknowledged without an error printed."""
    # The brokers' scrub of inherited script settings (peers), then this tool's heap.
    env = {k: v for k, v in os.environ.items() if k not in KAFKA_SCRIPT_ENV}
    env["KAFKA_HEAP_OPTS"] = HEAP
    t0 = time.monotonic()
    proc = subprocess.Popen(command(bootstrap, topic, count, size, conf),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    guard = threading.Timer(timeout, proc.kill)
    guard.start()
    try:
        text = proc.stdout.read()
        # Reaped here rather than by Popen.wait, for the JVM's own CPU (its rusage; the
        # start scripts exec the JVM, so the child is the JVM).
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        guard.cancel()
        proc.stdout.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out: dict = {"processes": 1, "records_requested": count,
                 "wall_s": round(time.monotonic() - t0, 3), "returncode": proc.returncode,
                 "driver_process_cpu_s": round(usage.ru_utime + usage.ru_stime, 2)}
    summary = parse_summary(text)
    errors = [line for line in text.splitlines() if "Exception" in line][:5]
    if summary is None:
        errors.append("no summary line: " + text[-500:])
    else:
        out.update(summary)
        out["seconds"] = round(summary["records_acked"] / summary["records_per_s"], 3) \
            if summary["records_per_s"] else None
    out["errors"] = errors
    out["ok"] = not errors and proc.returncode == 0 and (summary or {}).get(
        "records_acked") == count
    return out
