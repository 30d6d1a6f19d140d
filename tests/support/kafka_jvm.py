"""The JVM options of every Kafka 3.9 process the tests start through its ``bin/`` scripts.

Tests start hundreds of short-lived Kafka JVMs (brokers and tools) on a 2-core machine, where
their start-up CPU is what the suite waits for: serial GC and the C1 compiler only, and,
once ``make test`` has built it (``tests/support/kafka_cds.py``), the class-data-sharing
archive of Kafka's classes, which spares each JVM loading and verifying them from the jars.
A JVM whose classpath or JDK differs from the archive's ignores it: with the ``cds`` log off
it does so silently, so a tool's output is the same with or without the archive.

Before any JVM starts, ``kafka-run-class.sh`` tests each of Kafka's 119 jars against a
pattern with a subshell and a grep: half a second of CPU per script run, a third of a Kafka
tool's whole run.  ``SCRIPT_ENV`` sets the script's own switch that skips the test,
``INCLUDE_TEST_JARS=true``; in Kafka's binary distribution its one effect is one more jar on
the classpath (``connect-file``, the FileStream connectors, which only Kafka Connect loads).
``cluster.kafka_env`` and ``kafka_kraft`` set it, and the test process puts it in its own
environment (tests/conftest.py) for the scripts started with an inherited one, so every Kafka
script a test starts has it, and the archive is built with the same classpath.
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CDS_ARCHIVE = ROOT / ".cache" / "kafka-cds" / "kafka-3.9-include-test-jars.jsa"
BASE_OPTS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true"
SCRIPT_ENV = {"INCLUDE_TEST_JARS": "true"}
# A test program's JVM (a Java client, an oracle): it lives seconds, and several start at once
# on two cores.  The client compiler alone and the serial collector halve the CPU of its start
# (an oracle run: 1.9 CPU-s against 3.6 with the JVM's defaults); log4j (the 4.x clients'
# binding) says only warnings, and nothing of its own set-up.
CLIENT_JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
                    "-Dlog4j2.level=WARN", "-Dlog4j2.StatusLogger.level=OFF")
# javac is such a JVM too: a test program compiles in 2.1 CPU-s so, against 3.9.
JAVAC = ("javac", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC")


def kafka_jvm_opts() -> str:
    """``KAFKA_JVM_PERFORMANCE_OPTS`` for a Kafka 3.9 script: the archive's when it is built."""
    if CDS_ARCHIVE.is_file():
        return f"{BASE_OPTS} -XX:SharedArchiveFile={CDS_ARCHIVE} -Xlog:cds=off,cds+dynamic=off"
    return BASE_OPTS
