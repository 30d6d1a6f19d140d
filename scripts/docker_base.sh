#!/usr/bin/env bash
# Makes the Docker side of kafkapy ready, idempotently (every step is skipped when done):
#   1. Debian packages: docker.io (engine + CLI), debootstrap, docker-compose (bookworm's 1.29, v1);
#   2. a running dockerd (started here, as root, if `docker info` fails; waits until it answers);
#   3. the base image kafkapy-base:bookworm: debootstrap minbase + python3 + python3-venv,
#      imported with `docker import` (no registry is reachable, so nothing is ever pulled);
#   4. the images kafkapy:latest (docker/Dockerfile; its build stage is kept as kafkapy-build:latest
#      for the layer cache) and kafkapy-zookeeper:latest (docker/zookeeper/Dockerfile: Debian's
#      ZooKeeper jars and a headless JRE on the same base). Always rebuilt (cached: seconds), so
#      the image matches the working tree.
# Builds use host networking (apt and pip reach their servers the way the host does); pip in the
# build trusts the host's CA bundle, copied into the build context.
# Env: DOCKERD_FLAGS (default below), DEBIAN_MIRROR, KAFKAPY_IMAGE, SKIP_IMAGES=1 (engine + base only).
# Needs root for steps 1-3 when they are not done yet.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE_IMAGE=kafkapy-base:bookworm
KAFKAPY_IMAGE=${KAFKAPY_IMAGE:-kafkapy:latest}
ZK_IMAGE=${ZK_IMAGE:-kafkapy-zookeeper:latest}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What works on a root Debian bookworm VM (cgroup v1, overlay in the kernel): the defaults, minus
# the bridge and its iptables rules (all containers use the host network, so none are needed and
# the host's firewall is left alone).
DOCKERD_FLAGS=${DOCKERD_FLAGS:---bridge=none --iptables=false --ip-masq=false}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/kafkapy-dockerd.log}
# Debian's docker.io CLI: /usr/local/bin may hold another docker client.
DOCKER=/usr/bin/docker
export DOCKER_BUILDKIT=0

log() { echo "docker_base: $*" >&2; }
# Temporary rootfs and build contexts, removed however the script ends.
TMP_DIRS=()
trap 'rm -rf "${TMP_DIRS[@]}" 2>/dev/null || true' EXIT
now() { date +%s; }

