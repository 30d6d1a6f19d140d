"""Admin requests as Kafka's ZooKeeper-mode ZkAdminManager / AdminZkClient: validate, write znodes.

``AdminManager`` never changes the metadata cache or the logs: it
checks a request (Kafka's checks, order and messages) and writes the znodes the active controller acts on through its
watches -- ``/config/topics/T`` then ``/brokers/topics/T`` (with a new topic
id) for a new topic; the grown assignment of ``/brokers/topics/T`` (topic id
kept) for new partitions; ``/admin/delete_topics/T`` for a deletion;
``/config/topics/T`` plus a ``/config/changes/config_change_`` sequential node
for a config change (every broker reloads it, ``TopicConfigs``); likewise
``/config/brokers/<id>`` or ``<default>`` for a dynamic broker config change
(``alter_broker_configs``; every broker's ``DynamicBrokerConfig`` reloads it).

``wait_for_topics`` / ``wait_for_deletion`` are Kafka's DelayedCreatePartitions /
DelayedDeleteTopics: they resolve when this broker's MetadataCache shows every
partition of each topic with a leader (>= 0) / each topic gone, re-checked after
every applied UpdateMetadata (``cache.add_update_listener``), and return the
topics still not there at the deadline (answered REQUEST_TIMED_OUT by the handlers).

Invariants: ``/config/topics/T`` is written before ``/brokers/topics/T``, so a
broker that learns of a topic finds its config; ``validate_only`` writes nothing.
All calls run on the event loop (the store API is synchronous).

Collaborators are handed in at construction: the store, this broker's metadata cache,
its config (topic config checks), topic configs and dynamic broker config (a change
written here is applied on this broker at once), and its controller (whose context,
when active, says which topics are queued for deletion).
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Iterable, Mapping

import structlog
from kazoo.exceptions import NodeExistsError, NoNodeError

from kafkapy.admin.assignment import RackInfoMissing, assign_replicas, check_rack_enforced
from kafkapy.config.broker import BrokerConfig, ConfigError
from kafkapy.config.dynamic import DynamicBrokerConfig
from kafkapy.config.topic_configs import TopicConfigs
from kafkapy.controller.controller import KafkaController
from kafkapy.limits import free_descriptors, open_file_limit
from kafkapy.metadata import paths
from kafkapy.metadata.cache import MetadataCache, PartitionState, TopicMetadata
from kafkapy.metadata.store import MetadataStore
from kafkapy.metadata.topics import (
    collision_key, invalid_topic_reason, new_topic_id, topic_id_text)
from kafkapy.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from kafkapy.quota.controller_mutation import MutationQuota

_log = structlog.get_logger("kafkapy.admin")


class AdminManager:
    def __init__(self, store: MetadataStore, cache: MetadataCache, config: BrokerConfig,
                 topic_configs: TopicConfigs, *,
                 dynamic_config: DynamicBrokerConfig | None = None,
                 controller: KafkaController | None = None) -> None:
        self._store = store
        self._cache = cache
        self._config = config
        self._topic_configs = topic_configs
        self._dynamic_config = dynamic_config
        self._controller = controller
        self._waiters: list[_Waiter] = []
        self._hooked = False

    # -- topic creation ------------------------------------------------------------
    def check_request(self, name: str, configs: Mapping[str, str | None] | None) -> None:
        """The first checks of ZkAdminManager.createTopics: a topic this broker's cache
        knows, then null config values."""
        if name in self._cache.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        nulls = [k for k, v in (configs or {}).items() if v is None]
        if nulls:
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Null value not supported for topic configs: {','.join(nulls)}")

    def check_new_topic(self, name: str) -> None:
        """AdminZkClient.validateTopicCreate's name checks: legal, not in the store (the
        cache lags it), not colliding with another topic over '.' and '_'."""
        reason = invalid_topic_reason(name)
        if reason:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        if name in self._cache.topics or self._store.exists(paths.topic_path(name)):
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if "." not in name and "_" not in name:
            return      # Topic.hasCollisionChars: only then does Kafka list every topic
        key = collision_key(name)
        colliding = [t for t in self._all_topics() if collision_key(t) == key]
        if colliding:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                             f"Topic '{name}' collides with existing topics: "
                             f"{', '.join(colliding)}")

    def _all_topics(self) -> list[str]:
        """The topics of the cache and of the store (Kafka looks at ZooKeeper's)."""
        try:
            stored = self._store.get_children(paths.BROKER_TOPICS)
        except NoNodeError:
            stored = []
        return list(dict.fromkeys([*self._cache.topics, *sorted(stored)]))

    def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                     assignments: dict[int, list[int]] | None = None,
                     configs: dict[str, str] | None = None,
                     validate_only: bool = False,
                     quota: MutationQuota | None = None) -> TopicMetadata:
        """Check in ZkAdminManager.createTopics' order (known topic, null configs, the
        assignment, then AdminZkClient.validateTopicCreate: name, existence, collisions,
        the manual assignment's shape, the configs), then (unless validate_only) count
        its partitions in the controller mutation ``quota`` (which may refuse them:
        THROTTLING_QUOTA_EXCEEDED) and write the topic's config and assignment.  Returns
        the topic as requested: its partitions' replicas (no leader yet, -1)."""
        configs = dict(configs or {})
        self.check_request(name, configs)
        if assignments:
            assignment = {i: list(r) for i, r in assignments.items()}
        else:
            brokers = self._cache.live_broker_ids()
            try:
                assignment = assign_replicas(brokers, num_partitions, replication_factor,
                                             racks=self._racks())
            except RackInfoMissing as err:
                _log.error("cannot assign replicas", topic=name, reason=err.reason)
                raise
        self.check_new_topic(name)
        assignment = _check_assignments(assignment)
        self.validate_topic_configs(configs)
        _check_descriptors(len(assignment))
        topic = TopicMetadata(name=name, topic_id=new_topic_id(), configs=configs)
        for index, replicas in assignment.items():
            topic.partitions[index] = PartitionState(index, list(replicas), -1, 0,
                                                     list(replicas), 0)
        if validate_only:
            return topic
        if quota is not None:
            quota.record(len(assignment))
        self._put(paths.topic_config_path(name), paths.encode_entity_config(configs))
        self._topic_configs.invalidate(name)
        try:
            self._store.create(paths.topic_path(name), paths.encode_topic_assignment(
                assignment, topic_id_text(topic.topic_id)), makepath=True)
        except NodeExistsError:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS,
                             f"Topic '{name}' already exists.") from None
        _log.info("created topic", topic=name, partitions=len(assignment),
                  assignment=assignment)
        return topic

    def auto_create_topic(self, name: str, quota: MutationQuota | None = None) -> TopicMetadata:
        """A topic a client asked for by name (``auto.create.topics.enable``), with the
        broker's ``num.partitions`` and ``default.replication.factor``, counted in the
        client's controller mutation ``quota``."""
        return self.create_topic(name, self._config["num.partitions"],
                                 self._config["default.replication.factor"], quota=quota)

    def validate_topic_configs(self, configs: Mapping[str, str | None]) -> None:
        """INVALID_CONFIG unless every value is one the topic config accepts."""
        try:
            self._config.validate_topic_configs(configs)
        except ConfigError as err:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(err)) from None

    def _racks(self) -> dict[int, str | None]:
        """Each live broker's rack (the brokers ``live_broker_ids`` lists)."""
        return {b: endpoint.rack for b, endpoint in self._cache.brokers.items()}

    # -- partitions ------------------------------------------------------------------
    def create_partitions(self, name: str, count: int,
                          assignments: list[list[int]] | None = None,
                          validate_only: bool = False,
                          quota: MutationQuota | None = None) -> dict[int, list[int]]:
        """Grow ``name`` to ``count`` partitions (Kafka's ZkAdminManager.createPartitions
        and AdminZkClient.createNewPartitionsAssignment); returns the whole new assignment.
        Unless validate_only, the partitions added are counted in ``quota`` first (which
        may refuse them)."""
        stored = self._stored_assignment(name)
        if stored is None or not stored.partitions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"The topic '{name}' does not exist.")
        if stored.adding_replicas or stored.removing_replicas:
            raise KafkaError(ErrorCode.REASSIGNMENT_IN_PROGRESS,
                             f"A partition reassignment is in progress for the topic '{name}'.")
        existing = dict(stored.partitions)
        current = len(existing)
        if count < current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic currently has {current} partitions, which is higher than "
                             f"the requested {count}.")
        if count == current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic already has {current} partitions.")
        brokers = self._cache.live_broker_ids()
        racks = self._racks()
        try:
            check_rack_enforced(brokers, racks)
        except RackInfoMissing as err:
            _log.error("cannot assign replicas", topic=name, reason=err.reason)
            raise
        first = existing.get(0) or next(iter(existing.values()))
        rf = len(first)
        if assignments is not None:
            new = _check_added_assignments(assignments, brokers, current, count, rf)
        else:
            # Kafka continues from the broker leading partition 0 (fixed start and shift).
            start = next((i for i, b in enumerate(brokers) if first and b >= first[0]), 0)
            new = assign_replicas(brokers, count - current, rf, first_partition=current,
                                  start_index=start, racks=racks)
        _check_descriptors(len(new))
        combined = {**existing, **new}
        if validate_only:
            return combined
        if quota is not None:
            quota.record(len(new))
        self._store.set(paths.topic_path(name), paths.encode_topic_assignment(
            combined, stored.topic_id))
        _log.info("added partitions", topic=name, count=count, assignment=new)
        return combined

    def _stored_assignment(self, name: str) -> paths.TopicAssignment | None:
        try:
            data, _ = self._store.get(paths.topic_path(name))
        except NoNodeError:
            return None
        except ValueError:
            # a name no znode path can hold (a NUL, "..", ...): ZooKeeper's client refuses the
            # path and Kafka answers the IllegalArgumentException as UNKNOWN_SERVER_ERROR
            raise KafkaError(ErrorCode.UNKNOWN) from None
        return paths.decode_topic_assignment(data, name)

    # -- configs and deletion --------------------------------------------------------------
    def stored_topic_configs(self, name: str) -> dict[str, str]:
        """``/config/topics/T`` as stored (Kafka's fetchEntityConfig); {} when absent."""
        return self._stored_config(paths.topic_config_path(name))

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace the topic's overrides and notify every broker (AdminZkClient.changeTopicConfig)."""
        if not self._store.exists(paths.topic_path(name)):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"Topic '{name}' does not exist.")
        self.validate_topic_configs(configs)
        self._write_config(paths.CONFIG_TYPE_TOPIC, name, configs)
        # This broker applies its own change at once (the notification re-applies it):
        # a DescribeConfigs right after the answer sees the new values.
        self._topic_configs.reload(name)
        _log.info("changed topic configs", topic=name, configs=configs)

    def stored_broker_configs(self, entity: str) -> dict[str, str]:
        """``/config/brokers/<entity>`` as stored; {} when absent."""
        return self._stored_config(paths.broker_config_path(entity))

    def alter_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        """Replace a dynamic broker config layer (``entity``: a broker id or ``<default>``)
        and notify every broker (AdminZkClient.changeBrokerConfig)."""
        self._write_config(paths.CONFIG_TYPE_BROKER, entity, configs)
        # This broker applies its own change at once (the notification re-applies it).
        if self._dynamic_config is not None:
            self._dynamic_config.reload(entity)
        _log.info("changed broker configs", entity=entity, configs=sorted(configs))

    def delete_topic(self, name: str, quota: MutationQuota | None = None) -> None:
        """Mark for deletion (AdminZkClient.deleteTopic); a topic already marked is fine.
        First (as ZkAdminManager.deleteTopics) the partitions this broker's cache knows of
        it are counted in ``quota``, which may refuse them."""
        if quota is not None:
            known = self._cache.topic(name)
            quota.record(len(known.partitions) if known is not None else 0)
        if not self._store.exists(paths.topic_path(name)):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"Topic `{name}` to delete does not exist")
        try:
            self._store.create(paths.delete_topic_path(name), b"", makepath=True)
        except NodeExistsError:
            pass
        _log.info("marked topic for deletion", topic=name)

    def is_queued_for_deletion(self, name: str) -> bool:
        """Kafka's controller.isTopicQueuedForDeletion: the active controller's context
        when it has one, else the marker znode."""
        controller = self._controller
        if controller is not None and controller.is_active:
            return controller.is_topic_queued_for_deletion(name)
        return self._store.exists(paths.delete_topic_path(name)) is not None

    def _stored_config(self, path: str) -> dict[str, str]:
        try:
            data, _ = self._store.get(path)
        except NoNodeError:
            return {}
        return paths.decode_entity_config(data)

    def _write_config(self, entity_type: str, name: str, configs: dict[str, str]) -> None:
        """``/config/<type>/<name>`` replaced, then the ``/config/changes`` notification
        naming it (AdminZkClient.changeEntityConfig)."""
        self._put(paths.config_entity_path(entity_type, name), paths.encode_entity_config(configs))
        self._store.create(paths.CONFIG_CHANGE_SEQ_PATH, paths.encode_config_change(
            f"{entity_type}/{name}"), sequence=True, makepath=True)

    def _put(self, path: str, payload: bytes) -> None:
        """Set or create ``path``, as Kafka's setOrCreateEntityConfigs: a creation that
        loses a race with another broker's (two brokers auto-creating an internal topic for
        their first FindCoordinator) sets the znode after all."""
        if self._store.exists(path):
            self._store.set(path, payload)
            return
        try:
            self._store.create(path, payload, makepath=True)
        except NodeExistsError:
            self._store.set(path, payload)

    # -- waiting for the cache (DelayedCreatePartitions / DelayedDeleteTopics) ----------------
    async def wait_for_topics(self, topics: Mapping[str, int] | Iterable[str],
                              timeout_ms: int) -> list[str]:
        """Wait until every partition of each topic has a leader in this broker's cache;
        ``topics`` maps a name to its expected partition count (or names: the partitions
        the cache knows).  Returns the topics still leaderless at the deadline."""
        expected = dict(topics) if isinstance(topics, Mapping) else dict.fromkeys(topics)
        return await self.wait_until(lambda name: self._led(name, expected[name]),
                                     list(expected), timeout_ms)

    async def wait_for_deletion(self, names: Iterable[str], timeout_ms: int) -> list[str]:
        """Wait until each topic is gone from this broker's cache; returns those still there."""
        return await self.wait_until(lambda name: self._cache.topic(name) is None, list(names),
                                     timeout_ms)

    def _led(self, name: str, count: int | None) -> bool:
        topic = self._cache.topic(name)
        if topic is None:
            return False
        indexes = range(count) if count is not None else topic.partitions
        return all(i in topic.partitions and topic.partitions[i].leader >= 0 for i in indexes)

    async def wait_until(self, done, names: list, timeout_ms: int) -> list:
        """Wait until ``done(key)`` holds for every key, re-checked after each metadata
        update; returns the keys for which it does not at the deadline (at once when
        timeout_ms <= 0)."""
        pending = [n for n in dict.fromkeys(names) if not done(n)]
        if not pending or timeout_ms <= 0:
            return pending
        waiter = _Waiter(done, pending, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        self._watch_cache()
        try:
            await asyncio.wait_for(asyncio.shield(waiter.future), timeout_ms / 1000.0)
        except asyncio.TimeoutError:
            pass
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        return [n for n in pending if not done(n)]

    def _watch_cache(self) -> None:
        if not self._hooked:
            self._cache.add_update_listener(self._recheck)
            self._hooked = True

    def _recheck(self) -> None:
        for waiter in list(self._waiters):
            if all(waiter.done(n) for n in waiter.names):
                self._waiters.remove(waiter)
                if not waiter.future.done():
                    waiter.future.set_result(None)

    def close(self) -> None:
        for waiter in self._waiters:
            if not waiter.future.done():
                waiter.future.cancel()
        self._waiters.clear()


class _Waiter:
    __slots__ = ("done", "names", "future")

    def __init__(self, done, names: list[str], future: asyncio.Future) -> None:
        self.done = done
        self.names = names
        self.future = future


def _check_assignments(assignments: dict[int, list[int]]) -> dict[int, list[int]]:
    """A new topic's manual assignment, checked in the order and with the messages of
    Kafka's AdminZkClient.validateTopicCreate -- which, like it, lets replicas name
    unknown brokers (or none): such partitions get no leader."""
    if len({len(r) for r in assignments.values()}) != 1:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "All partitions should have the same number of replicas")
    if any(len(set(r)) != len(r) for r in assignments.values()):
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Duplicate replica assignment found: {_scala_map(assignments)}")
    if sorted(assignments) != list(range(len(assignments))):
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "partitions should be a consecutive 0-based integer sequence")
    return {i: list(r) for i, r in sorted(assignments.items())}


