"""Broker configuration keys (server.properties), with Kafka 3.9's names,
types, defaults, validators and importance; ``kafkapy.*`` keys are our own.

Invariant: defaults equal Kafka 3.9's (KafkaConfig / ServerLogConfigs /
ReplicationConfigs / GroupCoordinatorConfig / TransactionLogConfigs ...), except the
consumer group protocol's (KIP-848, ``_consumer_groups``), which kafkapy serves as Kafka
4.0 does and so defines with Kafka 4.0's defaults: ``group.consumer.assignors`` =
uniform,range (Kafka's short names; the assignors' class names are accepted too) and
``group.consumer.migration.policy`` = bidirectional (no longer internal); and the share
groups' (KIP-932, ``_share_groups``, ``_share_fetch``, ``_share_coordinator``), with Kafka
4.2's.  ``group.coordinator.rebalance.protocols`` = classic,consumer,share: Kafka 4.2 lists
classic,consumer,streams and serves share groups while its ``share.version`` feature is at
level 1; kafkapy, which has no KRaft features to finalize, serves them while this list
names share (streams groups are not served).
``dynamic=True`` marks keys Kafka can update at runtime (DynamicBrokerConfig
.AllDynamicConfigs); DescribeConfigs reports every other broker key read-only.
Documentation strings are our own short summaries.
"""
from __future__ import annotations

from kafkapy.config.definitions import BROKER_CONFIGS as D
from kafkapy.config.definitions import BROKER_DYNAMIC_ONLY_CONFIGS
from kafkapy.config.definitions import Importance
from kafkapy.config.errors import ConfigError
from kafkapy.config.types import ConfigType as T
from kafkapy.config.validators import at_least, between, in_set, list_in, non_null, one_of_or, version_string, custom
from kafkapy.logging_setup import are_logger_levels, is_level

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW
INT_MAX = 2 ** 31 - 1
LONG_MAX = 2 ** 63 - 1
DOUBLE_MAX = 1.7976931348623157e308
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"


def _zookeeper() -> None:
    D.define("zookeeper.connect", T.STRING, None, None, H,
             "ZooKeeper connection string host:port[,host:port...][/chroot]; unset means kafkapy's embedded metadata store.")
    D.define("zookeeper.session.timeout.ms", T.INT, 18000, None, H, "ZooKeeper session timeout.")
    D.define("zookeeper.connection.timeout.ms", T.INT, None, None, H,
             "Longest wait for the ZooKeeper connection; unset means zookeeper.session.timeout.ms.")
    D.define("zookeeper.set.acl", T.BOOLEAN, False, None, H, "Create znodes with secure ACLs.")
    D.define("zookeeper.max.in.flight.requests", T.INT, 10, at_least(1), H,
             "Most unacknowledged requests sent to ZooKeeper before blocking.")
    D.define("zookeeper.ssl.client.enable", T.BOOLEAN, False, None, M, "Use TLS to ZooKeeper; kafkapy refuses true (its ZooKeeper connection is plaintext).")
    D.define("zookeeper.clientCnxnSocket", T.STRING, None, None, M, "ZooKeeper client socket class (TLS).")
    for store in ("keystore", "truststore"):
        D.define(f"zookeeper.ssl.{store}.location", T.STRING, None, None, M, f"ZooKeeper TLS {store} file.")
        D.define(f"zookeeper.ssl.{store}.password", T.PASSWORD, None, None, M, f"ZooKeeper TLS {store} password.")
        D.define(f"zookeeper.ssl.{store}.type", T.STRING, None, None, M, f"ZooKeeper TLS {store} format.")


def _general() -> None:
    D.define("broker.id.generation.enable", T.BOOLEAN, True, None, M,
             "Allow automatic broker id generation above reserved.broker.max.id.")
    D.define("reserved.broker.max.id", T.INT, 1000, at_least(0), M, "Highest broker id users may configure.")
    D.define("broker.id", T.INT, -1, None, H, "This broker's id; -1 lets the broker choose one.")
    D.define("message.max.bytes", T.INT, 1048588, at_least(0), H,
             "Largest record batch the broker accepts (topic override: max.message.bytes).", dynamic=True)
    D.define("num.network.threads", T.INT, 3, at_least(1), H, "Threads receiving requests and sending responses.", dynamic=True)
    D.define("num.io.threads", T.INT, 8, at_least(1), H, "Threads processing requests, including disk I/O.", dynamic=True)
    D.define("num.replica.alter.log.dirs.threads", T.INT, None, None, H, "Threads moving replicas between log dirs.")
    D.define("background.threads", T.INT, 10, at_least(1), H, "Threads for background housekeeping tasks.", dynamic=True)
    D.define("queued.max.requests", T.INT, 500, at_least(1), H, "Requests queued for the I/O threads before network reads pause.")
    D.define("queued.max.request.bytes", T.LONG, -1, None, M, "Bytes of queued requests before reads pause; -1 means no limit.")
    D.define("request.timeout.ms", T.INT, 30000, None, H, "Timeout of requests this broker sends.")
    D.define("socket.connection.setup.timeout.ms", T.LONG, 10000, None, M, "Initial timeout for outgoing connection setup.")
    D.define("socket.connection.setup.timeout.max.ms", T.LONG, 30000, None, M, "Maximum timeout for outgoing connection setup.")
    D.define("delete.topic.enable", T.BOOLEAN, True, None, H, "Allow topics to be deleted.")
    D.define("broker.rack", T.STRING, None, None, M, "Rack of this broker, for rack-aware replica placement.")


