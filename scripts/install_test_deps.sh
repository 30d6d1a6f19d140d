#!/usr/bin/env bash
# Installs the system packages the tests use when they are missing:
# kcat, a Java 17 JDK (Java client tests, Spark), ZooKeeper (controller tests) and openssl
# (test certificates for the TLS listeners); iptables (the fault tests' network partitions); for tests/docker: Debian's Docker engine (docker.io),
# debootstrap (the base image) and docker-compose (1.29, bookworm's). Starting dockerd and building
# the images is scripts/docker_base.sh's job (the docker test runs it).
# Needs root for apt-get; as another user it only reports what is missing.
set -euo pipefail

missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# iptables: the fault tests' network partitions (tests/support/faults/net.py).
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
[ -d /usr/share/zookeeper ] || missing+=(zookeeper)
# dockerd, not docker: a docker client alone (e.g. in /usr/local/bin) is no engine.
[ -x /usr/sbin/dockerd ] || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != "0" ]; then
  echo "install_test_deps: missing ${missing[*]} (not root: tests that need them will be skipped)" >&2
  exit 0
fi
echo "install_test_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
