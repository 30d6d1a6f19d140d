"""Builds the class-data-sharing archive of Kafka 3.9 that ``kafka_jvm`` hands its JVMs.

``python -m tests.support.kafka_cds`` (run by ``make test`` before the tests) lists the
classes two real runs load (-XX:DumpLoadedClassList): a KRaft broker started until it
serves, and ``kafka-topics.sh`` creating and describing a topic on it.  The merged list
is dumped into a static archive (-Xshare:dump) by ``kafka-run-class.sh`` itself, with
``kafka_jvm.SCRIPT_ENV`` (through ``kafka_env``), so the archive's classpath is exactly
the one every Kafka script the tests start builds.  Nothing happens when the archive
exists and is newer than the JDK and Kafka's jars, or when Kafka 3.9 or java is missing
(the tests then skip or run without it).  The archive is written under a temporary
name and renamed, so a JVM never maps a half-written one.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.cluster import KAFKA_BIN, kafka_env
from tests.support.kafka_jvm import BASE_OPTS, CDS_ARCHIVE
from tests.support.kafka_kraft import _TestKafka, kraft_kafka_home

TIMEOUT_S = 180.0


class _ListingKafka(_TestKafka):
    """A KRaft broker that writes the classes it loads to ``class_list``."""

    class_list: Path

    def _env(self) -> dict[str, str]:
        env = super()._env()
        env.update(KAFKA_JVM_PERFORMANCE_OPTS=BASE_OPTS,
                   KAFKA_OPTS=f"-XX:DumpLoadedClassList={self.class_list}")
        return env


def _inputs_newer_than(archive: Path) -> bool:
    java = Path(shutil.which("java") or "java").resolve()
    built = archive.stat().st_mtime
    return any(p.stat().st_mtime > built for p in [java, *(KAFKA_BIN.parent / "libs").glob("*.jar")])


def _script(name: str, *args: str, env: dict[str, str]) -> None:
    proc = subprocess.run([str(KAFKA_BIN / name), *args], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)} exited {proc.returncode}: "
                           f"{(proc.stderr or proc.stdout)[-2000:]}")


def _env(work: Path, kafka_opts: str) -> dict[str, str]:
    env = kafka_env(work / "logs", heap="-Xmx256m -Xms32m")
    env.update(KAFKA_JVM_PERFORMANCE_OPTS=BASE_OPTS, KAFKA_OPTS=kafka_opts)
    return env


def _list_classes(work: Path) -> list[str]:
    """The class lists of a broker run and a kafka-topics run on it."""
    broker = _ListingKafka(work / "broker", heap_opts="-Xmx512m -Xms64m")
    broker.class_list = work / "broker.classes"
    broker.start(TIMEOUT_S)
    try:
        tool = work / "tool.classes"
        bootstrap = f"127.0.0.1:{broker.port}"
        env = _env(work, f"-XX:DumpLoadedClassList={tool}")
        _script("kafka-topics.sh", "--bootstrap-server", bootstrap, "--create", "--topic", "cds",
                "--partitions", "2", env=env)
        _script("kafka-topics.sh", "--bootstrap-server", bootstrap, "--describe", "--topic",
                "cds", env=env)
    finally:
        broker.stop()
    return [broker.class_list.read_text(), tool.read_text()]


def _merged(lists: list[str]) -> str:
    """One class list: every line once, in first-seen order (a class before its users)."""
    seen: dict[str, None] = {}
    for text in lists:
        for line in text.splitlines():
            seen.setdefault(line, None)
    return "".join(f"{line}\n" for line in seen)


def build(archive: Path = CDS_ARCHIVE) -> str:
    """Builds ``archive`` unless it is current; returns one line saying what was done."""
    if kraft_kafka_home() is None:
        return "kafka-cds: no Kafka 3.9 or no java, no archive"
    if archive.is_file() and not _inputs_newer_than(archive):
        return f"kafka-cds: {archive} is current"
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kafka-cds-") as tmp:
        work = Path(tmp)
        classes = work / "all.classes"
        classes.write_text(_merged(_list_classes(work)))
        partial = archive.with_suffix(".tmp")
        _script("kafka-run-class.sh", "kafka.Kafka", env=_env(
            work, f"-Xshare:dump -XX:SharedClassListFile={classes} "
                  f"-XX:SharedArchiveFile={partial}"))
        partial.replace(archive)
    return f"kafka-cds: built {archive} ({archive.stat().st_size >> 20} MiB)"


if __name__ == "__main__":
    print(build())
    sys.exit(0)
