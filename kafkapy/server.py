"""The broker: wires configuration, metadata store, controller, logs, handlers and the listener.

Start-up order: every listener's port is bound first (Kafka's SocketServer binds
before anything else reaches the cluster), so a port in use stops the broker before
it locks or opens a log dir, connects to the metadata store, registers or runs for
controller; then logs are loaded (recovered off the event loop when the last
shutdown was not clean), the broker registers itself in the metadata store,
becomes controller (single node), loads topics, creates its partitions, and
only then listens and accepts (until then a connection is refused, as before the
bind).  Two brokers started at the same moment on one port can both bind (neither
listens yet); the second to listen fails then, with the same message.
Shutdown is the reverse: stop accepting,
finish in-flight requests, flush and checkpoint the logs, and write the
clean-shutdown marker so the next start skips recovery.

The metadata store is ZooKeeper when ``zookeeper.connect`` is set (unless
``kafkapy.metadata.store=embedded``), else the embedded file in the first log dir.
The log dirs are locked (``.lock``) before the store is opened, so a second broker
on the same dirs is refused before it touches the store in them.

A start-up failure the operator can fix (port in use, a log dir locked by another
broker, no usable log dir, ZooKeeper unreachable, a broker id held by another
session, a log dir of another cluster) raises ``StartupError``, whose message is
the one line to report; ``shutdown(after_failed_start=True)`` then quietly lets go
of what was opened (the logs get their clean-shutdown marker only if they had been
loaded completely).
"""
from __future__ import annotations

import asyncio
import functools
import gc
import os
import signal
import sys
from pathlib import Path
from typing import Callable

import structlog
from kazoo.exceptions import NodeExistsError, NoNodeError

from kafkapy import metrics
from kafkapy.admin.manager import AdminManager
from kafkapy.clock import SYSTEM_CLOCK, Clock
from kafkapy.config.broker import BrokerConfig, ConfigError, acl_authorizer_settings
from kafkapy.config.dynamic import DynamicBrokerConfig
from kafkapy.config.group_configs import GroupConfigs
from kafkapy.config.topic_configs import TopicConfigs
from kafkapy.controller.channel import ControllerChannelManager
from kafkapy.controller.controller import KafkaController
from kafkapy.coordinator.group.service import GroupService
from kafkapy.coordinator.share.broker_persister import BrokerPersister
from kafkapy.coordinator.share.service import ShareService
from kafkapy.coordinator.transaction.partition_adder import PartitionAdder
from kafkapy.coordinator.transaction.service import TransactionService
from kafkapy.handlers import build_registry, controller_delivery
from kafkapy.handlers.services import Services
from kafkapy.handlers.api_versions import unsupported_version_response
from kafkapy.log.cleaner import CleanerSettings, LogCleaner
from kafkapy.log.leader_epoch import wait_for_writes
from kafkapy.log.manager import CheckpointWrite, LogDirError, LogManager, write_checkpoint_files
from kafkapy.log.meta_properties import InconsistentMetaPropertiesError
from kafkapy.log.producer_state import ProducerStateManagerConfig
from kafkapy.metadata import paths
from kafkapy.metadata.cache import MetadataCache
from kafkapy.metadata.controller_fence import ControllerFence
from kafkapy.metadata.embedded import EmbeddedStore
from kafkapy.metadata.features import FinalizedFeatureCache
from kafkapy.metadata.membership import register_broker, resolve_broker_id
from kafkapy.metadata.producer_ids import ProducerIdManager
from kafkapy.metadata.store import MetadataStoreError
from kafkapy.metadata.topics import new_topic_id, topic_id_text
from kafkapy.metadata.zk_store import ZooKeeperStore
from kafkapy.network.client import use_inter_broker_security
from kafkapy.network.connection_quotas import ConnectionQuotas
from kafkapy.network.links import Links
from kafkapy.quota.client import ClientQuotas
from kafkapy.quota.controller_mutation import ControllerMutationQuotaManager
from kafkapy.quota.request import RequestQuota
from kafkapy.network.server import SocketServer
from kafkapy.purgatory import Purgatory, Timer
from kafkapy.replication.alter_log_dirs import AlterLogDirsManager
from kafkapy.replication.alter_partition import AlterPartitionManager
from kafkapy.replication.controlled_shutdown import controlled_shutdown
from kafkapy.replication.fetch_session import FetchManager, FetchSessionCache
from kafkapy.replication.fetcher import ReplicaFetcherManager
from kafkapy.replication.replica_manager import ReplicaManager
from kafkapy.security.authorizer import AclAuthorizer
from kafkapy.security.listener_setup import inter_broker_security, listener_ssl_context
from kafkapy.security.delegation_tokens import DelegationTokenManager
from kafkapy.security.sasl.credentials import CredentialCache
from kafkapy.share.dead_letters import DeadLetterWriter
from kafkapy.share.manager import SharePartitionManager

