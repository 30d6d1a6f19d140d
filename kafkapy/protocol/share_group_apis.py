"""The share group APIs (KIP-932), which kafka-python lacks, from Kafka's own schemas in
``protocol/`` (as the kafka-clients 4.3.0 jar ships them).

====  ============================  ========  ==============================================
key   API                           versions  who speaks it
====  ============================  ========  ==============================================
76    ShareGroupHeartbeat           1         share consumer -> group coordinator
77    ShareGroupDescribe            1         admin client -> group coordinator
78    ShareFetch                    1-2       share consumer -> partition leader
79    ShareAcknowledge              1-2       share consumer -> partition leader
83    InitializeShareGroupState     0         group coordinator -> share coordinator
84    ReadShareGroupState           0         partition leader -> share coordinator
85    WriteShareGroupState          0-1       partition leader -> share coordinator
86    DeleteShareGroupState         0         group coordinator -> share coordinator
87    ReadShareGroupStateSummary    0-1       group coordinator -> share coordinator
90    DescribeShareGroupOffsets     0-1       admin client -> group coordinator
91    AlterShareGroupOffsets        0         admin client -> group coordinator
92    DeleteShareGroupOffsets       0         admin client -> group coordinator
====  ============================  ========  ==============================================

Version 0 of 76-79 was Kafka 4.0's early access, removed in 4.1: the schemas say
``validVersions`` "1" / "1-2", and kafka-python then still accepts version 0 (it lowers
every message's minimum to 0), so a handler declares ``MIN_VERSION = 1`` itself.  Every
version of every one of these messages is flexible (compact strings and arrays, tagged
fields).

Python values, as kafka-python's codec reads and writes them:

- ``uuid`` fields are ``uuid.UUID``; Kafka's ZERO_UUID decodes as ``None`` and ``None``
  encodes as ZERO_UUID (16 zero bytes).
- A nullable string or array is ``None`` for null.  kafka-python writes ``None`` as null
  whatever the field's ``nullableVersions`` say, so a non-nullable field (e.g.
  ShareGroupHeartbeatRequest's ``GroupId``) must never be given ``None``, or Kafka's
  reader fails; left unset, a string is ``""`` unless its schema default is null.
- ShareFetchResponse's ``Records`` (type ``records``) is plain bytes: decoded as
  ``bytes``, encoded from ``bytes``/``bytearray``/``memoryview`` (a ``str`` would be
  UTF-8 encoded).  It is nullable only in version 0, which is not served: a partition
  with no records carries ``b""``, never ``None`` (``None`` would be written as null,
  which Kafka 4.3's reader of v1+ rejects).  Unlike Fetch (``kafkapy.handlers.fetch``),
  nothing here splices file ranges in with sendfile: the bytes are in the message.
- ShareGroupDescribeResponse's ``AuthorizedOperations`` is read and written as a set
  of operation codes, as kafka-python does for DescribeGroups (``None``: not asked,
  INT32_MIN on the wire).
- Struct fields (e.g. ShareGroupHeartbeatResponse's nullable ``Assignment``) are
  nested data objects, ``None`` for null.

A decoded message keeps its version: encode it again with ``encode()``
(kafka-python's ``encode(version=...)`` fails on a decoded message, which has no header);
a new one is built with ``version=`` (or given it in ``encode(version=...)``).

Importing this module registers the classes in ``messages.REQUESTS`` / ``RESPONSES``.
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from kafkapy.protocol import messages
from kafkapy.protocol.schema_package import ensure_schema_package

_SCHEMAS = ensure_schema_package()


def _authorized_operations_as_bitfield(fields: list[dict]) -> None:
    """Retype every ``AuthorizedOperations`` field, at any depth, as a bitfield."""
    for field in fields:
        if field["name"] == "AuthorizedOperations":
            field["type"] = "bitfield"
        _authorized_operations_as_bitfield(field.get("fields", ()))


class ShareGroupHeartbeatRequest(ApiMessage, load_json=_SCHEMAS): pass
class ShareGroupHeartbeatResponse(ApiMessage, load_json=_SCHEMAS): pass
class ShareGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS): pass


class ShareGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):
    @classmethod
    def json_patch(cls, json):
        _authorized_operations_as_bitfield(json["fields"])
        return json


class ShareFetchRequest(ApiMessage, load_json=_SCHEMAS): pass
class ShareFetchResponse(ApiMessage, load_json=_SCHEMAS): pass
class ShareAcknowledgeRequest(ApiMessage, load_json=_SCHEMAS): pass
class ShareAcknowledgeResponse(ApiMessage, load_json=_SCHEMAS): pass
class InitializeShareGroupStateRequest(ApiMessage, load_json=_SCHEMAS): pass
class InitializeShareGroupStateResponse(ApiMessage, load_json=_SCHEMAS): pass
class ReadShareGroupStateRequest(ApiMessage, load_json=_SCHEMAS): pass
class ReadShareGroupStateResponse(ApiMessage, load_json=_SCHEMAS): pass
class WriteShareGroupStateRequest(ApiMessage, load_json=_SCHEMAS): pass
class WriteShareGroupStateResponse(ApiMessage, load_json=_SCHEMAS): pass
class DeleteShareGroupStateRequest(ApiMessage, load_json=_SCHEMAS): pass
class DeleteShareGroupStateResponse(ApiMessage, load_json=_SCHEMAS): pass
class ReadShareGroupStateSummaryRequest(ApiMessage, load_json=_SCHEMAS): pass
class ReadShareGroupStateSummaryResponse(ApiMessage, load_json=_SCHEMAS): pass
class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=_SCHEMAS): pass
class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=_SCHEMAS): pass
class AlterShareGroupOffsetsRequest(ApiMessage, load_json=_SCHEMAS): pass
class AlterShareGroupOffsetsResponse(ApiMessage, load_json=_SCHEMAS): pass
class DeleteShareGroupOffsetsRequest(ApiMessage, load_json=_SCHEMAS): pass
class DeleteShareGroupOffsetsResponse(ApiMessage, load_json=_SCHEMAS): pass

#: (request, response) pairs by API key.
PAIRS = {
    76: (ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse),
    77: (ShareGroupDescribeRequest, ShareGroupDescribeResponse),
    78: (ShareFetchRequest, ShareFetchResponse),
    79: (ShareAcknowledgeRequest, ShareAcknowledgeResponse),
    83: (InitializeShareGroupStateRequest, InitializeShareGroupStateResponse),
    84: (ReadShareGroupStateRequest, ReadShareGroupStateResponse),
    85: (WriteShareGroupStateRequest, WriteShareGroupStateResponse),
    86: (DeleteShareGroupStateRequest, DeleteShareGroupStateResponse),
    87: (ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse),
    90: (DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse),
    91: (AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse),
    92: (DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse),
}

#: The versions Kafka 4.3's clients speak, by API key: (lowest, highest).
VERSIONS = {
    76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 83: (0, 0), 84: (0, 0),
    85: (0, 1), 86: (0, 0), 87: (0, 1), 90: (0, 1), 91: (0, 0), 92: (0, 0),
}

for _request, _response in PAIRS.values():
    messages.register(_request, _response)
