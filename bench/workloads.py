"""Benchmark driver processes (confluent-kafka / librdkafka), separate from the broker.

Each function named ``*_worker`` runs in its own process (``multiprocessing`` "spawn"
context, so no librdkafka thread is ever forked) and reports one dict on a result queue.
Processes of one phase meet at a ``Barrier`` after connecting and fetching metadata, so the
timed part measures produce/fetch traffic only; throughput is
``records / (max(end) - min(start))`` over the processes, on the system-wide
``time.monotonic()`` clock.

Produce latency is librdkafka's per-message ``Message.latency()``: from ``produce()`` to the
delivery report (acks=all acknowledgement), so in a flat-out run it includes time queued in
the client, exactly as Kafka's ``kafka-producer-perf-test`` reports it.  End-to-end latency
(``e2e_*``) is produce call -> consumer receipt, from a ``time.monotonic_ns()`` stamp in the
first 8 bytes of the payload (same machine, same clock).
"""
from __future__ import annotations

import math
import os
import struct
import time
from array import array

MIB = 1024 * 1024
# How far a driver process lowers its own CPU priority (os.nice), from the parent's
# environment: run_bench.py sets it for the rf3 workload (``--driver-nice``).
DRIVER_NICE_ENV = "KAFKAPY_BENCH_DRIVER_NICE"
LOG_LEVEL = 4  # librdkafka syslog level: warnings and worse (info-level reconnect spam off)
_STAMP = struct.Struct(">Q")


# --------------------------------------------------------------------------- helpers

def yield_cpu() -> int:
    """Lower this process's priority by ``$KAFKAPY_BENCH_DRIVER_NICE`` (0: unchanged);
    returns the niceness now.  An idempotent librdkafka producer waits for its one
    in-flight Produce by polling its socket with a zero timeout (strace: ``poll(..., 0)``
    in a loop on its broker thread), so each producer process of a flat-out acks=all run
    keeps a core busy while it waits; on a machine shared with the brokers that CPU is
    taken from the brokers, as it would not be with the clients on machines of their own.
    At nice 19 the drivers get what the brokers leave.

    With the kernel's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``)
    a process's niceness only ranks it within its session's group, and the groups share
    the CPU equally: the brokers, each in a session of its own, would wait behind the
    drivers' group whatever the drivers' niceness.  So a niced driver first starts a
    session of its own and gives its group the same niceness (``/proc/self/autogroup``)."""
    step = int(os.environ.get(DRIVER_NICE_ENV) or 0)
    if not step:
        return os.nice(0)
    _own_autogroup(step)
    return os.nice(step)


def _own_autogroup(nice: int) -> None:
    """A session (so an autogroup) of this process's own, at ``nice`` (no-op without
    autogroups)."""
    try:
        os.setsid()
    except OSError:
        return      # already a session leader: its group is its own
    try:
        with open("/proc/self/autogroup", "w") as group:
            group.write(str(nice))
    except OSError:
        pass        # a kernel without autogroups: niceness alone ranks the processes


def percentiles(values, ps=(50, 90, 99, 99.9)) -> dict:
    """Nearest-rank percentiles of ``values`` (seconds) as milliseconds, plus mean/max/count."""
    vals = sorted(values)
    n = len(vals)
    if n == 0:
        return {"count": 0}
    out = {"count": n}
    for p in ps:
        k = max(0, min(n - 1, math.ceil(p / 100.0 * n) - 1))
        out[f"p{p:g}".replace(".", "_")] = round(vals[k] * 1000.0, 3)
    out["mean"] = round(sum(vals) / n * 1000.0, 3)
    out["max"] = round(vals[-1] * 1000.0, 3)
    out["min"] = round(vals[0] * 1000.0, 3)
    return out


def payload(size: int, seed: int = 0) -> bytes:
    """A fixed incompressible-ish payload (random bytes), like the Java perf test's random chars."""
    import random
    rnd = random.Random(seed)
    return bytes(rnd.getrandbits(8) for _ in range(size))


def _conf(base: dict, extra: dict | None) -> dict:
    c = dict(base)
    c.update(extra or {})
    return c


