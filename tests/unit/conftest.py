"""Fixtures shared by the unit tests.

``store``: an empty ``EmbeddedStore`` in the test's tmp_path, closed after the test.
A module needing Kafka's base znodes overrides it with ``store(store)`` plus
``paths.ensure_base_paths``; one needing a clock or fsync=False builds its own.
"""
from __future__ import annotations

import pytest

from kafkapy.metadata.embedded import EmbeddedStore


@pytest.fixture
def store(tmp_path):
    s = EmbeddedStore(tmp_path / "meta.json")
    yield s
    s.close()
