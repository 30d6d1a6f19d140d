"""One module per API.  ``build_registry()`` collects them; ApiVersions advertises exactly these.

A handler gets ``ctx.services`` (``handlers.services.Services``: the components it may
call).  ``controller_delivery(cache, replica_manager, fence)`` is how the controller
reaches its own broker: the requests it sends itself are applied in-process by their
modules' ``apply(cache, replica_manager, fence, request)``, which is all they touch.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable

from kafkapy.api.spec import ApiSpec
from kafkapy.handlers import leader_and_isr, stop_replica, update_metadata

if TYPE_CHECKING:
    from kafkapy.metadata.cache import MetadataCache
    from kafkapy.metadata.controller_fence import ControllerFence
    from kafkapy.replication.replica_manager import ReplicaManager

HANDLER_MODULES = (
    "api_versions",
    "metadata",
    "produce",
    "fetch",
    "list_offsets",
    "offset_for_leader_epoch",
    "create_topics",
    "delete_topics",
    "create_partitions",
    "describe_configs",
    "describe_cluster",
    "init_producer_id",
    "find_coordinator",
    "join_group",
    "sync_group",
    "heartbeat",
    "leave_group",
    "offset_commit",
    "offset_fetch",
    "offset_delete",
    "describe_groups",
    "list_groups",
    "delete_groups",
    # the consumer group protocol (KIP-848)
    "consumer_group_heartbeat",
    "consumer_group_describe",
    # share groups (KIP-932): membership and description, at the group coordinator
    "share_group_heartbeat",
    "share_group_describe",
    # share groups' start offsets (KIP-932): the admin APIs, at the group coordinator
    "describe_share_group_offsets",
    "alter_share_group_offsets",
    "delete_share_group_offsets",
    # transactions
    "add_partitions_to_txn",
    "add_offsets_to_txn",
    "end_txn",
    "txn_offset_commit",
    "write_txn_markers",
    "describe_producers",
    "describe_transactions",
    "list_transactions",
    # share groups (KIP-932): records fetched and acknowledged at the share-partition leader
    "share_fetch",
    "share_acknowledge",
    # share groups' persisted state (KIP-932): to the share coordinator
    "initialize_share_group_state",
    "read_share_group_state",
    "write_share_group_state",
    "delete_share_group_state",
    "read_share_group_state_summary",
    # storage: deletion, topic configs, log dirs
    "delete_records",
    "alter_configs",
    "incremental_alter_configs",
    "describe_log_dirs",
    "alter_replica_log_dirs",
    # controller: leader election on request, partition reassignment
    "elect_leaders",
    "alter_partition_reassignments",
    "list_partition_reassignments",
    # from the controller to every broker (and, ControlledShutdown, to the controller)
    "leader_and_isr",
    "stop_replica",
    "update_metadata",
    "controlled_shutdown",
    # from a partition leader to the controller: ISR changes
    "alter_partition",
    # from a broker to the controller: producer id blocks
    "allocate_producer_ids",
    # finalized features (/feature), at the controller
    "update_features",
    # ACLs: SECURITY_DISABLED without an authorizer (Kafka's default), else the
    # AclAuthorizer's (kafkapy.security.authorizer), which the handlers consult through
    # kafkapy.security.authz
    "describe_acls",
    "create_acls",
    "delete_acls",
    # SASL authentication and SCRAM credentials
    "sasl_handshake",
    "sasl_authenticate",
    "describe_user_scram_credentials",
    "alter_user_scram_credentials",
    # delegation tokens (kafkapy.security.delegation_tokens)
    "create_delegation_token",
    "renew_delegation_token",
    "expire_delegation_token",
    "describe_delegation_token",
    # read-only: kafka-configs.sh --describe --entity-type users asks it first
    "describe_client_quotas",
    # client quotas written (kafka-configs.sh --alter --entity-type users|clients|ips)
    "alter_client_quotas",
)


def build_registry() -> dict[int, ApiSpec]:
    registry: dict[int, ApiSpec] = {}
    for name in HANDLER_MODULES:
        module = importlib.import_module(f"kafkapy.handlers.{name}")
        spec = ApiSpec.from_module(module)
        registry[spec.key] = spec
    return registry


def controller_delivery(cache: MetadataCache, replica_manager: ReplicaManager,
                        fence: ControllerFence) -> Callable[[Any], Any]:
    """LeaderAndIsr, StopReplica and UpdateMetadata from this broker's own controller,
    applied synchronously: request -> response (the controller's ``local_deliver``)."""
    apply = {module.API_KEY: module.apply
             for module in (leader_and_isr, stop_replica, update_metadata)}
    return lambda request: apply[request.API_KEY](cache, replica_manager, fence, request)
