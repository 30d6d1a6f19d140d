"""The share group messages (``kafkapy.protocol.share_group_apis``) byte for byte as Kafka
4.3 writes them, and the share records (``kafkapy.protocol.share_records``) round-tripped.

The oracle is tests/java/kafka4/ShareWire.java, compiled against kafka-clients 4.3: for every
API key of ``PAIRS`` it prints the request and the response at every version the jar's
generated classes support, every field of that version set to a non-default value (its
docstring says which).  Each is decoded with our class and encoded again: the bytes must
be Kafka's, every decoded value must be set (nothing was skipped), and a few decoded values
are checked against the values ShareWire gives (the counter of its docstring).
"""
from __future__ import annotations

import subprocess
import uuid

import pytest

from kafkapy.protocol import messages
from kafkapy.protocol.share_group_apis import (
    PAIRS, VERSIONS, ShareFetchRequest, ShareFetchResponse, ShareGroupDescribeResponse,
    ShareGroupHeartbeatResponse)
from kafkapy.protocol.share_records import KEY_CLASSES, VALUE_CLASSES, VALUE_VERSION, \
    ShareRecordType, ShareUpdateKey, ShareUpdateValue
from tests.support.java_clients import ROOT, client_jars, compiled

PROGRAM = ROOT / "tests" / "java" / "kafka4" / "ShareWire.java"
KINDS = ("request", "response")
CASES = [(key, kind, version) for key, (low, high) in VERSIONS.items()
         for kind in KINDS for version in range(low, high + 1)]


