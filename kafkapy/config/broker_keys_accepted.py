"""Broker keys Kafka 3.9 defines beyond ``broker_keys``: accepted and described, most of
them unused; each group's documentation string says what kafkapy does with its keys.

Job: a Kafka user's server.properties must start kafkapy, and DescribeConfigs of a
BROKER must list the same keys as Kafka 3.9 (ZooKeeper mode), with Kafka's name,
type, default, validator, importance and dynamic (not read-only) flag.  The facts
were read from Kafka 3.9's own ConfigDef (KafkaConfig.configDef) and its
DescribeConfigs answer; the documentation strings are our own, and DescribeConfigs
sends them to clients, so each must say truly whether kafkapy reads the key.

What is read: the TLS/SASL listener settings and ``delegation.token.*``
(``kafkapy.security``), the client quota and connection quota window (``quota.window.*``,
``kafkapy.quota.client``, ``kafkapy.network.connection_quotas``), the controller mutation
quota's window (``controller.quota.window.*``, ``kafkapy.quota.controller_mutation``), the
replication and log-dir-move throttle windows (``kafkapy.replication.quota``,
``alter_log_dirs``).  What is unused: tiered storage (``remote.*``), ZooKeeper client
TLS, KRaft tuning, Kerberos, OAUTHBEARER, the password encoder,
share groups and the group coordinator's threads and linger, JMX metrics and the client quota callback.

Invariants: every row's value is parsed and validated like any other key (a bad
value still fails start-up); ``internal`` rows are Kafka's internal keys, which
DescribeConfigs lists only when set in the file (as Kafka does); kafkapy's own
refusals (the KRaft role and quorum keys, an authorizer other than AclAuthorizer,
``remote.log.storage.system.enable=true``, SASL mechanisms other than PLAIN and
SCRAM) stay in ``kafkapy.config.broker`` and ``kafkapy.security`` and are not
weakened by accepting these names here.
"""
from __future__ import annotations

from kafkapy.config.definitions import BROKER_CONFIGS as D
from kafkapy.config.definitions import Importance
from kafkapy.config.types import ConfigType as T
from kafkapy.config.validators import at_least, between, non_empty, one_of_or

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW
INT_MAX = 2 ** 31 - 1
LONG_MAX = 2 ** 63 - 1
# Each group: (what kafkapy does with these keys, rows of
# (name, type, default, validator, importance, dynamic[, internal])).
_TIERED = ('tiered storage; accepted and described, unused (kafkapy refuses remote.log.storage.system.enable=true)', (
    ('remote.log.storage.manager.impl.prefix', T.STRING, 'rsm.config.', non_empty, M, False),
    ('remote.log.metadata.manager.impl.prefix', T.STRING, 'rlmm.config.', non_empty, M, False),
    ('remote.log.storage.manager.class.name', T.STRING, None, non_empty, M, False),
    ('remote.log.storage.manager.class.path', T.STRING, None, None, M, False),
    ('remote.log.metadata.manager.class.name', T.STRING, 'org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager', non_empty, M, False),
    ('remote.log.metadata.manager.class.path', T.STRING, None, None, M, False),
    ('remote.log.metadata.manager.listener.name', T.STRING, None, non_empty, M, False),
    ('remote.log.metadata.custom.metadata.max.bytes', T.INT, 128, at_least(0), L, False),
    ('remote.log.index.file.cache.total.size.bytes', T.LONG, 1073741824, at_least(1), L, True),
    ('remote.log.manager.thread.pool.size', T.INT, 10, at_least(1), M, False),
    ('remote.log.manager.copier.thread.pool.size', T.INT, -1, one_of_or(-1, 1, INT_MAX), M, False),
    ('remote.log.manager.expiration.thread.pool.size', T.INT, -1, one_of_or(-1, 1, INT_MAX), M, False),
    ('remote.log.manager.task.interval.ms', T.LONG, 30000, at_least(1), L, False),
    ('remote.log.manager.task.retry.backoff.ms', T.LONG, 500, at_least(1), L, False, True),
    ('remote.log.manager.task.retry.backoff.max.ms', T.LONG, 30000, at_least(1), L, False, True),
    ('remote.log.manager.task.retry.jitter', T.DOUBLE, 0.2, between(0, 0.5), L, False, True),
    ('remote.log.reader.threads', T.INT, 10, at_least(1), M, False),
    ('remote.log.reader.max.pending.tasks', T.INT, 100, at_least(1), M, False),
    ('remote.log.manager.copy.max.bytes.per.second', T.LONG, LONG_MAX, at_least(1), M, True),
    ('remote.log.manager.copy.quota.window.num', T.INT, 11, at_least(1), M, False),
    ('remote.log.manager.copy.quota.window.size.seconds', T.INT, 1, at_least(1), M, False),
    ('remote.log.manager.fetch.max.bytes.per.second', T.LONG, LONG_MAX, at_least(1), M, True),
    ('remote.log.manager.fetch.quota.window.num', T.INT, 11, at_least(1), M, False),
    ('remote.log.manager.fetch.quota.window.size.seconds', T.INT, 1, at_least(1), M, False),
    ('remote.fetch.max.wait.ms', T.INT, 500, at_least(1), M, True),
))

