"""The Java client jars (kafka-clients, fetched by scripts/fetch_java_clients.sh) and test
programs compiled against them: ``client_jars`` fetches once per machine, ``compiled``
builds a ``JavaClient``.  The fixtures are tests/clients/conftest.py's ``java_clients``
(tests/java against every version) and tests/support/spark.py's ``spark_harness``."""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.kafka_jvm import CLIENT_JVM_FLAGS, JAVAC

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
        """``java`` running ``main_class`` of this build, with the test JVM's flags."""
        return [shutil.which("java") or "java", *CLIENT_JVM_FLAGS, "-cp", self.classpath,
                main_class, *args]


def client_jars(versions) -> Path:
    """The jar folder, with every one of ``versions`` fetched (once per machine); skips
    the test without a JDK."""
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"JDK not installed ({', '.join(missing)} not on PATH)")
    dest = java_clients_dir()
    if not all((dest / v / ".complete").is_file() for v in versions):
        env = dict(os.environ)
        env.setdefault("PIP", str(ROOT / ".venv" / "bin" / "pip"))
        proc = subprocess.run(["bash", str(FETCH_SCRIPT), str(dest)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (
            f"{FETCH_SCRIPT.name} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    for version in versions:
        jar = dest / version / f"kafka-clients-{version}.jar"
        assert jar.is_file(), f"no kafka-clients jar in {jar.parent}"
    return dest


def compiled(version: str, sources, classes: Path) -> JavaClient:
    """``sources`` compiled into ``classes`` against kafka-clients ``version``."""
    jars = java_clients_dir() / version
    classes.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([*JAVAC, "-Xlint:none", "-d", str(classes), "-cp", str(jars / "*"),
                           *sorted(str(p) for p in sources)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (
        f"javac against kafka-clients {version} failed:\n{proc.stdout}\n{proc.stderr}")
    return JavaClient(version, jars, classes)
