"""Inter-broker messages kafka-python lacks, from Kafka's own schemas in ``protocol/``.

LeaderAndIsr (4), StopReplica (5) and UpdateMetadata (6) go from the controller to
every broker; ControlledShutdown (7), AlterPartition (56) and AllocateProducerIds
(67) from a broker to the controller.  The JSON files are Kafka 3.9's, unchanged, so
the wire bytes are Kafka's; importing this module registers the classes in
``messages.REQUESTS`` / ``RESPONSES``.
"""
from __future__ import annotations

from kafka.protocol.api_header import RequestHeader
from kafka.protocol.api_message import ApiMessage

from kafkapy.protocol import messages
from kafkapy.protocol.schema_package import ensure_schema_package

_SCHEMAS = ensure_schema_package()


class LeaderAndIsrRequest(ApiMessage, load_json=_SCHEMAS):
    # The schema's field "Type" shadows ApiMessage.type ("request"), which with_header needs.
    header_class = RequestHeader

    @classmethod
    def is_request(cls) -> bool:
        return True


class LeaderAndIsrResponse(ApiMessage, load_json=_SCHEMAS): pass
class StopReplicaRequest(ApiMessage, load_json=_SCHEMAS): pass
class StopReplicaResponse(ApiMessage, load_json=_SCHEMAS): pass
class UpdateMetadataRequest(ApiMessage, load_json=_SCHEMAS):
    header_class = RequestHeader    # as LeaderAndIsrRequest: a field "Type" shadows .type

    @classmethod
    def is_request(cls) -> bool:
        return True


class UpdateMetadataResponse(ApiMessage, load_json=_SCHEMAS): pass
class ControlledShutdownRequest(ApiMessage, load_json=_SCHEMAS): pass
class ControlledShutdownResponse(ApiMessage, load_json=_SCHEMAS): pass
class AlterPartitionRequest(ApiMessage, load_json=_SCHEMAS): pass
class AlterPartitionResponse(ApiMessage, load_json=_SCHEMAS): pass
class AllocateProducerIdsRequest(ApiMessage, load_json=_SCHEMAS): pass
class AllocateProducerIdsResponse(ApiMessage, load_json=_SCHEMAS): pass


for _request, _response in ((LeaderAndIsrRequest, LeaderAndIsrResponse),
                            (StopReplicaRequest, StopReplicaResponse),
                            (UpdateMetadataRequest, UpdateMetadataResponse),
                            (ControlledShutdownRequest, ControlledShutdownResponse),
                            (AlterPartitionRequest, AlterPartitionResponse),
                            (AllocateProducerIdsRequest, AllocateProducerIdsResponse)):
    messages.register(_request, _response)