def _kraft() -> None:
    D.define("process.roles", T.LIST, [], list_in("broker", "controller"), H,
             "KRaft roles; kafkapy runs ZooKeeper-style only, so a non-empty value is refused.")
    D.define("node.id", T.INT, -1, None, H, "Node id; must equal broker.id when both are set.")
    D.define("controller.listener.names", T.STRING, None, None, H, "KRaft controller listener names; kafkapy refuses a value (no KRaft mode).")
    D.define("controller.quorum.voters", T.LIST, [], None, H, "KRaft voter set; kafkapy refuses a value (no KRaft mode).")
    D.define("metadata.log.dir", T.STRING, None, None, H, "KRaft metadata log directory (accepted, unused).")
    D.define("authorizer.class.name", T.STRING, "", non_null, L, "Authorizer class; empty means no authorization.")
    D.define("early.start.listeners", T.STRING, None, None, H, "Listeners started before authorizer initialisation.")


def _socket() -> None:
    D.define("listeners", T.STRING, "PLAINTEXT://:9092", None, H,
             "Comma-separated NAME://host:port URIs to listen on; empty host binds every interface.", dynamic=True)
    D.define("advertised.listeners", T.STRING, None, None, H,
             "Addresses published to clients and other brokers; unset means listeners.", dynamic=True)
    D.define("listener.security.protocol.map", T.STRING, DEFAULT_PROTOCOL_MAP, None, L,
             "Listener name to security protocol, NAME:PROTOCOL pairs.", dynamic=True)
    D.define("control.plane.listener.name", T.STRING, None, None, H, "Listener for controller-to-broker traffic.")
    D.define("socket.send.buffer.bytes", T.INT, 102400, None, H, "SO_SNDBUF of server sockets; -1 uses the OS default.")
    D.define("socket.receive.buffer.bytes", T.INT, 102400, None, H, "SO_RCVBUF of server sockets; -1 uses the OS default.")
    D.define("socket.request.max.bytes", T.INT, 104857600, at_least(1), H, "Largest request size accepted.")
    D.define("socket.listen.backlog.size", T.INT, 50, at_least(1), M, "Listen backlog of server sockets.")
    D.define("max.connections.per.ip", T.INT, INT_MAX, at_least(0), M, "Connections allowed from one address.", dynamic=True)
    D.define("max.connections.per.ip.overrides", T.STRING, "", None, M, "Per-address connection limits host:n,...", dynamic=True)
    D.define("max.connections", T.INT, INT_MAX, at_least(0), M, "Connections allowed to the broker.", dynamic=True)
    D.define("max.connection.creation.rate", T.INT, INT_MAX, at_least(0), M, "New connections per second allowed.", dynamic=True)
    D.define("connections.max.idle.ms", T.LONG, 600000, None, M, "Idle connections are closed after this long.")