_log = structlog.get_logger("kafkapy.server")

# Failures whose message already says what is wrong and where: no traceback needed.
_OPERATOR_ERRORS = (LogDirError, InconsistentMetaPropertiesError, MetadataStoreError)


class StartupError(Exception):
    """The broker cannot start for a reason its one-line message names."""


def _log_dir_failed(log_dir: str, live_dirs: list[str]) -> None:
    """A log dir went offline after an I/O error.  Its partitions answer
    KAFKA_STORAGE_ERROR; with no live dir left the broker halts at once, as
    Kafka does: no clean-shutdown marker, so the next start recovers every log
    (a torn tail after the failed write is truncated; acknowledged batches
    lie before it)."""
    if not live_dirs:   # (LogManager.fail_dir has logged the dir and the error)
        _log.critical("Shutdown broker because all log dirs have failed", failed_dir=log_dir)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


def log_config_listener(config: BrokerConfig, replica_manager: ReplicaManager,
                        topic_config_of: Callable[[str], dict]) -> Callable[[set[str]], None]:
    """Kafka's DynamicLogConfig, as a dynamic config listener: when the topic defaults
    changed, every hosted log gets its topic's effective config again
    (``topic_config_of``: its overrides still win).  New logs need nothing: the log
    manager reads the defaults from ``config`` when it makes one."""
    applied = config.topic_defaults()

    def reapply(_changed: set[str]) -> None:
        nonlocal applied
        defaults = config.topic_defaults()
        if defaults == applied:
            return
        applied = defaults
        for (topic, _), partition in list(replica_manager.partitions.items()):
            try:
                partition.log.update_config(topic_config_of(topic))
            except Exception:
                _log.exception("re-applying log config failed", topic=topic)
    return reapply


def reapply_topic_config(replica_manager: ReplicaManager | None, topic: str,
                         topic_config_of: Callable[[str], dict]) -> None:
    """Kafka's TopicConfigHandler (a ``TopicConfigs`` listener): a topic's overrides
    changed, so every log this broker hosts for it gets the topic's effective config."""
    if replica_manager is None:
        return
    hosted = [p for (name, _), p in replica_manager.partitions.items() if name == topic]
    if not hosted:
        return
    config = topic_config_of(topic)
    for partition in hosted:
        partition.log.update_config(config)


def enable_unclean_leader_election(changed: set[str], config: BrokerConfig,
                                   controller: KafkaController, cache: MetadataCache) -> None:
    """Kafka's enableDefaultUncleanLeaderElection (a dynamic config listener): when
    unclean.leader.election.enable is turned on, the active controller retries every
    topic's offline partitions."""
    if ("unclean.leader.election.enable" in changed and config["unclean.leader.election.enable"]
            and controller.is_active):
        for topic in list(cache.topics):
            controller.enable_topic_unclean_leader_election(topic)


