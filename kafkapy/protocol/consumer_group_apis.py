"""The consumer group protocol's APIs (KIP-848), which kafka-python lacks: ConsumerGroupHeartbeat
(68) and ConsumerGroupDescribe (69), from Kafka's own schemas in ``protocol/``.

The schemas are Kafka's as its 4.x clients speak them: ConsumerGroupHeartbeat v0-1 (v1 adds
``SubscribedTopicRegex``), ConsumerGroupDescribe v0-1 (v1 adds the member's ``MemberType``,
int8: -1 unknown, 0 classic, 1 consumer), so the wire bytes are Kafka's.  As kafka-python
does for DescribeGroups, ``AuthorizedOperations`` is read and written as a set of
operation codes (``None``: not asked, INT32_MIN on the wire).  Importing this module
registers the classes in ``messages.REQUESTS`` / ``RESPONSES``.
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from kafkapy.protocol import messages
from kafkapy.protocol.schema_package import ensure_schema_package

_SCHEMAS = ensure_schema_package()


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=_SCHEMAS): pass
class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=_SCHEMAS): pass
class ConsumerGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS): pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):
    @classmethod
    def json_patch(cls, json):
        group = json["fields"][1]
        ops = next(f for f in group["fields"] if f["name"] == "AuthorizedOperations")
        ops["type"] = "bitfield"
        return json


for _request, _response in ((ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
                            (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse)):
    messages.register(_request, _response)