def _log_basics() -> None:
    D.define("num.partitions", T.INT, 1, at_least(1), M, "Partitions of topics created without an explicit count.")
    D.define("log.dir", T.STRING, "/tmp/kafka-logs", None, H, "Data directory, used when log.dirs is unset.")
    D.define("log.dirs", T.STRING, None, None, H, "Comma-separated data directories; unset means log.dir.")
    D.define("log.segment.bytes", T.INT, 1073741824, at_least(14), H, "Size at which a segment is rolled.", dynamic=True)
    D.define("log.roll.ms", T.LONG, None, None, H, "Age at which a segment is rolled; unset means log.roll.hours.", dynamic=True)
    D.define("log.roll.hours", T.INT, 168, at_least(1), H, "Age in hours at which a segment is rolled.")
    D.define("log.roll.jitter.ms", T.LONG, None, None, H, "Random jitter subtracted from the roll time; unset means log.roll.jitter.hours.", dynamic=True)
    D.define("log.roll.jitter.hours", T.INT, 0, at_least(0), H, "Roll jitter in hours.")
    D.define("log.retention.ms", T.LONG, None, None, H,
             "Time a segment is kept; -1 means forever; unset means log.retention.minutes.", dynamic=True)
    D.define("log.retention.minutes", T.INT, None, None, H, "Retention in minutes; unset means log.retention.hours.")
    D.define("log.retention.hours", T.INT, 168, None, H, "Retention in hours (lowest priority of the three).")
    D.define("log.retention.bytes", T.LONG, -1, None, H, "Largest partition size before old segments go; -1 means no limit.", dynamic=True)
    D.define("log.retention.check.interval.ms", T.LONG, 300000, at_least(1), M, "How often retention is checked.")
    D.define("log.cleanup.policy", T.LIST, ["delete"], list_in("compact", "delete"), M,
             "Default cleanup policy: delete, compact or both.", dynamic=True)
    D.define("log.index.size.max.bytes", T.INT, 10485760, at_least(4), M, "Largest offset index size.", dynamic=True)
    D.define("log.index.interval.bytes", T.INT, 4096, at_least(0), M, "Bytes between offset index entries.", dynamic=True)
    D.define("log.flush.interval.messages", T.LONG, LONG_MAX, at_least(1), H, "Messages appended before an fsync.", dynamic=True)
    D.define("log.segment.delete.delay.ms", T.LONG, 60000, at_least(0), H, "Delay before a .deleted file is removed.", dynamic=True)
    D.define("log.flush.scheduler.interval.ms", T.LONG, LONG_MAX, None, H, "How often the flusher checks logs.")
    D.define("log.flush.interval.ms", T.LONG, None, None, H,
             "Longest time data stays unflushed; unset means log.flush.scheduler.interval.ms.", dynamic=True)
    D.define("log.flush.offset.checkpoint.interval.ms", T.INT, 60000, at_least(0), H, "Recovery-point checkpoint period.")
    D.define("log.flush.start.offset.checkpoint.interval.ms", T.INT, 60000, at_least(0), H, "Log-start-offset checkpoint period.")
    D.define("log.preallocate", T.BOOLEAN, False, None, M, "Preallocate new segment files.", dynamic=True)
    D.define("num.recovery.threads.per.data.dir", T.INT, 1, at_least(1), H, "Threads per data dir for recovery and shutdown flush.", dynamic=True)
    D.define("auto.create.topics.enable", T.BOOLEAN, True, None, H, "Create unknown topics on metadata requests.")
    D.define("min.insync.replicas", T.INT, 1, at_least(1), H, "Fewest in-sync replicas for an acks=all write.", dynamic=True)
    D.define("log.dir.failure.timeout.ms", T.LONG, 30000, at_least(1), L, "Time allowed to handle a failed log dir.")


def _log_messages() -> None:
    D.define("log.message.format.version", T.STRING, "3.0-IV1", version_string, M,
             "Deprecated; ignored with inter.broker.protocol.version >= 3.0.")
    D.define("log.message.timestamp.type", T.STRING, "CreateTime", in_set("CreateTime", "LogAppendTime"), M,
             "Timestamp stored in records: the producer's or the broker's.", dynamic=True)
    D.define("log.message.timestamp.difference.max.ms", T.LONG, LONG_MAX, at_least(0), M,
             "Deprecated: largest allowed gap between record and broker time.", dynamic=True)
    D.define("log.message.timestamp.before.max.ms", T.LONG, LONG_MAX, at_least(0), M,
             "How far in the past a CreateTime timestamp may be.", dynamic=True)
    D.define("log.message.timestamp.after.max.ms", T.LONG, LONG_MAX, at_least(0), M,
             "How far in the future a CreateTime timestamp may be.", dynamic=True)
    D.define("create.topic.policy.class.name", T.CLASS, None, None, L, "Policy class checking topic creation.")
    D.define("alter.config.policy.class.name", T.CLASS, None, None, L, "Policy class checking config changes.")
    D.define("log.message.downconversion.enable", T.BOOLEAN, True, None, L, "Down-convert records for old fetchers.", dynamic=True)
    D.define("log.local.retention.ms", T.LONG, -2, at_least(-2), M, "Local retention with tiered storage; -2 means log.retention.ms.", dynamic=True)
    D.define("log.local.retention.bytes", T.LONG, -2, at_least(-2), M, "Local size retention with tiered storage; -2 means log.retention.bytes.", dynamic=True)
    D.define("remote.log.storage.system.enable", T.BOOLEAN, False, None, M, "Tiered storage; not supported by kafkapy.")
    D.define("compression.type", T.STRING, "producer", in_set(*COMPRESSION_TYPES), H,
             "Codec of stored batches; producer keeps the producer's codec.", dynamic=True)
    D.define("compression.gzip.level", T.INT, -1, one_of_or(-1, 1, 9), M, "gzip level when recompressing.", dynamic=True)
    D.define("compression.lz4.level", T.INT, 9, between(1, 17), M, "lz4 level when recompressing.", dynamic=True)
    D.define("compression.zstd.level", T.INT, 3, between(-131072, 22), M, "zstd level when recompressing.", dynamic=True)