def _bind_failed(server: SocketServer, err: OSError) -> StartupError:
    """Kafka's SocketServer message: "Socket server failed to bind to host:port: reason."."""
    reason = err.strerror or str(err)
    return StartupError(f"Socket server failed to bind to {server.host or '0.0.0.0'}:"
                        f"{server.port}: {reason}.")


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK,
                 links: Links | None = None) -> None:
        """``links``: which other brokers this one reaches, handed to every inter-broker
        connection (None: all of them; ``kafkapy.testing`` cuts links through it)."""
        self.config = config
        self.clock = clock
        self.links = links
        self.node_id = config.node_id
        self.apis = build_registry()
        self.txn_coordinator = None
        self.store = None
        self.cache: MetadataCache | None = None
        self.controller: KafkaController | None = None
        self.admin: AdminManager | None = None
        self.topic_configs: TopicConfigs | None = None
        self.group_configs: GroupConfigs | None = None
        self.authorizer = None      # an AclAuthorizer when authorizer.class.name names it
        self.scram_credentials: CredentialCache | None = None   # once the store is open
        self.delegation_tokens: DelegationTokenManager | None = None   # once the store is open
        # /feature as Kafka's ZooKeeper-mode broker sees it (ApiVersions' finalized features)
        self.features: FinalizedFeatureCache | None = None
        self.dynamic_config: DynamicBrokerConfig | None = None     # once the store is open
        self.replica_fetchers: ReplicaFetcherManager | None = None
        self.alter_partition: AlterPartitionManager | None = None
        self.alter_log_dirs: AlterLogDirsManager | None = None   # moves between log dirs
        # The czxid of our /brokers/ids registration; -1 until registered.
        self.broker_epoch = -1
        self.log_manager: LogManager | None = None
        self.replica_manager: ReplicaManager | None = None
        self.producer_ids: ProducerIdManager | None = None
        self.groups: GroupService | None = None
        self.share_coordinator: ShareService | None = None
        self.share_persister: BrokerPersister | None = None
        self.share_partitions: SharePartitionManager | None = None   # share-partition leader
        self.loop: asyncio.AbstractEventLoop | None = None
        self.timer: Timer | None = None
        self.fetch_purgatory: Purgatory | None = None
        self.produce_purgatory: Purgatory | None = None
        self.fetch_manager = FetchManager(
            FetchSessionCache(config["max.incremental.fetch.session.cache.slots"]))
        self.connection_quotas: ConnectionQuotas | None = None     # one for every listener
        self.client_quotas: ClientQuotas | None = None      # once the store is open
        self.controller_mutation: ControllerMutationQuotaManager | None = None   # likewise
        self.socket_servers: list[SocketServer] = []
        # TLS/SASL settings of this broker's own connections to others (None: PLAINTEXT)
        self.inter_broker_security = None
        self.log_cleaner = None
        self._periodic: list[asyncio.Task] = []
        self._stopped = asyncio.Event()

    # -- start-up ---------------------------------------------------------------------
    async def start(self) -> None:
        """Start every part; raises ``StartupError`` for an operator-fixable failure."""
        try:
            await self._start()
        except _OPERATOR_ERRORS as err:
            raise StartupError(str(err)) from None

    async def _start(self) -> None:
        loop = self.loop = asyncio.get_running_loop()
        self._start_listeners()
        self.log_manager = self._log_manager()
        self.log_manager.open_dirs()
        self.store = self._open_store()
        cluster_id = self._cluster_id()
        self.node_id = resolve_broker_id(self.config, self.store, self.log_manager.live_log_dirs)
        self._start_configs(cluster_id)
        await loop.run_in_executor(None, self.log_manager.load, cluster_id, self.node_id,
                                   self._stored_topic_config)
        self._start_replication(loop)
        self._start_controller()
        self._start_coordinators()
        self.features.start()
        await self._register_broker()
        self.store.on_new_session(self._session_replaced)
        self.topic_configs.start()
        self.delegation_tokens.start()
        self._start_authorizer()
        # A controller elected here brings this broker's partitions online in-process
        # before the listeners open; otherwise the controller reaches them over the network.
        await self.controller.startup()
        await self._listen()
        self._serve_metrics()
        self._start_periodic_tasks()
        self._start_log_cleaner()
        _log.info("kafkapy broker started", node_id=self.node_id, cluster_id=cluster_id,
                  broker_epoch=self.broker_epoch, port=self.socket_server.port,
                  controller=self.cache.controller_id, topics=len(self.cache.topics))

    def _start_listeners(self) -> None:
        """Every listener bound, not yet listening: TLS material and SASL entries first (a
        listener that cannot serve stops the start), a taken port before the cluster is
        touched."""
        self.connection_quotas = ConnectionQuotas(self.config)
        self.socket_servers = [self._socket_server(listener) for listener in self.config.listeners]
        self.inter_broker_security = self._inter_broker_security()
        self._bind()

    def _start_configs(self, cluster_id: str) -> None:
        """The dynamic broker configs, the metadata cache and the topic configs."""
        self.scram_credentials = CredentialCache(self.store)
        self.delegation_tokens = DelegationTokenManager.from_config(self.store, self.clock,
                                                                    self.config)
        # Dynamic broker configs (/config/brokers/<id>, <default>): ``config[key]`` answers
        # with the effective value from here on; each part that reacts to a change gets a
        # listener once it exists (the connection quotas adopt stored limits at load).
        self.dynamic_config = DynamicBrokerConfig(self.config, self.store, self.node_id)
        self.dynamic_config.add_listener(
            lambda changed: self.connection_quotas.config_changed(self.config, changed))
        self.dynamic_config.load()
        # TopicConfigs follows the cache's topics, so it comes second; the cache reaches
        # it through a callable, read once UpdateMetadata names a topic.
        self.cache = MetadataCache(
            cluster_id, self.node_id, self.inter_broker_listener,
            topic_overrides=lambda name: self.topic_configs.overrides(name))
        self.controller_mutation = ControllerMutationQuotaManager(
            self.config["controller.quota.window.num"],
            self.config["controller.quota.window.size.seconds"], self.clock)
        self.client_quotas = ClientQuotas(
            self.store, self.clock, samples=self.config["quota.window.num"],
            window_s=self.config["quota.window.size.seconds"],
            ip_rate_changed=self.connection_quotas.update_ip_rate,
            managers=(self.controller_mutation,))
        self.client_quotas.load()
        self.topic_configs = TopicConfigs(self.store, self.cache, self.clock,
                                          dynamic_config=self.dynamic_config,
                                          credentials=self.scram_credentials,
                                          client_quotas=self.client_quotas)

    def _start_replication(self, loop) -> None:
        """The replica manager, its three helpers and the purgatories."""
        # What every controller request (network or in-process) passes through.
        self.controller_fence = ControllerFence(self.store, lambda: self.broker_epoch)
        # The helpers first (the replica manager is made with all three): they reach it,
        # and the controller made later, through callables read at call time.
        self.replica_fetchers = ReplicaFetcherManager(
            node_id=self.node_id, broker_epoch=lambda: self.broker_epoch, config=self.config,
            clock=self.clock, cache=self.cache, listener=self.inter_broker_listener,
            partition_of=lambda key: self.replica_manager.partitions.get(key),
            high_watermark_moved=lambda key: self.replica_manager.high_watermark_moved(key),
            links=self.links)
        self.alter_log_dirs = AlterLogDirsManager(
            config=self.config, clock=self.clock, log_manager=self.log_manager,
            node_id=self.node_id, cache=self.cache,
            partition_of=lambda key: self.replica_manager.partitions.get(key),
            log_swapped=lambda key: self.replica_manager.appended(key))
        self.alter_partition = AlterPartitionManager(   # ISR changes to the controller
            config=self.config, cache=self.cache, node_id=self.node_id,
            broker_epoch=lambda: self.broker_epoch,
            inter_broker_listener=self.inter_broker_listener,
            controller=lambda: self.controller,
            shrink_isrs=lambda: self.replica_manager.maybe_shrink_isr(),
            high_watermark_moved=lambda key: self.replica_manager.high_watermark_moved(key),
            links=self.links)
        self.replica_manager = ReplicaManager(self.log_manager, self.node_id, self.topic_config,
                                              fetchers=self.replica_fetchers,
                                              alter_partition=self.alter_partition,
                                              alter_log_dirs=self.alter_log_dirs,
                                              cache=self.cache, config=self.config,
                                              clock=self.clock,
                                              txn_coordinator=self._txn_verifier)
        self._start_purgatories(loop)
        self.dynamic_config.add_listener(log_config_listener(
            self.config, self.replica_manager, self.topic_config))

    def _start_controller(self) -> None:
        """The controller (delivering to this broker in-process) and the admin manager."""
        self.features = FinalizedFeatureCache(self.store)
        local = controller_delivery(self.cache, self.replica_manager, self.controller_fence)
        self.controller = KafkaController(
            config=self.config, node_id=self.node_id, clock=self.clock, store=self.store,
            topic_config=self.topic_config, local_deliver=local, features=self.features,
            channel_factory=functools.partial(ControllerChannelManager, links=self.links))
        self.admin = AdminManager(self.store, self.cache, self.config, self.topic_configs,
                                  dynamic_config=self.dynamic_config,
                                  controller=self.controller)
        self.topic_configs.add_listener(lambda name, _overrides: reapply_topic_config(
            self.replica_manager, name, self.topic_config))
        self.topic_configs.add_listener(self.controller.topic_config_changed)
        self.dynamic_config.add_listener(lambda changed: enable_unclean_leader_election(
            changed, self.config, self.controller, self.cache))

    def _start_coordinators(self) -> None:
        """Producer ids, the share coordinator and its persister, the group coordinator
        (with each group's configs) and the transaction coordinator."""
        self.producer_ids = ProducerIdManager(self.store, self.node_id)
        self._start_share_coordinator()
        self.group_configs = GroupConfigs(self.store, self.config, self.clock)
        self.group_configs.start()
        self.groups = GroupService(config=self.config, clock=self.clock, node_id=self.node_id,
                                   cache=self.cache, admin=self.admin,
                                   replica_manager=self.replica_manager, timer=self.timer,
                                   timeouts=self.group_configs, share_timeouts=self.group_configs,
                                   persister=self.share_persister)
        self.groups.start()
        self._start_share_partitions()
        self._start_transactions()

    def _start_share_coordinator(self) -> None:
        self.share_coordinator = ShareService(
            config=self.config, clock=self.clock, node_id=self.node_id, cache=self.cache,
            admin=self.admin, replica_manager=self.replica_manager, timer=self.timer)
        self.share_coordinator.start()
        self.share_persister = BrokerPersister(
            self.share_coordinator, node_id=self.node_id,
            request_timeout_ms=self.config["request.timeout.ms"],
            connect_timeout_ms=self.config["socket.connection.setup.timeout.ms"],
            links=self.links)

    def _start_share_partitions(self) -> None:
        """The share-partition leader (ShareFetch, ShareAcknowledge) and its dead letters."""
        dead_letters = DeadLetterWriter(
            replica_manager=self.replica_manager, cache=self.cache, config=self.config,
            topic_config_of=lambda name: (self.topic_config(name)
                                          if self.cache.topic(name) is not None else None),
            clock=self.clock, endpoint_of=self._inter_broker_endpoint,
            timeout_ms=self.config["request.timeout.ms"], links=self.links)
        self.share_partitions = SharePartitionManager(
            config=self.config, clock=self.clock, replica_manager=self.replica_manager,
            cache=self.cache, persister=self.share_persister, group_configs=self.group_configs,
            timer=self.timer, dead_letters=dead_letters)

    def _inter_broker_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        node = self.cache.brokers_for(self.inter_broker_listener).get(broker_id)
        return (node.host, node.port) if node is not None else None

    @property
    def inter_broker_listener(self) -> str:
        return self.config.inter_broker_listener_name

    @property
    def socket_server(self) -> SocketServer | None:
        """The first listener's server (the one a single-listener broker has)."""
        return self.socket_servers[0] if self.socket_servers else None

    def _bind(self) -> None:
        """Take every listener's port, not yet listening."""
        for server in self.socket_servers:
            try:
                server.bind()
            except OSError as err:
                raise _bind_failed(server, err) from None

    async def _listen(self) -> None:
        """Listen and accept on every listener: the broker serves from here on."""
        services = self._services()
        request_quota = RequestQuota(self.client_quotas.request)
        for server in self.socket_servers:
            try:
                await server.start(services, request_quota)
            except OSError as err:
                raise _bind_failed(server, err) from None

    def _serve_metrics(self) -> None:
        port, host = self.config["kafkapy.metrics.port"], self.config["kafkapy.metrics.host"]
        try:
            metrics.serve(self._metrics_collector(), port, host)
        except OSError as err:
            reason = os.strerror(err.errno) if err.errno else str(err)
            raise StartupError(f"Metrics endpoint failed to bind to {host or '0.0.0.0'}:{port} "
                               f"(kafkapy.metrics.port): {reason}.") from None

    def _metrics_collector(self) -> metrics.BrokerCollector:
        """The scrape's view of this broker: the parts it reads, each made by now."""
        return metrics.BrokerCollector(
            cache=self.cache, listeners=self.socket_servers,
            replica_manager=self.replica_manager, log_manager=self.log_manager,
            controller=self.controller,
            purgatories=(self.produce_purgatory, self.fetch_purgatory),
            # the group coordinator has no public view of its groups
            groups=lambda: self.groups.coordinator.groups, client_quotas=self.client_quotas,
            controller_mutation=self.controller_mutation)

    def _start_transactions(self) -> None:
        self.txn_coordinator = TransactionService(
            config=self.config, clock=self.clock, node_id=self.node_id, cache=self.cache,
            admin=self.admin, replica_manager=self.replica_manager, timer=self.timer,
            producer_ids=self.producer_ids, groups=self.groups, features=self.features,
            links=self.links)
        self.txn_coordinator.start()

    def _txn_verifier(self) -> PartitionAdder | None:
        """What the replica manager asks to verify transactional produces and to add a
        v2 client's partitions: made after the replica manager, so it asks through this."""
        service = self.txn_coordinator
        return service.adder if service is not None else None

    def _log_manager(self) -> LogManager:
        c = self.config
        # Flushing (fsync) runs off the loop in _log_maintenance, not in periodic().
        return LogManager(
            # read at use time: dynamic topic defaults apply to the next log made
            c.log_dirs, self.clock, c.topic_defaults,
            flush_check_interval_ms=2**63 - 1,
            recovery_point_checkpoint_interval_ms=c["log.flush.offset.checkpoint.interval.ms"],
            log_start_offset_checkpoint_interval_ms=c["log.flush.start.offset.checkpoint.interval.ms"],
            high_watermark_checkpoint_interval_ms=c["replica.high.watermark.checkpoint.interval.ms"],
            retention_check_interval_ms=c["log.retention.check.interval.ms"],
            producer_expiration_check_interval_ms=c["producer.id.expiration.check.interval.ms"],
            # read at use time: a dynamic producer.id.expiration.ms applies at once
            producer_state_config=ProducerStateManagerConfig(
                lambda: c["producer.id.expiration.ms"]),
            recovery_threads_per_data_dir=lambda: c["num.recovery.threads.per.data.dir"],
            on_dir_failure=_log_dir_failed)

    def _start_purgatories(self, loop) -> None:
        """One timing wheel drives every delayed operation of this broker."""
        self.timer = Timer(loop, self.clock)
        self.fetch_purgatory = Purgatory(
            "Fetch", self.timer, self.config["fetch.purgatory.purge.interval.requests"])
        self.produce_purgatory = Purgatory(
            "Produce", self.timer, self.config["producer.purgatory.purge.interval.requests"])
        self.replica_manager.attach_purgatories(self.fetch_purgatory, self.produce_purgatory,
                                                loop)

    def _start_authorizer(self) -> None:
        """Kafka's AclAuthorizer when configured (config/broker.py refuses other classes)."""
        if not self.config["authorizer.class.name"]:
            return
        self.authorizer = AclAuthorizer(self.store, *acl_authorizer_settings(self.config))
        self.authorizer.start()

    def _open_store(self):
        if self.config.metadata_store == "zookeeper":
            store = ZooKeeperStore(self.config["zookeeper.connect"],
                                   self.config["zookeeper.session.timeout.ms"],
                                   self.config["zookeeper.connection.timeout.ms"])
        else:
            first_dir = self.config.log_dirs[0]
            if first_dir in self.log_manager.offline_dirs:
                # Another dir would hold a fresh store: every topic would be forgotten.
                raise StartupError(
                    f"Log dir {first_dir} is unusable and holds the embedded metadata store "
                    "(the first of log.dirs); repair it, or keep the metadata in ZooKeeper "
                    "(zookeeper.connect)")
            store = EmbeddedStore(Path(first_dir) / "kafkapy-metadata.json")
        paths.ensure_base_paths(store)
        return store

    def _cluster_id(self) -> str:
        try:
            data, _ = self.store.get(paths.CLUSTER_ID)
            if data:
                return paths.decode_cluster_id(data)
        except NoNodeError:
            pass
        cluster_id = self.config["cluster.id"] or topic_id_text(new_topic_id())
        try:
            self.store.create(paths.CLUSTER_ID, paths.encode_cluster_id(cluster_id),
                              makepath=True)
        except NodeExistsError:     # another broker of the cluster was first: use its id
            return paths.decode_cluster_id(self.store.get(paths.CLUSTER_ID)[0])
        return cluster_id

    def _stale_wait_ms(self) -> int:
        # A killed broker's ZooKeeper session outlives it by up to the session timeout.
        return 2 * self.config["zookeeper.session.timeout.ms"]

    async def _register_broker(self) -> None:
        self.broker_epoch = await register_broker(self.store, self.config, self.node_id,
                                                  self.clock.time_ms(), self._stale_wait_ms())
        _log.info("registered broker", node_id=self.node_id, broker_epoch=self.broker_epoch)

    def _session_replaced(self) -> None:
        """ZooKeeper expired our session (a long pause, a partition) and kazoo opened a new
        one: the registration and ``/controller`` went with the old one.  As Kafka's broker:
        resign as controller, register again (a new broker epoch), then run for controller."""
        if self._stopped.is_set():
            return
        _log.warning("metadata store session expired; registering again")
        self.controller.on_session_expired()

        async def again() -> None:
            try:
                await self._register_broker()
                await self.controller.reelect()
                _log.info("registered again", broker_epoch=self.broker_epoch)
            except Exception:
                _log.exception("registering again failed")
            try:
                self.features.refresh()     # the old session's /feature watch is gone
            except Exception:
                _log.exception("reading /feature again failed")
        self._periodic.append(self.loop.create_task(again()))

    def _socket_server(self, listener) -> SocketServer:
        name, host, port = listener
        protocol = self.config.listener_security_protocol_map.get(name, "PLAINTEXT")
        ssl_context = None
        if protocol != "PLAINTEXT":
            try:
                ssl_context = listener_ssl_context(self.config, name, protocol)
            except ValueError as err:
                raise StartupError(str(err)) from None
        return SocketServer(
            self.config, self.apis, host, port,
            max_request_bytes=self.config["socket.request.max.bytes"],
            max_inflight=self.config["kafkapy.max.inflight.requests.per.connection"],
            idle_ms=self.config["connections.max.idle.ms"],
            unsupported_api_versions=lambda cid: unsupported_version_response(self.apis, cid),
            # sendfile cannot write through TLS: Fetch copies on SSL listeners
            zero_copy=self.config["kafkapy.fetch.sendfile.enable"] and ssl_context is None,
            listener=name, security_protocol=protocol, ssl_context=ssl_context,
            quotas=self.connection_quotas,
            authorizer_enabled=bool(self.config["authorizer.class.name"]))

    def _inter_broker_security(self):
        """This broker's TLS/SASL settings towards the others; every BrokerConnection made
        without its own (controller channel, fetchers, markers, ...) uses them."""
        try:
            security = inter_broker_security(self.config)
        except ValueError as err:
            raise StartupError(str(err)) from None
        use_inter_broker_security(security)
        return security

    def _start_periodic_tasks(self) -> None:
        self._periodic.append(asyncio.ensure_future(self._every(1000, self._log_maintenance)))
        if self.delegation_tokens.enabled:      # Kafka's delete-expired-tokens task
            interval = int(self.config["delegation.token.expiry.check.interval.ms"])
            self._periodic.append(asyncio.ensure_future(
                self._every(interval, self._expire_delegation_tokens)))
        # Kafka's isr-expiration: ISR shrink check every replica.lag.time.max.ms / 2.
        self.alter_partition.start()

    def _stored_topic_config(self, name: str) -> dict | None:
        """A topic's stored overrides, for recovery at load (before topics are loaded)."""
        try:
            return self.config.validate_topic_configs(self.topic_configs.overrides(name))
        except ConfigError:
            return None

    def _start_log_cleaner(self) -> None:
        settings = CleanerSettings.from_broker_config(self.config)
        self.log_cleaner = LogCleaner(self.log_manager, settings, self.clock)
        self.log_cleaner.start()

    async def _every(self, interval_ms: int, work) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000.0)
            try:
                await work()
            except Exception:
                _log.exception("periodic task failed", task=work.__name__)

    async def _expire_delegation_tokens(self) -> None:
        self.delegation_tokens.expire_tokens()

    async def _log_maintenance(self) -> None:
        """Every second: fsync what is due (rolled segments, flush.ms) off the loop, then
        checkpoints, retention and producer expiry on the loop (they change log state),
        the checkpoint files written off the loop (as Kafka's scheduler threads write
        them: two fsyncs per file would stall every connection of the broker)."""
        now = self.clock.time_ms()
        await self.loop.run_in_executor(None, self.log_manager.flush_dirty, now)
        writes: list[CheckpointWrite] = []
        self.log_manager.periodic(now, checkpoint_queue=writes)
        if writes:
            failed = await self.loop.run_in_executor(None, write_checkpoint_files, writes)
            for log_dir, err in failed:
                self.log_manager.fail_dir(log_dir, err)

    def _services(self) -> Services:
        """What the handlers may call, once every component exists."""
        return Services(
            node_id=self.node_id, config=self.config, clock=self.clock, apis=self.apis,
            store=self.store, cache=self.cache, features=self.features,
            dynamic_config=self.dynamic_config, authorizer=self.authorizer,
            scram_credentials=self.scram_credentials,
            delegation_tokens=self.delegation_tokens, log_manager=self.log_manager,
            replica_manager=self.replica_manager, fetch_manager=self.fetch_manager,
            alter_log_dirs=self.alter_log_dirs, controller=self.controller,
            controller_fence=self.controller_fence, admin=self.admin,
            producer_ids=self.producer_ids, groups=self.groups,
            txn_coordinator=self.txn_coordinator,
            share_coordinator=self.share_coordinator, persister=self.share_persister,
            share_partitions=self.share_partitions, client_quotas=self.client_quotas,
            controller_mutation=self.controller_mutation,
            links=self.links)

    def topic_config(self, name: str) -> dict:
        """The topic's effective config: broker defaults and its stored overrides."""
        config = dict(self.config.topic_defaults())
        overrides = self.topic_configs.overrides(name) if self.topic_configs else None
        if overrides:
            config.update(self.config.validate_topic_configs(overrides))
        return config

    # -- shutdown ---------------------------------------------------------------------------
    async def _controlled_shutdown(self) -> None:
        """Kafka's controlled shutdown: ask the controller to move every leadership away
        (``controlled.shutdown.max.retries`` attempts) while this broker still serves, so
        clients switch to the new leaders before it stops."""
        if not self.config["controlled.shutdown.enable"] or self.broker_epoch < 0:
            return
        try:
            await controlled_shutdown(      # logs a failure itself
                config=self.config, cache=self.cache,
                inter_broker_listener=self.inter_broker_listener, node_id=self.node_id,
                broker_epoch=lambda: self.broker_epoch, controller=self.controller,
                links=self.links)
        except Exception:
            _log.exception("controlled shutdown failed")

    async def serve_forever(self) -> None:
        await self._stopped.wait()

    def request_stop(self) -> None:
        self._stopped.set()

    async def shutdown(self, after_failed_start: bool = False) -> None:
        """Stop every part that was started; after a failed start quietly, since the
        failure is the one thing to report."""
        if not after_failed_start:
            _log.info("shutting down")
            await self._controlled_shutdown()
        if self.replica_fetchers is not None:
            await self.replica_fetchers.shutdown()
        if self.alter_log_dirs is not None:
            await self.alter_log_dirs.shutdown()
        if self.alter_partition is not None:
            self.alter_partition.close()
        if self.controller is not None:
            await self.controller.shutdown()
        if self.topic_configs is not None:
            self.topic_configs.stop()
        if self.group_configs is not None:
            self.group_configs.stop()
        if self.delegation_tokens is not None:
            self.delegation_tokens.stop()
        if self.features is not None:
            self.features.stop()
        if self.admin is not None:
            self.admin.close()
        for server in self.socket_servers:
            await server.stop_accepting()
        for server in self.socket_servers:
            await server.drain_and_close()
        for task in self._periodic:
            task.cancel()
        if self.groups is not None:
            self.groups.shutdown()
        if self.txn_coordinator is not None:
            self.txn_coordinator.shutdown()
        if self.share_partitions is not None:
            self.share_partitions.shutdown()
        if self.share_persister is not None:
            self.share_persister.close()
        if self.share_coordinator is not None:
            self.share_coordinator.shutdown()
        for purgatory in (self.fetch_purgatory, self.produce_purgatory):
            if purgatory is not None:
                purgatory.shutdown()
        if self.timer is not None:
            self.timer.close()
        if self.log_cleaner is not None:
            await self.log_cleaner.stop()
        if self.log_manager is not None:
            # Queued leader-epoch-checkpoint writes land before the logs close and sync.
            await asyncio.get_running_loop().run_in_executor(None, wait_for_writes)
            await asyncio.get_running_loop().run_in_executor(None, self.log_manager.shutdown)
        if self.store is not None:
            self.store.close()
        if not after_failed_start:
            _log.info("shut down cleanly")