def _check_added_assignments(assignments: list[list[int]], brokers: list[int],
                             current: int, count: int, rf: int) -> dict[int, list[int]]:
    """CreatePartitions' manual assignment, checked in the order and with the messages
    of Kafka's ZkAdminManager.createPartitions and AdminZkClient's validation."""
    unknown = sorted({r for replicas in assignments for r in replicas} - set(brokers))
    if unknown:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Unknown broker(s) in replica assignment: "
                         f"{', '.join(map(str, unknown))}.")
    if len(assignments) != count - current:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Increasing the number of partitions by {count - current} "
                         f"but {len(assignments)} assignments provided.")
    new = {current + i: list(r) for i, r in enumerate(assignments)}
    for index, replicas in new.items():
        if not replicas:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Cannot have replication factor of 0 for partition id {index}.")
        if len(set(replicas)) != len(replicas):
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Duplicate brokers not allowed in replica assignment: "
                             f"{', '.join(map(str, replicas))} for partition id {index}.")
    bad = [(i, len(r)) for i, r in new.items() if len(r) != rf]
    if bad:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Inconsistent replication factor between partitions, partition 0 "
                         f"has {rf} while partitions [{', '.join(str(i) for i, _ in bad)}] "
                         f"have replication factors [{', '.join(str(n) for _, n in bad)}], "
                         f"respectively.")
    return new


def _check_descriptors(new_partitions: int) -> None:
    """Each partition holds a descriptor for its active segment: refuse partitions the
    process could not open, rather than fail their logs half-way and leave the broker
    unable to accept a connection.  (Kafka has no such check; it relies on a large
    ulimit.  kafkapy raises its soft limit to the hard one at start.)"""
    free = free_descriptors()
    if new_partitions > free:
        raise KafkaError(ErrorCode.POLICY_VIOLATION,
                         f"Creating {new_partitions} partitions needs as many file "
                         f"descriptors, but only {max(free, 0)} are free under the open-file "
                         f"limit of {open_file_limit()} (ulimit -n)")


def _scala_map(assignments: dict[int, list[int]]) -> str:
    """An assignment as Scala prints a ``HashMap[Int, ArrayBuffer[Int]]`` (Kafka's messages)."""
    return "HashMap(" + ", ".join(f"{i} -> ArrayBuffer({', '.join(map(str, r))})"
                                  for i, r in sorted(assignments.items())) + ")"