def _cleaner() -> None:
    D.define("log.cleaner.threads", T.INT, 1, at_least(0), M, "Log compaction threads.", dynamic=True)
    D.define("log.cleaner.io.max.bytes.per.second", T.DOUBLE, DOUBLE_MAX, None, M, "Cleaner I/O throttle.", dynamic=True)
    D.define("log.cleaner.dedupe.buffer.size", T.LONG, 134217728, None, M, "Memory for the cleaners' key maps.", dynamic=True)
    D.define("log.cleaner.io.buffer.size", T.INT, 524288, at_least(0), M, "Cleaner I/O buffer memory.", dynamic=True)
    D.define("log.cleaner.io.buffer.load.factor", T.DOUBLE, 0.9, None, M, "Fill factor of the dedupe map.", dynamic=True)
    D.define("log.cleaner.backoff.ms", T.LONG, 15000, at_least(0), M, "Cleaner sleep when nothing is cleanable.", dynamic=True)
    D.define("log.cleaner.min.cleanable.ratio", T.DOUBLE, 0.5, between(0, 1), M, "Dirty ratio that triggers cleaning.", dynamic=True)
    D.define("log.cleaner.enable", T.BOOLEAN, True, None, M, "Run the log cleaner.")
    D.define("log.cleaner.delete.retention.ms", T.LONG, 86400000, at_least(0), M, "How long tombstones are kept.", dynamic=True)
    D.define("log.cleaner.min.compaction.lag.ms", T.LONG, 0, at_least(0), M, "Minimum age before a record may be compacted.", dynamic=True)
    D.define("log.cleaner.max.compaction.lag.ms", T.LONG, LONG_MAX, at_least(1), M, "Maximum age before a record must be compactable.", dynamic=True)


def _replication() -> None:
    D.define("controller.socket.timeout.ms", T.INT, 30000, None, M, "Socket timeout of controller-to-broker channels.")
    D.define("default.replication.factor", T.INT, 1, None, M, "Replication factor of automatically created topics.")
    D.define("replica.lag.time.max.ms", T.LONG, 30000, None, H, "A follower not caught up within this leaves the ISR.")
    D.define("replica.socket.timeout.ms", T.INT, 30000, None, H, "Socket timeout of replica fetches.")
    D.define("replica.socket.receive.buffer.bytes", T.INT, 65536, None, H, "SO_RCVBUF of replica fetch sockets.")
    D.define("replica.fetch.max.bytes", T.INT, 1048576, at_least(0), M, "Bytes fetched per partition by followers.")
    D.define("replica.fetch.wait.max.ms", T.INT, 500, None, H, "Longest wait of a follower fetch.")
    D.define("replica.fetch.backoff.ms", T.INT, 1000, at_least(0), M, "Sleep after a replica fetch error.")
    D.define("replica.fetch.min.bytes", T.INT, 1, None, H, "Bytes a follower fetch waits for.")
    D.define("replica.fetch.response.max.bytes", T.INT, 10485760, at_least(0), M, "Largest follower fetch response.")
    D.define("num.replica.fetchers", T.INT, 1, None, H, "Fetcher threads per source broker.", dynamic=True)
    D.define("replica.high.watermark.checkpoint.interval.ms", T.LONG, 5000, None, H, "High-watermark checkpoint period.")
    D.define("fetch.purgatory.purge.interval.requests", T.INT, 1000, None, M, "Purge interval of the fetch purgatory.")
    D.define("producer.purgatory.purge.interval.requests", T.INT, 1000, None, M, "Purge interval of the produce purgatory.")
    D.define("delete.records.purgatory.purge.interval.requests", T.INT, 1, None, M, "Purge interval of the delete-records purgatory.")
    D.define("auto.leader.rebalance.enable", T.BOOLEAN, True, None, H, "Move leadership back to preferred replicas.")
    D.define("leader.imbalance.per.broker.percentage", T.INT, 10, None, H, "Imbalance percentage that triggers a rebalance.")
    D.define("leader.imbalance.check.interval.seconds", T.LONG, 300, at_least(1), H, "How often leader imbalance is checked.")
    D.define("unclean.leader.election.enable", T.BOOLEAN, False, None, H, "Allow out-of-ISR replicas to become leader.", dynamic=True)
    D.define("security.inter.broker.protocol", T.STRING, "PLAINTEXT", in_set(*SECURITY_PROTOCOLS), M,
             "Protocol between brokers; exclusive with inter.broker.listener.name.")
    D.define("inter.broker.protocol.version", T.STRING, "3.9-IV0", version_string, M, "Inter-broker protocol version.")
    D.define("inter.broker.listener.name", T.STRING, None, None, M, "Listener used between brokers.")
    D.define("replica.selector.class", T.STRING, None, None, M, "Class choosing the replica a consumer reads from.")
    D.define("controlled.shutdown.max.retries", T.INT, 3, None, M, "Controlled shutdown attempts.")
    D.define("controlled.shutdown.retry.backoff.ms", T.LONG, 5000, None, M, "Wait between controlled shutdown attempts.")
    D.define("controlled.shutdown.enable", T.BOOLEAN, True, None, M, "Hand over leadership before shutting down.")