async def serve(config: BrokerConfig) -> int:
    """Run a broker until SIGTERM or SIGINT (``kafkapy-server-start``): 0 after a clean
    shutdown, 1 when start-up failed (one line for what the operator can fix)."""
    broker = Broker(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, broker.request_stop)
    log = structlog.get_logger("kafkapy")
    try:
        await broker.start()
    except StartupError as err:
        # The message names the problem and where; a traceback would bury it.
        log.critical(f"start-up failed: {err}")
        await _close_after_failed_start(broker)
        return 1
    except Exception as err:    # a bug: its traceback is what a report needs
        log.exception("start-up failed", error=str(err))
        await _close_after_failed_start(broker)
        return 1
    _settle_gc()
    await broker.serve_forever()
    await broker.shutdown()
    return 0


def _settle_gc() -> None:
    """Once started: what start-up left alive (modules, registries, the logs loaded) goes
    to the permanent generation, out of every later full collection, and a full collection
    comes after 100 middle-generation ones, not 10 (young and middle ones unchanged: short
    pauses).  With the defaults, opening thousands of connections (each keeps ~7 tracked
    objects: transport, socket, protocol...) ran a full collection of the whole heap every
    few thousand connections, stalling the loop for 20-50 ms each (the p99 of
    connect + ApiVersions under many connections)."""
    gc.freeze()
    gc.set_threshold(700, 10, 100)


async def _close_after_failed_start(broker) -> None:
    try:
        await broker.shutdown(after_failed_start=True)
    except Exception as err:    # the start-up failure stays the line that matters
        structlog.get_logger("kafkapy").warning(f"cleanup after the failed start-up: {err}")