def create_topic(bootstrap: str, topic: str, partitions: int = 1, fallback=None,
                 timeout: float = 30.0, replication_factor: int = 1,
                 config: dict[str, str] | None = None) -> str:
    """Create ``topic`` with the AdminClient; on failure call ``fallback(topic, partitions)``.
    ``replication_factor`` and topic ``config`` (e.g. min.insync.replicas) go to CreateTopics;
    with a replication factor above 1 the wait below also asks for a full ISR on every
    partition, so the timed phase never starts while followers are still joining.

    Returns how the topic was made ("admin", "fallback: ...", or "auto-create" when neither
    worked and the producer's metadata request is left to auto-create it).
    """
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL})
    err = None
    try:
        fut = admin.create_topics([NewTopic(topic, partitions, replication_factor,
                                            config=dict(config or {}))],
                                  operation_timeout=timeout, request_timeout=timeout)[topic]
        fut.result(timeout)
        how = "admin"
    except Exception as e:  # noqa: BLE001 - any failure: try the fallback
        err = e
        if "TOPIC_ALREADY_EXISTS" in str(e):
            how = "admin (existed)"
        elif fallback is not None:
            try:
                fallback(topic, partitions)
                how = f"fallback (admin said: {e})"
            except Exception as e2:  # noqa: BLE001
                how = f"auto-create (admin: {e}; fallback: {e2})"
        else:
            how = f"auto-create (admin: {err})"
    # Wait until the topic shows in metadata with a leader.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            md = admin.list_topics(topic, timeout=5)
            t = md.topics.get(topic)
            if t is not None and t.error is None and t.partitions and all(
                    p.leader >= 0 and len(p.isrs) >= replication_factor
                    for p in t.partitions.values()):
                return how
        except Exception:  # noqa: BLE001
            pass
        time.sleep(0.2)
    return how + (" (metadata never showed a leader)" if replication_factor == 1 else
                  " (metadata never showed a leader and a full ISR)")


def high_watermark(bootstrap: str, topic: str, partition: int = 0, timeout: float = 10.0):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkapy-bench-wm",
                  "enable.auto.commit": False, "log_level": LOG_LEVEL})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
    finally:
        c.close()


# --------------------------------------------------------------------------- produce

PRODUCER_DEFAULTS = {
    "acks": "all",
    "linger.ms": 5,
    "batch.size": 65536,
    "compression.type": "none",
    "enable.idempotence": False,
    # Like the Java producer's buffer.memory=32 MiB default: bounds client-side queueing,
    # which a flat-out run's delivery latency includes.
    "queue.buffering.max.messages": 100000,
    "queue.buffering.max.kbytes": 32768,
    "message.max.bytes": 1048576 + 1024,
    "statistics.interval.ms": 0,
    "log_level": LOG_LEVEL,
}


def produce_worker(wid: int, bootstrap: str, topic: str, partition: int, count: int,
                   size: int, conf: dict, barrier, results, deadline_s: float) -> None:
    """Produce ``count`` records of ``size`` bytes as fast as librdkafka takes them."""
    _produce(wid, bootstrap, topic, partition, count, size, conf, 0.0, barrier, results,
             deadline_s)


def paced_produce_worker(wid: int, bootstrap: str, topic: str, partition: int, count: int,
                         size: int, conf: dict, rate: float, barrier, results,
                         deadline_s: float) -> None:
    """Produce ``count`` records at ``rate`` records/s (record i is handed to librdkafka
    no earlier than i / rate s after the start), so latency is measured below saturation."""
    _produce(wid, bootstrap, topic, partition, count, size, conf, rate, barrier, results,
             deadline_s)


_PACE_EVERY = 16   # records between two looks at the clock when paced