def _groups_and_offsets() -> None:
    D.define("group.min.session.timeout.ms", T.INT, 6000, None, M, "Smallest session timeout a member may ask for.")
    D.define("group.max.session.timeout.ms", T.INT, 1800000, None, M, "Largest session timeout a member may ask for.")
    D.define("group.initial.rebalance.delay.ms", T.INT, 3000, None, M, "Wait for more members before the first rebalance.")
    D.define("group.max.size", T.INT, INT_MAX, at_least(1), M, "Most members in one group.")
    D.define("offset.metadata.max.bytes", T.INT, 4096, None, H, "Largest metadata string of a committed offset.")
    D.define("offsets.load.buffer.size", T.INT, 5242880, at_least(1), H, "Read batch size when loading offsets.")
    D.define("offsets.topic.replication.factor", T.SHORT, 3, at_least(1), H, "Replication factor of __consumer_offsets.")
    D.define("offsets.topic.num.partitions", T.INT, 50, at_least(1), H, "Partitions of __consumer_offsets.")
    D.define("offsets.topic.segment.bytes", T.INT, 104857600, at_least(1), H, "Segment size of __consumer_offsets.")
    D.define("offsets.topic.compression.codec", T.INT, 0, None, H, "Codec id for offset commits (0 = none).")
    D.define("offsets.retention.minutes", T.INT, 10080, at_least(1), H, "How long offsets of an empty group are kept.")
    D.define("offsets.retention.check.interval.ms", T.LONG, 600000, at_least(1), H, "How often stale offsets are checked.")
    D.define("offsets.commit.timeout.ms", T.INT, 5000, at_least(1), H, "Longest wait for an offset commit to replicate.")
    D.define("offsets.commit.required.acks", T.SHORT, -1, None, H, "Deprecated acks of offset commits.")


MIGRATION_POLICIES = ("DISABLED", "DOWNGRADE", "UPGRADE", "BIDIRECTIONAL")
GROUP_TYPES = ("consumer", "classic", "share", "unknown")
#: The share group assignor kafkapy has, by Kafka's short name and class name.
SHARE_ASSIGNORS = ("simple", "org.apache.kafka.coordinator.group.assignor.SimpleAssignor")
#: The server-side assignors kafkapy has, by Kafka's short name and by Kafka's class name.
ASSIGNORS = {"uniform": "uniform", "range": "range",
             "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
             "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range"}


def in_set_ignoring_case(*allowed: str):
    """CaseInsensitiveValidString."""
    return custom(lambda v: isinstance(v, str) and v.upper() in allowed,
                  "String must be one of (case insensitive): " + ", ".join(allowed))


def _rebalance_protocols(key: str, value: object) -> None:
    """ValidList.in(GroupType), then KafkaConfig's refusal to run without the classic one."""
    list_in(*GROUP_TYPES)(key, value)
    if "classic" not in [p.lower() for p in value]:  # type: ignore[union-attr]
        raise ConfigError("Disabling the 'classic' protocol is not supported.", key=key,
                          value=value)


def _assignors(key: str, value: object) -> None:
    """Kafka loads each entry as a built-in assignor or a class; kafkapy has only the
    built-in ones (``ASSIGNORS``), and needs at least one (the first is the default)."""
    if not value:
        raise ConfigError.invalid(key, value, "At least one assignor is required")
    for item in value:  # type: ignore[union-attr]
        if item not in ASSIGNORS:
            raise ConfigError.invalid(key, item, "kafkapy serves only Kafka's built-in "
                                      "assignors: uniform, range (or their class names)")