@pytest.fixture(scope="module")
def kafka_bytes(tmp_path_factory) -> dict[tuple[int, str, int], bytes]:
    """(api key, kind, version) -> the bytes Kafka 4.3 writes for ShareWire's message."""
    client_jars(["4.3.0"])
    java = compiled("4.3.0", [PROGRAM], tmp_path_factory.mktemp("share-wire"))
    result = subprocess.run(java.command("ShareWire", *map(str, PAIRS)),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = {}
    for line in result.stdout.splitlines():
        key, kind, version, hex_bytes = line.split()
        out[int(key), kind, int(version)] = bytes.fromhex(hex_bytes)
    return out


def _class(key: int, kind: str) -> type:
    return PAIRS[key][KINDS.index(kind)]


def _decoded(kafka_bytes, cls, version: int):
    return cls.decode(kafka_bytes[cls.API_KEY, KINDS[not cls.is_request()], version],
                      version=version)


def _unset(value, path: str = "") -> list[str]:
    """The paths of the values in a ``to_dict(json=False)`` tree left at a default."""
    if isinstance(value, dict):
        return [p for name, v in value.items() for p in _unset(v, f"{path}.{name}")]
    if isinstance(value, list):
        if not value:
            return [path]
        return [p for i, v in enumerate(value) for p in _unset(v, f"{path}[{i}]")]
    return [path] if value in (None, 0, "", b"", False) else []


def _uuid(n: int) -> uuid.UUID:
    """Java's ``new Uuid(n, n)``."""
    return uuid.UUID(int=(n << 64) | n)


def test_kafka_serves_our_versions(kafka_bytes):
    assert sorted(kafka_bytes) == sorted(CASES)


def test_classes_are_registered():
    for key, (request, response) in PAIRS.items():
        assert messages.REQUESTS[key] is request and messages.RESPONSES[key] is response
        assert request.API_KEY == response.API_KEY == key
        assert request.max_version == response.max_version == VERSIONS[key][1]


@pytest.mark.parametrize("key,kind,version", CASES)
def test_kafka_bytes_decode_and_encode_again(kafka_bytes, key, kind, version):
    cls = _class(key, kind)
    wire = kafka_bytes[key, kind, version]
    decoded = cls.decode(wire, version=version)
    assert _unset(decoded.to_dict(json=False)) == []
    assert decoded.version == version
    assert bytes(decoded.encode()) == wire


#: Versions whose bump changed what a field means, not the bytes: Kafka writes ShareWire's
#: message the same at this version and the one before.
SAME_BYTES_AS_BEFORE = {(78, "response", 2), (85, "response", 1), (87, "request", 1),
                        (90, "request", 1)}


@pytest.mark.parametrize("key,kind,version", [c for c in CASES if c[2] > VERSIONS[c[0]][0]])
def test_a_version_is_told_apart_from_the_one_before(kafka_bytes, key, kind, version):
    """The byte equality above can fail: read as the version before, Kafka's bytes of a
    version that changed the format come out otherwise (or do not decode at all)."""
    cls = _class(key, kind)
    wire = kafka_bytes[key, kind, version]
    if (key, kind, version) in SAME_BYTES_AS_BEFORE:
        assert kafka_bytes[key, kind, version - 1] == wire
        return
    assert kafka_bytes[key, kind, version - 1] != wire
    try:
        again = bytes(cls.decode(wire, version=version - 1).encode())
    except Exception:  # noqa: BLE001 - misread bytes may fail anywhere in the codec
        return
    assert again != wire


def test_share_fetch_request_values(kafka_bytes):
    request = _decoded(kafka_bytes, ShareFetchRequest, 2)
    assert (request.group_id, request.member_id, request.share_session_epoch) == (
        "group_id1", "member_id2", 3)
    assert (request.max_records, request.batch_size, request.share_acquire_mode) == (7, 8, 10)
    topic = request.topics[0]
    assert topic.topic_id == _uuid(11)
    assert topic.partitions[0].partition_index == 12
    assert topic.partitions[0].acknowledgement_batches[0].acknowledge_types == [16, 17]
    assert request.forgotten_topics_data[1].partitions == [53, 54]


def test_share_fetch_response_records_are_bytes(kafka_bytes):
    response = _decoded(kafka_bytes, ShareFetchResponse, 2)
    partition = response.responses[0].partitions[0]
    assert partition.records == b"records13"
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (11, 12)
    assert response.node_endpoints[1].rack == "rack70"


def test_share_group_describe_authorized_operations_are_a_set(kafka_bytes):
    group = _decoded(kafka_bytes, ShareGroupDescribeResponse, 1).groups[0]
    assert group.authorized_operations == {0, 1, 2, 5}  # 39
    assert group.members[0].rack_id == "rack_id10"
    assert group.members[0].assignment.topic_partitions[0].topic_name == "topic_name17"


def test_share_group_heartbeat_assignment_is_a_struct(kafka_bytes):
    response = _decoded(kafka_bytes, ShareGroupHeartbeatResponse, 1)
    assert response.assignment.topic_partitions[0].topic_id == _uuid(7)
    assert response.assignment.topic_partitions[0].partitions == [8, 9]


def test_null_authorized_operations_is_int32_min():
    group = ShareGroupDescribeResponse.DescribedGroup(
        version=1, error_code=0, group_id="g", group_state="Stable", assignor_name="simple",
        members=[], authorized_operations=None)
    wire = bytes(ShareGroupDescribeResponse(version=1, throttle_time_ms=0,
                                            groups=[group]).encode())
    assert wire.endswith(b"\x80\x00\x00\x00\x00\x00")  # INT32_MIN, no group tags, no tags
    assert ShareGroupDescribeResponse.decode(wire, version=1).groups[0].authorized_operations \
        is None


# -- records ------------------------------------------------------------------------------------
def _filled(cls, version: int, counter: list[int]):
    """An instance of ``cls`` at ``version`` with every field set, values from ``counter``."""
    values = {}
    for field in cls._struct._fields:
        if field.for_version_q(version):
            values[field.name] = _field_value(field, version, counter)
    return cls(version=version, **values)


def _field_value(field, version: int, counter: list[int]):
    if field.is_struct_array():
        return [_filled(field.array_of.data_class, version, counter) for _ in range(2)]
    if field.is_struct():
        return _filled(field.data_class, version, counter)
    if field.is_array():
        return [_scalar(field.array_of.type_str, field.name, counter) for _ in range(2)]
    return _scalar(field.type_str, field.name, counter)


def _scalar(type_str: str, name: str, counter: list[int]):
    counter[0] += 1
    n = counter[0]
    return {"string": f"{name}{n}", "uuid": _uuid(n), "bool": True}.get(type_str, n)


@pytest.mark.parametrize("record_type", list(ShareRecordType), ids=lambda t: t.name)
def test_record_round_trip(record_type):
    key_cls, value_cls = KEY_CLASSES[record_type], VALUE_CLASSES[record_type]
    key = _filled(key_cls, int(record_type), [0])
    key_bytes = bytes(key.encode())
    assert key_bytes[:2] == int(record_type).to_bytes(2, "big")
    assert key_cls.decode(key_bytes) == key
    assert bytes(key_cls.decode(key_bytes).encode()) == key_bytes

    value = _filled(value_cls, VALUE_VERSION, [0])
    value_bytes = bytes(value.encode())
    assert value_bytes[:2] == b"\x00\x00"
    decoded = value_cls.decode(value_bytes)
    assert decoded == value
    assert _unset(decoded.to_dict(json=False)) == []
    assert bytes(decoded.encode()) == value_bytes


def test_share_update_bytes():
    """Kafka's CoordinatorRecordSerde bytes, by hand: int16 type 1, string, uuid, int32; the
    value's version 0, then DeliveryCompleteCount as tagged field 0 only when not -1."""
    key = ShareUpdateKey(version=1, group_id="g", topic_id=uuid.UUID(int=1), partition=2)
    assert bytes(key.encode()) == (b"\x00\x01" + b"\x00\x01g" + bytes(15) + b"\x01"
                                   + b"\x00\x00\x00\x02")
    body = (b"\x00\x00\x00\x07" + b"\x00\x00\x00\x03" + (4).to_bytes(8, "big")
            + b"\x02" + (5).to_bytes(8, "big") + (6).to_bytes(8, "big") + b"\x02\x00\x01\x00")
    batch = ShareUpdateValue.StateBatch(version=0, first_offset=5, last_offset=6,
                                        delivery_state=2, delivery_count=1)
    plain = ShareUpdateValue(version=0, snapshot_epoch=7, leader_epoch=3, start_offset=4,
                             state_batches=[batch])
    assert bytes(plain.encode()) == b"\x00\x00" + body + b"\x00"
    counted = ShareUpdateValue(version=0, snapshot_epoch=7, leader_epoch=3, start_offset=4,
                               delivery_complete_count=9, state_batches=[batch])
    assert bytes(counted.encode()) == b"\x00\x00" + body + b"\x01\x00\x04\x00\x00\x00\x09"
    assert ShareUpdateValue.decode(bytes(plain.encode())).delivery_complete_count == -1