_ZK_TLS = ("ZooKeeper client TLS; accepted and described, unused by kafkapy's ZooKeeper client", (
    ('zookeeper.ssl.protocol', T.STRING, 'TLSv1.2', None, L, False),
    ('zookeeper.ssl.enabled.protocols', T.LIST, None, None, L, False),
    ('zookeeper.ssl.cipher.suites', T.LIST, None, None, L, False),
    ('zookeeper.ssl.endpoint.identification.algorithm', T.STRING, 'HTTPS', None, L, False),
    ('zookeeper.ssl.crl.enable', T.BOOLEAN, False, None, L, False),
    ('zookeeper.ssl.ocsp.enable', T.BOOLEAN, False, None, L, False),
    ('zookeeper.metadata.migration.enable', T.BOOLEAN, False, None, H, False),
    ('zookeeper.metadata.migration.min.batch.size', T.INT, 200, at_least(1), M, False, True),
))

_KRAFT = ('KRaft mode; accepted and described, unused (kafkapy runs in ZooKeeper mode only; process.roles, controller.quorum.voters, controller.quorum.bootstrap.servers and controller.listener.names stop start-up)', (
    ('metadata.log.max.record.bytes.between.snapshots', T.LONG, 20971520, at_least(1), H, False),
    ('metadata.log.max.snapshot.interval.ms', T.LONG, 3600000, at_least(0), H, False),
    ('initial.broker.registration.timeout.ms', T.INT, 60000, None, M, False),
    ('broker.heartbeat.interval.ms', T.INT, 2000, None, M, False),
    ('broker.session.timeout.ms', T.INT, 9000, None, M, False),
    ('sasl.mechanism.controller.protocol', T.STRING, 'GSSAPI', None, H, False),
    ('metadata.log.segment.bytes', T.INT, 1073741824, at_least(12), H, False),
    ('metadata.log.segment.min.bytes', T.INT, 8388608, at_least(12), H, False, True),
    ('metadata.log.segment.ms', T.LONG, 604800000, None, H, False),
    ('metadata.max.retention.bytes', T.LONG, 104857600, None, H, False),
    ('metadata.max.retention.ms', T.LONG, 604800000, None, H, False),
    ('metadata.max.idle.interval.ms', T.INT, 500, at_least(0), L, False),
    ('server.max.startup.time.ms', T.LONG, LONG_MAX, at_least(0), M, False, True),
    ('eligible.leader.replicas.enable', T.BOOLEAN, False, None, H, False),
    ('controller.quorum.bootstrap.servers', T.LIST, [], None, H, False),
    ('controller.quorum.election.timeout.ms', T.INT, 1000, None, H, False),
    ('controller.quorum.fetch.timeout.ms', T.INT, 2000, None, H, False),
    ('controller.quorum.election.backoff.max.ms', T.INT, 1000, None, H, False),
    ('controller.quorum.append.linger.ms', T.INT, 25, None, M, False),
    ('controller.quorum.request.timeout.ms', T.INT, 2000, None, M, False),
    ('controller.quorum.retry.backoff.ms', T.INT, 20, None, L, False),
))