def _produce(wid: int, bootstrap: str, topic: str, partition: int, count: int, size: int,
             conf: dict, rate: float, barrier, results, deadline_s: float) -> None:
    from confluent_kafka import KafkaException, Producer
    from procstats import sched_delta, sched_stats
    niceness = yield_cpu()
    lat = array("f")
    errs = [0, None]

    def on_delivery(err, msg):
        if err is not None:
            errs[0] += 1
            if errs[1] is None:
                errs[1] = str(err)
        else:
            lat.append(msg.latency())

    res = {"wid": wid, "ok": False, "pid": os.getpid(), "nice": niceness}
    try:
        p = Producer(_conf({"bootstrap.servers": bootstrap, "on_delivery": on_delivery,
                            "client.id": f"bench-producer-{wid}", **PRODUCER_DEFAULTS}, conf))
        p.list_topics(topic, timeout=30)  # connect + metadata before the clock starts
        value = payload(size, seed=wid)
        produce, poll = p.produce, p.poll
        warmup = 0
        if str(conf.get("enable.idempotence", "")).lower() in ("true", "1"):
            # An idempotent producer sends nothing until InitProducerId has given it a
            # producer id; one acknowledged record before the clock keeps that handshake
            # (and the first connection to the leader) out of the timed part.
            produce(topic, value, partition=partition)
            if p.flush(60) != 0 or errs[0]:
                raise RuntimeError(f"warm-up record not acknowledged: {errs[1]}")
            warmup = 1
            del lat[:]
        barrier.wait(120)
        cpu0 = time.process_time()
        sched0 = sched_stats(os.getpid())
        t0 = time.monotonic()
        hard_stop = t0 + deadline_s
        i = 0
        while i < count:
            if rate and not (i % _PACE_EVERY):
                wait = t0 + i / rate - time.monotonic()
                while wait > 0:
                    poll(min(wait, 0.01))
                    wait = t0 + i / rate - time.monotonic()
            try:
                produce(topic, value, partition=partition)
            except BufferError:
                poll(0.005)
                if time.monotonic() > hard_stop:
                    raise TimeoutError(f"produce stuck: {i}/{count} queued after {deadline_s}s")
                continue
            i += 1
            if not (i & 1023):
                poll(0)
        remaining = p.flush(max(1.0, hard_stop - time.monotonic()))
        t1 = time.monotonic()
        res.update(ok=remaining == 0, t_start=t0, t_end=t1, sent=count, unacked=remaining,
                   rate=rate or None,
                   warmup_records=warmup,
                   acked=len(lat), errors=errs[0], first_error=errs[1],
                   driver_cpu_s=time.process_time() - cpu0,
                   sched=sched_delta(sched0, sched_stats(os.getpid())),
                   process_cpu_s=time.process_time(), latencies=lat.tobytes())
        if remaining:
            res["error"] = f"{remaining} records not acknowledged after {deadline_s}s"
    except (KafkaException, Exception) as e:  # noqa: BLE001 - report, never hang the parent
        res.update(error=f"{type(e).__name__}: {e}", acked=len(lat), errors=errs[0],
                   first_error=errs[1])
        try:
            barrier.abort()
        except Exception:  # noqa: BLE001
            pass
    results.put(res)


# --------------------------------------------------------------------------- consume

CONSUMER_DEFAULTS = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": False,
    "auto.offset.reset": "earliest",
    "fetch.wait.max.ms": 500,
    # librdkafka >= 2.1 pauses fetching for fetch.queue.backoff.ms (default 1000 ms) whenever
    # its local queue passes queued.min.messages (100k): that stall, not the broker, capped
    # the 100 B read-back at ~170k rec/s.  The Java consumer has no such pause.
    "fetch.queue.backoff.ms": 1,
    "statistics.interval.ms": 0,
    "log_level": LOG_LEVEL,
}


