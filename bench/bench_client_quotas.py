"""Client quota bench: what the quota check costs a request.

Two measures:
- **per produce request**, end to end: one kafkapy broker process, one client sending
  small Produce requests (one 100-byte record, acks=1) one after another, for the broker
  with no client quota configured (the check is one attribute test: the broker as without
  quotas) and with 100 client-id quotas configured (AlterClientQuotas; the client's own
  among them, far above its rate, so it is recorded and measured but never throttled).
  Rounds alternate between the two brokers so drift hits both alike; the table has the
  median request rate and latency percentiles over all rounds;
- **per check**, in-process: ``ClientQuotaManager.record`` for no quota configured and
  for 100 configured (the entity lookup, the Rate's record and measure), nanoseconds per
  call, median of repeats.

Prints a table; writes ``bench/results/quota-latest.{json,md}``.

Usage: python bench/bench_client_quotas.py [--requests N] [--rounds R]
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results"

from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

from kafkapy.clock import SYSTEM_CLOCK  # noqa: E402
from kafkapy.protocol.messages import REQUESTS  # noqa: E402
from kafkapy.quota.client import ClientQuotaManager  # noqa: E402
from tests.support.broker_process import BrokerProcess  # noqa: E402
from tests.support.wire import WireClient  # noqa: E402

Produce = REQUESTS[0]
TOPIC = "quota-bench"
QUOTAS = 100


def _batch() -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 16)
    builder.append(0, int(time.time() * 1000), None, b"b" * 100, [])
    return bytes(builder.build())


def _configure(bootstrap: str, quotas: bool) -> None:
    client = WireClient(bootstrap, client_id="setup")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            answer = client.request(3, 4, topics=[REQUESTS[3].MetadataRequestTopic(name=TOPIC)],
                                    allow_auto_topic_creation=True)
            topic = answer.topics[0]
            if topic.error_code == 0 and topic.partitions and topic.partitions[0].leader_id >= 0:
                break
            time.sleep(0.1)
        if quotas:
            entries = [([("client-id", f"client-{i}")], [("producer_byte_rate", 1e12, False)])
                       for i in range(QUOTAS - 1)]
            entries.append(([("client-id", "bench")], [("producer_byte_rate", 1e12, False)]))
            answer = client.request(49, 1, entries=entries, validate_only=False)
            assert all(e[0] == 0 for e in answer.entries), answer
            time.sleep(1.0)         # the notifications reach the broker
    finally:
        client.close()


def _round(bootstrap: str, requests: int) -> dict:
    batch = _batch()
    client = WireClient(bootstrap, client_id="bench")
    latencies = []
    try:
        data = [Produce.TopicProduceData(name=TOPIC, partition_data=[
            Produce.TopicProduceData.PartitionProduceData(index=0, records=batch)])]
        for _ in range(50):                         # warm-up
            client.request(0, 9, transactional_id=None, acks=1, timeout_ms=5000, topic_data=data)
        started = time.perf_counter()
        for _ in range(requests):
            t0 = time.perf_counter()
            answer = client.request(0, 9, transactional_id=None, acks=1, timeout_ms=5000,
                                    topic_data=data)
            latencies.append(time.perf_counter() - t0)
            assert answer.throttle_time_ms == 0
        elapsed = time.perf_counter() - started
    finally:
        client.close()
    latencies.sort()
    return {"req_per_s": requests / elapsed,
            "p50_us": latencies[len(latencies) // 2] * 1e6,
            "p99_us": latencies[int(len(latencies) * 0.99)] * 1e6}


def end_to_end(requests: int, rounds: int) -> dict:
    work = pathlib.Path(tempfile.mkdtemp(prefix="kafkapy-quota-bench-"))
    brokers = {}
    try:
        for name in ("none", "100 quotas"):
            brokers[name] = BrokerProcess(work / name.replace(" ", "-") / "logs").start()
            _configure(brokers[name].bootstrap, name != "none")
        runs: dict[str, list[dict]] = {name: [] for name in brokers}
        for _ in range(rounds):
            for name, broker in brokers.items():
                runs[name].append(_round(broker.bootstrap, requests))
        return {name: {key: statistics.median(r[key] for r in rs) for key in rs[0]}
                for name, rs in runs.items()}
    finally:
        for broker in brokers.values():
            broker.stop()
        subprocess.run(["rm", "-rf", str(work)], check=False)


def per_check(calls: int = 200_000, repeats: int = 5) -> dict:
    out = {}
    for name, configured in (("none", 0), ("100 quotas", QUOTAS)):
        manager = ClientQuotaManager("producer_byte_rate", 11, 1, SYSTEM_CLOCK)
        for i in range(configured - 1):
            manager.set_quota((None, f"client-{i}"), 1e12)
        if configured:
            manager.set_quota((None, "bench"), 1e12)
        times = []
        for _ in range(repeats):
            started = time.perf_counter_ns()
            for _ in range(calls):
                manager.record("ANONYMOUS", "bench", 160)
            times.append((time.perf_counter_ns() - started) / calls)
        out[name] = statistics.median(times)
    return out


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def report(e2e: dict, checks: dict, args) -> str:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    base = e2e["none"]["req_per_s"]
    lines = [
        "# Client quota check (`bench/bench_client_quotas.py`)", "",
        f"Run {now} at commit {_commit()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}.", "",
        f"Produce requests of one 100-byte record (acks=1), one at a time from one client, "
        f"{args.requests} per round, {args.rounds} rounds alternating between the brokers; "
        "medians over rounds.", "",
        "| broker | requests/s | vs none | p50 µs | p99 µs |", "|---|---:|---:|---:|---:|"]
    for name, r in e2e.items():
        lines.append(f"| {name} | {r['req_per_s']:,.0f} | {r['req_per_s'] / base:.3f} | "
                     f"{r['p50_us']:,.0f} | {r['p99_us']:,.0f} |")
    lines += ["", "`ClientQuotaManager.record` in-process, per call (median of 5 × 200,000):", "",
              "| quotas configured | ns per check |", "|---|---:|"]
    for name, ns in checks.items():
        lines.append(f"| {name} | {ns:,.0f} |")
    lines += ["", "Notes: with no quota configured the produce and fetch handlers test one "
              "attribute (`enabled`) and skip the rest, so the `none` broker is the broker "
              "without the check; with quotas configured every produce request's size is "
              "recorded in its client's Rate and the rate measured (the client's quota is far "
              "above its rate: nothing is throttled)."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    e2e = end_to_end(args.requests, args.rounds)
    checks = per_check()
    text = report(e2e, checks, args)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "quota-latest.md").write_text(text)
    (RESULTS / "quota-latest.json").write_text(json.dumps(
        {"end_to_end": e2e, "ns_per_check": checks, "requests": args.requests,
         "rounds": args.rounds}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
