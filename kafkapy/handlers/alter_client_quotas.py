"""AlterClientQuotas (key 49, v0-1): set or remove client quotas, as Kafka 3.9's ZooKeeper
mode does on any broker (KafkaApis.handleAlterClientQuotasRequest -> ZkAdminManager.
alterClientQuotas; the checks, writes and notifications are
``kafkapy.config.client_quotas.alter``).

ALTER_CONFIGS on the cluster is needed (else CLUSTER_AUTHORIZATION_FAILED for every
entry).  ``validate_only`` checks and writes nothing.  Each result's entity lists its
components in the order of the Java HashMap Kafka decodes them into.
"""
from __future__ import annotations

from kafkapy.config import client_quotas
from kafkapy.jvm import java_hash_order, sized_map_capacity, string_hash
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import authz

API_KEY = 49
MIN_VERSION = 0
MAX_VERSION = 1


def handle(ctx, request):
    entries = [({e.entity_type: e.entity_name for e in entry.entity},
                [(op.key, None if op.remove else op.value) for op in entry.ops])
               for entry in request.entries]
    if not authz.cluster(ctx, authz.ALTER_CONFIGS):      # the entities as sent
        return ctx.response(throttle_time_ms=0, entries=[
            (int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "Cluster authorization failed.",
             [(e.entity_type, e.entity_name) for e in entry.entity])
            for entry in request.entries])
    results = client_quotas.alter(ctx.services.store, entries, request.validate_only)
    return ctx.response(throttle_time_ms=0, entries=[
        (code, message, _entity_data(entity)) for entity, code, message in results])


def _entity_data(entity: dict) -> list:
    return [(kind, entity[kind])
            for kind in java_hash_order(entity, string_hash, sized_map_capacity(len(entity)))]
