"""A metadata store for unit tests: the embedded store in a test's tmp dir, with Kafka's
base znodes, on a mock clock, without fsync."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kafkapy.clock import MockClock
from kafkapy.metadata import paths
from kafkapy.metadata.embedded import EmbeddedStore


@contextmanager
def embedded_store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    store = EmbeddedStore(tmp_path / "metadata.json", clock=MockClock(), fsync=False)
    paths.ensure_base_paths(store)
    try:
        yield store
    finally:
        store.close()
