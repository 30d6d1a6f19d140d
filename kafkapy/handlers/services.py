"""What a handler may call: every component a request can reach, typed, built once.

``server.py`` builds one ``Services`` after every component exists and before any
listener accepts, and hands it to the listeners, which put it on each request's context
(``ctx.services``).  A handler reads the component that owns the state it asks about
(the replica manager for the log, a coordinator for its group, the admin manager for
topics and configs) and makes its call there; nothing here holds state of its own, and
no field is ever reassigned.  Tests build one with ``tests/support/services.py``.

``txn_coordinator`` is None on a broker whose transactions are disabled; a transactional
API then answers COORDINATOR_NOT_AVAILABLE (``handlers/_txn.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only: the components' modules are imported by server.py
    from kafkapy.admin.manager import AdminManager
    from kafkapy.api.spec import ApiSpec
    from kafkapy.clock import Clock
    from kafkapy.config.services import BrokerConfig
    from kafkapy.config.dynamic import DynamicBrokerConfig
    from kafkapy.controller.controller import KafkaController
    from kafkapy.coordinator.group.service import GroupService
    from kafkapy.coordinator.share.persister import Persister
    from kafkapy.coordinator.share.service import ShareService
    from kafkapy.coordinator.transaction.service import TransactionService
    from kafkapy.log.manager import LogManager
    from kafkapy.metadata.cache import MetadataCache
    from kafkapy.metadata.controller_fence import ControllerFence
    from kafkapy.metadata.features import FinalizedFeatureCache
    from kafkapy.metadata.producer_ids import ProducerIdManager
    from kafkapy.metadata.store import MetadataStore
    from kafkapy.network.links import Links
    from kafkapy.replication.alter_log_dirs import AlterLogDirsManager
    from kafkapy.replication.fetch_session import FetchManager
    from kafkapy.quota.client import ClientQuotas
    from kafkapy.quota.controller_mutation import ControllerMutationQuotaManager
    from kafkapy.replication.replica_manager import ReplicaManager
    from kafkapy.security.authorizer import AclAuthorizer
    from kafkapy.security.delegation_tokens import DelegationTokenManager
    from kafkapy.security.sasl.credentials import CredentialCache
    from kafkapy.share.manager import SharePartitionManager


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    """The components handlers call, by the name Kafka's KafkaApis gives each."""

    node_id: int
    config: BrokerConfig
    clock: Clock
    apis: dict[int, ApiSpec]                # the API registry ApiVersions advertises
    store: MetadataStore
    cache: MetadataCache
    features: FinalizedFeatureCache
    dynamic_config: DynamicBrokerConfig
    authorizer: AclAuthorizer | None        # None: no authorizer.class.name, all allowed
    scram_credentials: CredentialCache
    delegation_tokens: DelegationTokenManager
    log_manager: LogManager
    replica_manager: ReplicaManager
    fetch_manager: FetchManager
    alter_log_dirs: AlterLogDirsManager
    controller: KafkaController
    controller_fence: ControllerFence
    admin: AdminManager
    producer_ids: ProducerIdManager
    groups: GroupService
    txn_coordinator: TransactionService | None
    share_coordinator: ShareService         # __share_group_state and its coordinator
    persister: Persister                    # share partitions' state, routed to its coordinator
    share_partitions: SharePartitionManager | None  # ShareFetch/ShareAcknowledge; None: off
    client_quotas: ClientQuotas             # the produce and fetch byte-rate quotas
    controller_mutation: ControllerMutationQuotaManager  # CreateTopics/Partitions, DeleteTopics
    links: Links | None = None              # which brokers are reachable (None: all)