_SECURITY = ('TLS/SASL/token security (Java providers, Kerberos, OAUTHBEARER, the password encoder); accepted and described, unused: kafkapy serves SSL, SASL_PLAINTEXT and SASL_SSL listeners with PLAIN and SCRAM, and delegation tokens, through the keys it reads', (
    ('connection.failed.authentication.delay.ms', T.INT, 100, at_least(0), L, False),
    ('connections.max.reauth.ms', T.LONG, 0, None, M, False),
    ('sasl.server.max.receive.size', T.INT, 524288, None, M, False),
    ('security.providers', T.STRING, None, None, L, False),
    ('principal.builder.class', T.CLASS, 'org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder', None, M, True),
    ('ssl.principal.mapping.rules', T.STRING, 'DEFAULT', None, L, False),
    ('ssl.allow.dn.changes', T.BOOLEAN, False, None, L, False),
    ('ssl.allow.san.changes', T.BOOLEAN, False, None, L, False),
    ('ssl.protocol', T.STRING, 'TLSv1.3', None, M, True),
    ('ssl.provider', T.STRING, None, None, M, True),
    ('ssl.enabled.protocols', T.LIST, ['TLSv1.2', 'TLSv1.3'], None, M, True),
    ('ssl.keystore.key', T.PASSWORD, None, None, M, True),
    ('ssl.keystore.certificate.chain', T.PASSWORD, None, None, M, True),
    ('ssl.truststore.certificates', T.PASSWORD, None, None, M, True),
    ('ssl.keymanager.algorithm', T.STRING, 'SunX509', None, M, True),
    ('ssl.trustmanager.algorithm', T.STRING, 'PKIX', None, M, True),
    ('ssl.endpoint.identification.algorithm', T.STRING, 'https', None, L, True),
    ('ssl.secure.random.implementation', T.STRING, None, None, L, True),
    ('ssl.cipher.suites', T.LIST, [], None, M, True),
    ('ssl.engine.factory.class', T.CLASS, None, None, L, True),
    ('sasl.server.callback.handler.class', T.CLASS, None, None, M, False),
    ('sasl.kerberos.principal.to.local.rules', T.LIST, ['DEFAULT'], None, M, True),
    ('sasl.jaas.config', T.PASSWORD, None, None, M, True),
    ('sasl.client.callback.handler.class', T.CLASS, None, None, M, False),
    ('sasl.login.class', T.CLASS, None, None, M, False),
    ('sasl.login.callback.handler.class', T.CLASS, None, None, M, False),
    ('sasl.kerberos.service.name', T.STRING, None, None, M, True),
    ('sasl.kerberos.kinit.cmd', T.STRING, '/usr/bin/kinit', None, M, True),
    ('sasl.kerberos.ticket.renew.window.factor', T.DOUBLE, 0.8, None, M, True),
    ('sasl.kerberos.ticket.renew.jitter', T.DOUBLE, 0.05, None, M, True),
    ('sasl.kerberos.min.time.before.relogin', T.LONG, 60000, None, M, True),
    ('sasl.login.refresh.window.factor', T.DOUBLE, 0.8, None, M, True),
    ('sasl.login.refresh.window.jitter', T.DOUBLE, 0.05, None, M, True),
    ('sasl.login.refresh.min.period.seconds', T.SHORT, 60, None, M, True),
    ('sasl.login.refresh.buffer.seconds', T.SHORT, 300, None, M, True),
    ('sasl.login.connect.timeout.ms', T.INT, None, None, L, False),
    ('sasl.login.read.timeout.ms', T.INT, None, None, L, False),
    ('sasl.login.retry.backoff.max.ms', T.LONG, 10000, None, L, False),
    ('sasl.login.retry.backoff.ms', T.LONG, 100, None, L, False),
    ('sasl.oauthbearer.scope.claim.name', T.STRING, 'scope', None, L, False),
    ('sasl.oauthbearer.sub.claim.name', T.STRING, 'sub', None, L, False),
    ('sasl.oauthbearer.token.endpoint.url', T.STRING, None, None, M, False),
    ('sasl.oauthbearer.jwks.endpoint.url', T.STRING, None, None, M, False),
    ('sasl.oauthbearer.jwks.endpoint.refresh.ms', T.LONG, 3600000, None, L, False),
    ('sasl.oauthbearer.jwks.endpoint.retry.backoff.ms', T.LONG, 100, None, L, False),
    ('sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms', T.LONG, 10000, None, L, False),
    ('sasl.oauthbearer.clock.skew.seconds', T.INT, 30, None, L, False),
    ('sasl.oauthbearer.expected.audience', T.LIST, None, None, L, False),
    ('sasl.oauthbearer.expected.issuer', T.STRING, None, None, L, False),
    ('delegation.token.master.key', T.PASSWORD, None, None, M, False),
    ('delegation.token.secret.key', T.PASSWORD, None, None, M, False),
    ('delegation.token.max.lifetime.ms', T.LONG, 604800000, at_least(1), M, False),
    ('delegation.token.expiry.time.ms', T.LONG, 86400000, at_least(1), M, False),
    ('delegation.token.expiry.check.interval.ms', T.LONG, 3600000, at_least(1), L, False),
    ('password.encoder.secret', T.PASSWORD, None, None, M, False),
    ('password.encoder.old.secret', T.PASSWORD, None, None, M, False),
    ('password.encoder.keyfactory.algorithm', T.STRING, None, None, L, False),
    ('password.encoder.cipher.algorithm', T.STRING, 'AES/CBC/PKCS5Padding', None, L, False),
    ('password.encoder.key.length', T.INT, 128, at_least(8), L, False),
    ('password.encoder.iterations', T.INT, 4096, at_least(1024), L, False),
))

