"""The replication round's shared wire pieces: topic references read and written."""
from __future__ import annotations

import uuid

import pytest

from kafkapy.replication import fetch_wire
from kafkapy.replication.fetch_wire import NO_ID, read_topic_ref, write_topic_ref


def _written(name, topic_id, by_id) -> memoryview:
    out = bytearray(b"..")
    write_topic_ref(out, name, topic_id, by_id)
    return memoryview(bytes(out) + b"!")


def test_a_topic_id_reads_back_as_the_same_uuid_every_time():
    topic_id = uuid.uuid4()
    data = _written("t", topic_id, True)
    for _ in range(3):
        assert read_topic_ref(data, 2, True) == ("", topic_id, 18)


def test_the_zero_id_reads_as_none_and_none_writes_as_the_zero_id():
    data = _written("t", None, True)
    assert bytes(data[2:18]) == NO_ID
    assert read_topic_ref(data, 2, True) == ("", None, 18)
    assert read_topic_ref(data, 2, True) == ("", None, 18)


def test_a_name_reads_back_without_an_id():
    assert read_topic_ref(_written("客户", None, False), 2, False) == ("客户", None, 9)


def test_a_cut_short_id_is_refused():
    with pytest.raises(ValueError):
        read_topic_ref(memoryview(bytes(10)), 0, True)


def test_the_ids_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(fetch_wire, "_IDS", {})
    monkeypatch.setattr(fetch_wire, "_IDS_LIMIT", 4)
    ids = [uuid.uuid4() for _ in range(10)]
    for topic_id in ids:
        assert read_topic_ref(_written("t", topic_id, True), 2, True)[1] == topic_id
        assert len(fetch_wire._IDS) <= 4