def _consumer_groups() -> None:
    """The consumer group protocol (KIP-848), read by the group coordinator; the group-level
    overrides of the session timeout and heartbeat interval are ``kafkapy.config.group_configs``."""
    D.define("group.coordinator.rebalance.protocols", T.LIST, ["classic", "consumer", "share"],
             _rebalance_protocols, M,
             "Rebalance protocols served; without consumer, ConsumerGroupHeartbeat and "
             "ConsumerGroupDescribe answer UNSUPPORTED_VERSION, without share the share group "
             "APIs do (classic cannot be disabled).")
    D.define("group.consumer.session.timeout.ms", T.INT, 45000, at_least(1), M,
             "Session timeout of consumer group members (group config: consumer.session.timeout.ms).")
    D.define("group.consumer.min.session.timeout.ms", T.INT, 45000, at_least(1), M,
             "Smallest consumer.session.timeout.ms a group may set.")
    D.define("group.consumer.max.session.timeout.ms", T.INT, 60000, at_least(1), M,
             "Largest consumer.session.timeout.ms a group may set.")
    D.define("group.consumer.heartbeat.interval.ms", T.INT, 5000, at_least(1), M,
             "Heartbeat interval given to consumer group members (group config: consumer.heartbeat.interval.ms).")
    D.define("group.consumer.min.heartbeat.interval.ms", T.INT, 5000, at_least(1), M,
             "Smallest consumer.heartbeat.interval.ms a group may set.")
    D.define("group.consumer.max.heartbeat.interval.ms", T.INT, 15000, at_least(1), M,
             "Largest consumer.heartbeat.interval.ms a group may set.")
    D.define("group.consumer.max.size", T.INT, INT_MAX, at_least(1), M, "Most members in one consumer group.")
    D.define("group.consumer.assignors", T.LIST, ["uniform", "range"], _assignors, M,
             "Server-side assignors (uniform, range, or their class names); the first is the default.")
    D.define("group.consumer.migration.policy", T.STRING, "bidirectional",
             in_set_ignoring_case(*MIGRATION_POLICIES), M,
             "Conversions of non-empty groups between the classic and consumer protocols: "
             "bidirectional, upgrade, downgrade or disabled.")


def _share_assignors(key: str, value: object) -> None:
    """Kafka 4.2: exactly one assignor; kafkapy has only the built-in ``simple``."""
    if not isinstance(value, list) or len(value) != 1:
        raise ConfigError(f"{key} must contain exactly one assignor, but found "
                          f"{len(value) if isinstance(value, list) else 0}", key=key, value=value)
    if value[0].strip() not in SHARE_ASSIGNORS:
        raise ConfigError.invalid(key, value[0], "kafkapy serves only Kafka's built-in share "
                                  "group assignor: simple (or its class name)")


def _share_groups() -> None:
    """The share group protocol's membership (KIP-932, Kafka 4.2's GroupCoordinatorConfig),
    read by the group coordinator; the group-level overrides are
    ``kafkapy.config.group_configs``."""
    D.define("group.share.session.timeout.ms", T.INT, 45000, at_least(1), M,
             "Session timeout of share group members (group config: share.session.timeout.ms).")
    D.define("group.share.min.session.timeout.ms", T.INT, 45000, at_least(1), M,
             "Smallest share.session.timeout.ms a group may set.")
    D.define("group.share.max.session.timeout.ms", T.INT, 60000, at_least(1), M,
             "Largest share.session.timeout.ms a group may set.")
    D.define("group.share.heartbeat.interval.ms", T.INT, 5000, at_least(1), M,
             "Heartbeat interval given to share group members (group config: share.heartbeat.interval.ms).")
    D.define("group.share.min.heartbeat.interval.ms", T.INT, 5000, at_least(1), M,
             "Smallest share.heartbeat.interval.ms a group may set.")
    D.define("group.share.max.heartbeat.interval.ms", T.INT, 15000, at_least(1), M,
             "Largest share.heartbeat.interval.ms a group may set.")
    D.define("group.share.max.size", T.INT, 200, between(1, 1000), M,
             "Most members in one share group (GROUP_MAX_SIZE_REACHED beyond).")
    D.define("group.share.assignors", T.LIST, ["simple"], _share_assignors, M,
             "The share groups' server-side assignor: simple (or its class name), exactly one.")
    D.define("group.share.initialize.retry.interval.ms", T.INT, 30000, at_least(1), L,
             "How long a share partition may stay initializing before a heartbeat asks the share "
             "coordinator again (at least offsets.commit.timeout.ms).", internal=True)


def _share_fetch() -> None:
    """The share-partition leader's keys (share groups, KIP-932, Kafka 4.2's defaults), read
    by ``kafkapy.share.manager``; the dead-letter prefix is KIP-1191's."""
    D.define("group.share.max.share.sessions", T.INT, 2000, at_least(1), M,
             "Most share sessions this broker keeps (ShareFetch answers SHARE_SESSION_LIMIT_REACHED beyond).")
    D.define("share.fetch.purgatory.purge.interval.requests", T.INT, 1000, None, M,
             "Purge interval (in requests) of the share fetch purgatory.")
    D.define("errors.deadletterqueue.topic.name.prefix", T.STRING, "dlq.", non_null, M,
             "Prefix every share group dead-letter topic name must start with.")