_NEW_GROUPS = ('Kafka 3.9\'s early-access share group switches (kafkapy turns share groups on and off by group.coordinator.rebalance.protocols) and the new group coordinator\'s tuning; accepted and described, unused', (
    ('group.coordinator.threads', T.INT, 1, at_least(1), M, False),
    ('group.coordinator.append.linger.ms', T.INT, 10, at_least(0), M, False),
    ('group.coordinator.new.enable', T.BOOLEAN, False, None, M, False, True),
    ('group.share.enable', T.BOOLEAN, False, None, M, False, True),
    ('group.share.max.groups', T.SHORT, 10, between(1, 100), M, False),
))

_METRICS = ('JMX/Yammer metrics; accepted and described, unused (kafkapy exports its own metrics, see kafkapy.metrics.port)', (
    ('metrics.num.samples', T.INT, 2, at_least(1), L, False),
    ('metrics.sample.window.ms', T.LONG, 30000, at_least(1), L, False),
    ('metrics.recording.level', T.STRING, 'INFO', None, L, False),
    ('auto.include.jmx.reporter', T.BOOLEAN, True, None, L, False),
    ('kafka.metrics.reporters', T.LIST, [], None, L, False),
    ('kafka.metrics.polling.interval.secs', T.INT, 10, at_least(1), L, False),
    ('telemetry.max.bytes', T.INT, 1048576, at_least(1), L, False),
))

_QUOTAS = ('quotas; accepted and described, unused (kafkapy takes no client quota callback)', (
    ('quota.window.num', T.INT, 11, at_least(1), L, False),
    ('replication.quota.window.num', T.INT, 11, at_least(1), L, False),
    ('alter.log.dirs.replication.quota.window.num', T.INT, 11, at_least(1), L, False),
    ('controller.quota.window.num', T.INT, 11, at_least(1), L, False),
    ('quota.window.size.seconds', T.INT, 1, at_least(1), L, False),
    ('replication.quota.window.size.seconds', T.INT, 1, at_least(1), L, False),
    ('alter.log.dirs.replication.quota.window.size.seconds', T.INT, 1, at_least(1), L, False),
    ('controller.quota.window.size.seconds', T.INT, 1, at_least(1), L, False),
    ('client.quota.callback.class', T.CLASS, None, None, L, False),
))

_INTERNAL = ('an internal Kafka setting; accepted, not described (Kafka hides internal keys), unused', (
    ('unstable.api.versions.enable', T.BOOLEAN, False, None, H, False, True),
    ('unstable.feature.versions.enable', T.BOOLEAN, False, None, H, False, True),
    ('unclean.leader.election.interval.ms', T.LONG, 300000, at_least(1), M, False, True),
    ('log.initial.task.delay.ms', T.LONG, 30000, at_least(0), L, False, True),
    ('producer.id.expiration.check.interval.ms', T.INT, 600000, at_least(1), L, False, True),
))

GROUPS = (_TIERED, _ZK_TLS, _KRAFT, _SECURITY, _NEW_GROUPS, _METRICS, _QUOTAS, _INTERNAL)