def consume_worker(wid: int, bootstrap: str, topic: str, partition: int, start: int, end: int,
                   conf: dict, barrier, results, deadline_s: float, idle_s: float = 30.0) -> None:
    """Read offsets [start, end) of one partition with a fresh, group-less (assign) consumer."""
    from confluent_kafka import Consumer, TopicPartition
    res = {"wid": wid, "ok": False, "pid": os.getpid(), "nice": yield_cpu()}
    try:
        c = Consumer(_conf({"bootstrap.servers": bootstrap,
                            "group.id": f"kafkapy-bench-{os.getpid()}",  # required, never joined
                            "client.id": f"bench-consumer-{wid}", **CONSUMER_DEFAULTS}, conf))
        c.list_topics(topic, timeout=30)
        barrier.wait(120)
        cpu0 = time.process_time()
        t0 = time.monotonic()
        c.assign([TopicPartition(topic, partition, start)])
        want = end - start
        got = nbytes = 0
        first_error = None
        hard_stop = t0 + deadline_s
        last_data = t0
        consume = c.consume
        last = start - 1
        t_first = None
        while last < end - 1:
            # Never ask for more than what is left: consume() waits until it has
            # num_messages or the timeout passes, which would add a dead wait at the end.
            msgs = consume(min(10000, end - 1 - last), 0.1)
            now = time.monotonic()
            if not msgs:
                if now > hard_stop or now - last_data > idle_s:
                    first_error = first_error or (
                        f"stopped at offset {last + 1} of [{start},{end}): no data for "
                        f"{now - last_data:.1f}s")
                    break
                continue
            last_data = now
            if t_first is None:
                t_first = now
            for m in msgs:
                if m.error() is not None:
                    first_error = first_error or str(m.error())
                    continue
                off = m.offset()
                if off >= end:
                    break
                got += 1
                nbytes += len(m.value())
                last = off
        t1 = time.monotonic()
        c.close()
        res.update(ok=got == want, t_start=t0, t_first=t_first if t_first is not None else t1,
                   t_end=t1, records=got, bytes=nbytes,
                   expected=want, first_error=first_error,
                   driver_cpu_s=time.process_time() - cpu0,
                   process_cpu_s=time.process_time())
        if got != want:
            res["error"] = first_error or f"read {got} of {want}"
    except Exception as e:  # noqa: BLE001
        res.update(error=f"{type(e).__name__}: {e}")
        try:
            barrier.abort()
        except Exception:  # noqa: BLE001
            pass
    results.put(res)


# --------------------------------------------------------------------------- end to end

def e2e_consumer_worker(bootstrap: str, topic: str, count: int, conf: dict, ready, results,
                        deadline_s: float) -> None:
    """Long-polling consumer: latency = receipt time - monotonic_ns stamp in the payload."""
    from confluent_kafka import Consumer, TopicPartition
    res = {"ok": False, "pid": os.getpid()}
    lat = array("d")
    try:
        c = Consumer(_conf({"bootstrap.servers": bootstrap,
                            "group.id": f"kafkapy-bench-e2e-{os.getpid()}",
                            "client.id": "bench-e2e-consumer", **CONSUMER_DEFAULTS}, conf))
        c.assign([TopicPartition(topic, 0, 0)])
        # A couple of empty long polls so the fetcher is connected and waiting.
        for _ in range(3):
            c.poll(0.3)
        ready.set()
        t_stop = time.monotonic() + deadline_s
        first_error = None
        unpack = _STAMP.unpack_from
        while len(lat) < count and time.monotonic() < t_stop:
            m = c.poll(0.5)
            if m is None:
                continue
            now = time.monotonic_ns()
            if m.error() is not None:
                first_error = first_error or str(m.error())
                continue
            lat.append((now - unpack(m.value())[0]) / 1e9)
        c.close()
        res.update(ok=len(lat) == count, received=len(lat), expected=count,
                   first_error=first_error, latencies=lat.tobytes(),
                   process_cpu_s=time.process_time())
    except Exception as e:  # noqa: BLE001
        res.update(error=f"{type(e).__name__}: {e}", received=len(lat))
        ready.set()
    results.put(("consumer", res))