def _share_partitions() -> None:
    """The share partitions' keys (Kafka 4.2's ShareGroupConfig), read by
    ``kafkapy.share.manager`` for each ``kafkapy.share.partition.SharePartition``; the
    group configs ``share.record.lock.duration.ms`` and ``share.delivery.count.limit``
    override the first two per group, within the min/max lock durations."""
    D.define("group.share.record.lock.duration.ms", T.INT, 30000, between(1000, 3600000), M,
             "How long a share group member holds the records it acquired before they are released.")
    D.define("group.share.min.record.lock.duration.ms", T.INT, 15000, between(1000, 30000), M,
             "Smallest share.record.lock.duration.ms a group may set.")
    D.define("group.share.max.record.lock.duration.ms", T.INT, 60000, between(30000, 3600000), M,
             "Largest share.record.lock.duration.ms a group may set.")
    D.define("group.share.delivery.count.limit", T.INT, 5, between(2, 10), M,
             "Deliveries of a record to a share group before it is archived.")
    D.define("group.share.partition.max.record.locks", T.INT, 2000, between(100, 10000), M,
             "Most in-flight records of one share partition (from its start offset to its end offset).")


def _transactions() -> None:
    D.define("transactional.id.expiration.ms", T.INT, 604800000, at_least(1), H, "Idle time before a transactional id expires.")
    D.define("transaction.max.timeout.ms", T.INT, 900000, at_least(1), H, "Largest transaction timeout a client may ask for.")
    D.define("transaction.state.log.min.isr", T.INT, 2, at_least(1), H, "min.insync.replicas of __transaction_state.")
    D.define("transaction.state.log.load.buffer.size", T.INT, 5242880, at_least(1), H, "Read batch size when loading transactions.")
    D.define("transaction.state.log.replication.factor", T.SHORT, 3, at_least(1), H, "Replication factor of __transaction_state.")
    D.define("transaction.state.log.num.partitions", T.INT, 50, at_least(1), H, "Partitions of __transaction_state.")
    D.define("transaction.state.log.segment.bytes", T.INT, 104857600, at_least(1), H, "Segment size of __transaction_state.")
    D.define("transaction.abort.timed.out.transaction.cleanup.interval.ms", T.INT, 10000, at_least(1), L,
             "How often timed-out transactions are aborted.")
    D.define("transaction.remove.expired.transaction.cleanup.interval.ms", T.INT, 3600000, at_least(1), L,
             "How often expired transactional ids are removed.")
    D.define("transaction.partition.verification.enable", T.BOOLEAN, True, None, L,
             "Verify a partition is in the transaction before appending.", dynamic=True)
    D.define("producer.id.expiration.ms", T.INT, 86400000, at_least(1), L, "Idle time before producer id state expires.", dynamic=True)


def _share_coordinator() -> None:
    """Kafka 4.2's ShareCoordinatorConfig (share groups' persisted state)."""
    p = "share.coordinator."
    D.define(p + "state.topic.num.partitions", T.INT, 50, at_least(1), H, "Partitions of __share_group_state.")
    D.define(p + "state.topic.replication.factor", T.SHORT, 3, at_least(1), H, "Replication factor of __share_group_state.")
    D.define(p + "state.topic.min.isr", T.SHORT, 2, at_least(1), H, "min.insync.replicas of __share_group_state.")
    D.define(p + "state.topic.segment.bytes", T.INT, 104857600, at_least(1), H, "Segment size of __share_group_state.")
    D.define(p + "state.topic.compression.codec", T.INT, 0, None, H, "Codec id of share state records (0 = none).")
    D.define(p + "threads", T.INT, 1, at_least(1), M, "Threads of the share coordinator; accepted and described, unused (kafkapy runs it on the event loop).")
    D.define(p + "snapshot.update.records.per.snapshot", T.INT, 500, between(0, 500), M,
             "Update records of a share partition between two snapshot records.")
    D.define(p + "load.buffer.size", T.INT, 5242880, at_least(1), H, "Read batch size when loading share state; accepted and described, unused.")
    D.define(p + "append.linger.ms", T.INT, -1, at_least(-1), M, "Wait for share state writes to accumulate (-1 adaptive); accepted and described, unused (each write is appended at once).")
    D.define(p + "write.timeout.ms", T.INT, 5000, at_least(1), H, "Longest wait for a share state write to replicate.")
    D.define(p + "cached.buffer.max.bytes", T.INT, 1048588, at_least(524288), M,
             "Largest write buffer the share coordinator keeps for reuse; accepted and described, unused.", dynamic=True)
    D.define(p + "state.topic.prune.interval.ms", T.INT, 300000, at_least(1), L,
             "How often superseded share state records are deleted.", internal=True)
    D.define(p + "cold.partition.snapshot.interval.ms", T.INT, 300000, at_least(1), L,
             "How often share partitions without updates are snapshotted again.", internal=True)