_PER_LISTENER = "listener.name.<listener>. prefix first"
#: Keys of the groups above that kafkapy does read, with what reads them (their
#: documentation says this instead of the group's note).
READ_BY_KAFKAPY = {
    'connection.failed.authentication.delay.ms': 'read by kafkapy: a failed authentication is answered this much later',
    'connections.max.reauth.ms': f'read by kafkapy on SASL listeners: the longest session before re-authentication ({_PER_LISTENER})',
    'sasl.server.max.receive.size': f'read by kafkapy on SASL listeners: the largest authentication request ({_PER_LISTENER})',
    'principal.builder.class': "read by kafkapy at start-up: only Kafka's DefaultKafkaPrincipalBuilder is accepted",
    'ssl.principal.mapping.rules': f'read by kafkapy on TLS listeners: only DEFAULT is accepted ({_PER_LISTENER})',
    'ssl.protocol': f'read by kafkapy on TLS listeners when ssl.enabled.protocols is empty ({_PER_LISTENER})',
    'ssl.enabled.protocols': f'read by kafkapy on TLS listeners ({_PER_LISTENER})',
    'ssl.cipher.suites': f'read by kafkapy on TLS listeners: TLS 1.2 suites ({_PER_LISTENER})',
    'ssl.endpoint.identification.algorithm': 'read by kafkapy: an empty value turns off host name checks of the brokers it connects to',
    'ssl.keystore.key': f'read by kafkapy on TLS listeners: the PEM private key ({_PER_LISTENER})',
    'ssl.keystore.certificate.chain': f'read by kafkapy on TLS listeners: the PEM certificate chain ({_PER_LISTENER})',
    'ssl.truststore.certificates': f'read by kafkapy on TLS listeners: the PEM trusted certificates ({_PER_LISTENER})',
    'sasl.jaas.config': 'read by kafkapy as listener.name.<listener>.<mechanism>.sasl.jaas.config (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)',
    'delegation.token.secret.key': 'read by kafkapy: the HMAC key of delegation tokens; unset (and no master key): tokens are disabled',
    'delegation.token.master.key': 'read by kafkapy: the old name of delegation.token.secret.key, used when that is unset',
    'delegation.token.max.lifetime.ms': 'read by kafkapy: the longest a delegation token lives, renewals included',
    'delegation.token.expiry.time.ms': "read by kafkapy: a delegation token's life between renewals",
    'delegation.token.expiry.check.interval.ms': 'read by kafkapy: how often expired delegation tokens are removed',
    'quota.window.num': 'read by kafkapy: the samples of the client byte-rate quotas and the connection creation rate limits (max.connection.creation.rate, connection_creation_rate)',
    'quota.window.size.seconds': 'read by kafkapy: the sample length of the client byte-rate quotas and the connection creation rate limits',
    'replication.quota.window.num': 'read by kafkapy: the samples of the replication throttles (leader/follower.replication.throttled.rate)',
    'replication.quota.window.size.seconds': 'read by kafkapy: the sample length of the replication throttles',
    'alter.log.dirs.replication.quota.window.num': 'read by kafkapy: the samples of the log dir move throttle (replica.alter.log.dirs.io.max.bytes.per.second)',
    'alter.log.dirs.replication.quota.window.size.seconds': 'read by kafkapy: the sample length of the log dir move throttle',
    'controller.quota.window.num': 'read by kafkapy: the windows of the controller mutation quota (controller_mutation_rate), whose token bucket holds this many windows of its rate',
    'controller.quota.window.size.seconds': 'read by kafkapy: the window length of the controller mutation quota (controller_mutation_rate)',
    'controller.quorum.bootstrap.servers': 'KRaft mode; unused, and when set it stops start-up (kafkapy runs in ZooKeeper mode only)',
    'producer.id.expiration.check.interval.ms': 'an internal Kafka setting, not described (Kafka hides internal keys); read by kafkapy: how often expired producer ids are removed',
}


def _doc(name: str, note: str) -> str:
    """Our own short documentation: the key's words, then what kafkapy does with it."""
    return f"{name.replace('.', ' ')}: {READ_BY_KAFKAPY.get(name, note)}."


def define_accepted() -> None:
    for note, rows in GROUPS:
        for name, ctype, default, validator, importance, dynamic, *internal in rows:
            D.define(name, ctype, default, validator, importance, _doc(name, note),
                     dynamic=dynamic, internal=bool(internal and internal[0]))


define_accepted()