def e2e_producer_worker(bootstrap: str, topic: str, rate: int, seconds: float, size: int,
                        conf: dict, ready, results) -> None:
    """Produce ``rate`` records/s for ``seconds`` s, each stamped with monotonic_ns."""
    from confluent_kafka import Producer
    res = {"ok": False, "pid": os.getpid()}
    lat = array("f")
    errs = [0, None]

    def on_delivery(err, msg):
        if err is not None:
            errs[0] += 1
            errs[1] = errs[1] or str(err)
        else:
            lat.append(msg.latency())
    try:
        p = Producer(_conf({"bootstrap.servers": bootstrap, "on_delivery": on_delivery,
                            "client.id": "bench-e2e-producer", "acks": "all", "linger.ms": 0,
                            "enable.idempotence": False, "log_level": LOG_LEVEL}, conf))
        p.list_topics(topic, timeout=30)
        ready.wait(60)
        pad = payload(max(0, size - _STAMP.size))
        n = int(rate * seconds)
        interval = 1.0 / rate
        t0 = time.monotonic()
        late = 0
        for i in range(n):
            due = t0 + i * interval
            delay = due - time.monotonic()
            if delay > 0:
                p.poll(delay)  # serve delivery reports while pacing
                while (delay := due - time.monotonic()) > 0:
                    time.sleep(delay)
            elif delay < -0.005:
                late += 1
            p.produce(topic, _STAMP.pack(time.monotonic_ns()) + pad, partition=0)
            p.poll(0)
        remaining = p.flush(30)
        t1 = time.monotonic()
        res.update(ok=remaining == 0 and errs[0] == 0, sent=n, seconds=t1 - t0,
                   achieved_rate=n / (t1 - t0), late_sends=late, errors=errs[0],
                   first_error=errs[1], ack_latencies=lat.tobytes(),
                   process_cpu_s=time.process_time())
    except Exception as e:  # noqa: BLE001
        res.update(error=f"{type(e).__name__}: {e}")
    results.put(("producer", res))


# --------------------------------------------------------------------------- reassignment

def fill_partition(bootstrap: str, topic: str, partition: int, mib: float,
                   size: int = 16384, timeout: float = 600.0) -> dict:
    """Write ``mib`` MiB of ``size``-byte records (acks=all) to one partition, so a replica
    move has that much log to copy.  Not a timed figure: the reassignment is."""
    from confluent_kafka import Producer
    count = max(1, int(mib * MIB) // size)
    errors: list[str] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 262144, "queue.buffering.max.kbytes": 65536,
                  "log_level": LOG_LEVEL,
                  "on_delivery": lambda err, msg: errors.append(str(err)) if err else None})
    value = payload(size, seed=7)
    t0 = time.monotonic()
    deadline = t0 + timeout
    i = 0
    while i < count and time.monotonic() < deadline:
        try:
            p.produce(topic, value, partition=partition)
            i += 1
        except BufferError:
            p.poll(0.01)
        if not (i & 255):
            p.poll(0)
    left = p.flush(max(1.0, deadline - time.monotonic()))
    ok = i == count and left == 0 and not errors
    return {"ok": ok, "records": count, "record_size": size, "mib": round(count * size / MIB, 1),
            "seconds": round(time.monotonic() - t0, 2),
            **({} if ok else {"error": f"{left} unacked, {i}/{count} sent, {errors[:3]}"})}


def reassign_time(bootstrap: str, topic: str, partition: int, target: list[int],
                  timeout: float = 900.0, poll_s: float = 0.05) -> dict:
    """Seconds from an AlterPartitionReassignments request (kafka-python's admin client, sent
    to the controller) moving ``topic``-``partition`` to ``target`` until the move is over:
    ListPartitionReassignments no longer lists it and broker 1's metadata shows ``target``
    as the replicas (the old replica has been removed).  Polled every ``poll_s``."""
    from confluent_kafka.admin import AdminClient
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafkapy-bench-reassign",
                             request_timeout_ms=30000)
    meta = AdminClient({"bootstrap.servers": bootstrap, "log_level": LOG_LEVEL})
    tp = TopicPartition(topic, partition)
    try:
        t0 = time.monotonic()
        errors = admin.alter_partition_reassignments({tp: list(target)}, timeout_ms=30000)
        accepted = time.monotonic() - t0
        if errors.get(tp) is not None:
            return {"ok": False, "error": f"AlterPartitionReassignments: {errors[tp]}"}
        deadline = t0 + timeout
        last = None
        while time.monotonic() < deadline:
            if tp not in admin.list_partition_reassignments([tp]):
                t = meta.list_topics(topic, timeout=10).topics.get(topic)
                last = list(t.partitions[partition].replicas) if t else None
                if last == list(target):
                    seconds = time.monotonic() - t0
                    return {"ok": True, "seconds": round(seconds, 3),
                            "accepted_s": round(accepted, 3), "target": list(target)}
            time.sleep(poll_s)
        return {"ok": False, "error": f"not done after {timeout}s (replicas {last})"}
    finally:
        admin.close()