def _fetch_metrics_security() -> None:
    D.define("max.incremental.fetch.session.cache.slots", T.INT, 1000, at_least(0), M, "Incremental fetch sessions kept.")
    D.define("fetch.max.bytes", T.INT, 57671680, at_least(1024), M, "Largest fetch response.")
    D.define("max.request.partition.size.limit", T.INT, 2000, at_least(1), M, "Most partitions in one request.")
    D.define("metric.reporters", T.LIST, [], None, L, "Metric reporter classes.", dynamic=True)
    D.define("ssl.client.auth", T.STRING, "none", in_set("required", "requested", "none"), M, "Client certificate policy.", dynamic=True)
    for store in ("keystore", "truststore"):
        D.define(f"ssl.{store}.type", T.STRING, "JKS", None, M, f"TLS {store} format.", dynamic=True)
        D.define(f"ssl.{store}.location", T.STRING, None, None, M, f"TLS {store} file.", dynamic=True)
        D.define(f"ssl.{store}.password", T.PASSWORD, None, None, M, f"TLS {store} password.", dynamic=True)
    D.define("ssl.key.password", T.PASSWORD, None, None, M, "Password of the private key.", dynamic=True)
    D.define("sasl.enabled.mechanisms", T.LIST, ["GSSAPI"], None, M, "SASL mechanisms enabled.", dynamic=True)
    D.define("sasl.mechanism.inter.broker.protocol", T.STRING, "GSSAPI", None, M, "SASL mechanism between brokers.", dynamic=True)


def _kafkapy() -> None:
    """kafkapy's own keys (not Kafka configs): internal, so DescribeConfigs lists one only when
    it is set in the file, as Kafka lists its internal keys; Kafka tools never see them otherwise."""
    D.define("cluster.id", T.STRING, None, None, M, "Cluster id (kafkapy); unset means generated on first start.", internal=True)
    D.define("kafkapy.metrics.port", T.INT, -1, between(-1, 65535), L, "Prometheus exporter port; -1 disables it.", internal=True)
    D.define("kafkapy.metrics.host", T.STRING, "127.0.0.1", None, L, "Address the Prometheus exporter binds (kafkapy.metrics.port); empty or 0.0.0.0 means every interface.", internal=True)
    D.define("kafkapy.log.format", T.STRING, "console", in_set("console", "json"), L, "Broker log output format.", internal=True)
    D.define("kafkapy.log.level", T.STRING, "INFO", custom(is_level, "String must be one of: "
             "ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF"), L,
             "Root log level (log4j's level names, any case), for kafkapy's and its libraries' loggers.", internal=True)
    D.define("kafkapy.log.levels", T.LIST, [], custom(are_logger_levels, "Each item must be "
             "logger=LEVEL with a log4j level name"), L,
             "Per-logger levels as logger=LEVEL items, covering child loggers: kazoo=WARN,kafkapy.server=DEBUG.", internal=True)
    D.define("kafkapy.metadata.store", T.STRING, None, in_set("embedded", "zookeeper"), M,
             "Metadata store; unset means zookeeper if zookeeper.connect is set, else embedded.", internal=True)
    D.define("kafkapy.max.inflight.requests.per.connection", T.INT, 100, at_least(1), L,
             "Requests read from one connection before reading pauses.", internal=True)
    D.define("kafkapy.fetch.sendfile.enable", T.BOOLEAN, True, None, L, "Serve fetches with sendfile(2).", internal=True)


def _dynamic_only() -> None:
    """Kafka's DynamicConfig.Broker quota keys (QuotaConfigs.brokerQuotaConfigs): set only
    through /config/brokers/<id> or <default>; Long.MAX_VALUE means unthrottled."""
    Q = BROKER_DYNAMIC_ONLY_CONFIGS
    Q.define("leader.replication.throttled.rate", T.LONG, LONG_MAX, at_least(0), M,
             "Bytes per second a leader sends to throttled follower replicas.", dynamic=True)
    Q.define("follower.replication.throttled.rate", T.LONG, LONG_MAX, at_least(0), M,
             "Bytes per second a follower fetches for throttled replicas.", dynamic=True)
    Q.define("replica.alter.log.dirs.io.max.bytes.per.second", T.LONG, LONG_MAX, at_least(0), M,
             "Bytes per second moved between log dirs of one broker.", dynamic=True)


for _section in (_zookeeper, _general, _kraft, _socket, _log_basics, _log_messages, _cleaner,
                 _replication, _groups_and_offsets, _consumer_groups, _share_groups, _share_fetch, _share_partitions,
                 _transactions,
                 _share_coordinator, _fetch_metrics_security, _kafkapy,
                 _dynamic_only):
    _section()
