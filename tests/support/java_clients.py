"""The Java client jars (kafka-clients, fetched by scripts/fetch_java_clients.sh) and the
compiled test programs of tests/java; the ``java_clients`` fixture is tests/clients/conftest.py's."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JAVA_SOURCE = ROOT / "tests" / "java" / "ClientE2E.java"
FETCH_SCRIPT = ROOT / "scripts" / "fetch_java_clients.sh"
JAVA_CLIENT_VERSIONS = ("3.9.0", "4.3.0")


def java_clients_dir() -> Path:
    return Path(os.environ.get("KAFKAPY_JAVA_CLIENTS", ROOT / ".cache" / "java-clients"))


@dataclass(frozen=True)
class JavaClient:
    version: str
    jars_dir: Path
    classes_dir: Path

    @property
    def classpath(self) -> str:
        return os.pathsep.join([str(self.classes_dir), str(self.jars_dir / "*")])

    def command(self, main_class: str, *args: str) -> list[str]:
        return [shutil.which("java") or "java", "-Dlog4j2.level=WARN",
                "-Dlog4j2.StatusLogger.level=OFF", "-cp", self.classpath, main_class, *args]