install_packages() {
  local missing=()
  [ -x /usr/sbin/dockerd ] && [ -x /usr/bin/docker ] || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
  # pip in the build trusts the host's bundle.
  [ -e /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then log "missing ${missing[*]} and not root"; exit 1; fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

start_dockerd() {
  if $DOCKER info >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" != 0 ]; then log "dockerd is not running and not root"; exit 1; fi
  log "starting dockerd $DOCKERD_FLAGS (log: $DOCKERD_LOG)"
  # A dockerd killed without its cleanup leaves its pid file, and a new one refuses to start
  # while the file exists: removed when no dockerd runs under that pid.
  local pidfile=/var/run/docker.pid
  if [ -f "$pidfile" ] && ! grep -qs dockerd "/proc/$(cat "$pidfile")/comm"; then
    log "removing stale $pidfile"; rm -f "$pidfile"
  fi
  # Storage: overlay2 when the kernel has it, else vfs (slow but works everywhere).
  local storage=()
  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
  grep -qw overlay /proc/filesystems || storage=(--storage-driver=vfs)
  # setsid: the daemon outlives this script and the test that ran it.
  # shellcheck disable=SC2086
  setsid /usr/sbin/dockerd $DOCKERD_FLAGS "${storage[@]}" >>"$DOCKERD_LOG" 2>&1 < /dev/null &
  local i
  for i in $(seq 60); do
    $DOCKER info >/dev/null 2>&1 && return 0
    sleep 1
  done
  log "dockerd did not answer within 60 s; last log lines:"
  tail -20 "$DOCKERD_LOG" >&2
  exit 1
}

build_base() {
  if $DOCKER image inspect "$BASE_IMAGE" >/dev/null 2>&1; then return 0; fi
  local t0 rootfs; t0=$(now)
  rootfs=$(mktemp -d /var/tmp/kafkapy-rootfs.XXXXXX)
  TMP_DIRS+=("$rootfs" "$rootfs.log")
  log "debootstrap bookworm (minbase + python3)"
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$rootfs" "$DEBIAN_MIRROR" \
    > "$rootfs.log" 2>&1 || { tail -20 "$rootfs.log" >&2; exit 1; }
  # Slim: package caches, lists, docs, man pages and locales are not needed in a container.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
         "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
         "$rootfs"/usr/share/locale/*
  echo "deb $DEBIAN_MIRROR bookworm main" > "$rootfs/etc/apt/sources.list"
  tar -C "$rootfs" -c . | $DOCKER import \
    -c 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$rootfs" "$rootfs.log"
  log "base image $BASE_IMAGE built in $(( $(now) - t0 )) s"
}

# The host's way out, passed to the build: proxies (Docker's predefined build args) and pip's
# http(s) indexes (file:// ones and find-links do not exist inside the build).
passthrough_args() {
  local v url urls
  for v in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
    [ -n "${!v:-}" ] && printf '%s\n' --build-arg "$v=${!v}"
  done
  for v in PIP_INDEX_URL PIP_EXTRA_INDEX_URL; do
    urls=""
    for url in ${!v:-}; do
      case $url in http://*|https://*) urls="${urls:+$urls }$url" ;; esac
    done
    [ -n "$urls" ] && printf '%s\n' --build-arg "$v=$urls"
  done
  return 0
}

build() {
  local ctx=$1 file=$2 tag=$3 out extra=(); shift 3
  mapfile -t extra < <(passthrough_args)
  log "building $tag"
  if ! out=$($DOCKER build --network host --force-rm "${extra[@]}" -f "$ctx/$file" -t "$tag" "$@" "$ctx" 2>&1); then
    echo "$out" | tail -40 >&2
    log "building $tag failed"
    exit 1
  fi
}

# The build context: only what the image needs (the source tree, the entry script, the CA bundle),
# assembled in a temporary directory so the repository's venv, data and caches stay out.
build_images() {
  local t0 ctx; t0=$(now)
  ctx=$(mktemp -d /var/tmp/kafkapy-ctx.XXXXXX)
  TMP_DIRS+=("$ctx")
  mkdir -p "$ctx/src"
  cp -r "$ROOT/pyproject.toml" "$ROOT/setup.py" "$ROOT/README.md" "$ROOT/kafkapy" "$ROOT/protocol" "$ctx/src/"
  find "$ctx/src" \( -name __pycache__ -o -name '*.so' -o -name '*.egg-info' \) -prune -exec rm -rf {} +
  cp -r "$ROOT/docker/." "$ctx/docker"
  cp -L /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
  # The build stage is tagged too: it holds the layer cache (compiler, dependencies), which
  # the dangling-image clean-up below would otherwise remove.
  build "$ctx" docker/Dockerfile kafkapy-build:latest --target build
  build "$ctx" docker/Dockerfile "$KAFKAPY_IMAGE"
  build "$ctx" docker/zookeeper/Dockerfile "$ZK_IMAGE"
  rm -rf "$ctx"
  # Images replaced by a rebuild (ours only: they carry the org.kafkapy.image label).
  $DOCKER image prune -f --filter label=org.kafkapy.image >/dev/null
  log "images built in $(( $(now) - t0 )) s"
}

# One function, called on the last line: bash has read the whole script before it runs any of it.
main() {
  install_packages
  start_dockerd
  build_base
  [ "${SKIP_IMAGES:-0}" = 1 ] || build_images
}

main "$@"
