"""The fetching side of an incremental fetch session (KIP-227): Kafka's FetchSessionHandler.

One handler per connection to a leader (a replica fetcher).  ``build(next)`` takes
the partitions to fetch this round, in order, and says what the request carries:

- full (session epoch 0 or -1): every partition; the session's partitions become
  exactly these;
- incremental (the session's id and epoch 1, 2, ...): only partitions added or
  whose request changed (fetch offset, log start, max bytes, leader epochs, topic
  id), the changed ones after the new ones (Kafka's order); a session partition not
  in ``next`` is forgotten (``to_forget``); one whose topic id changed is forgotten
  under the old id and sent again (``to_replace``, v13+ only).

``handle_response`` moves the session on from the leader's answer, as Kafka's:
a top-level error starts over (FETCH_SESSION_ID_NOT_FOUND: a new session; any other:
close the current one and ask for a new one, epoch 0 with the old id); a full answer
must carry every session partition and nothing else, and its session id (0: no
session, every fetch stays full) gives the next epoch 1; an incremental answer may
carry only session partitions, session id 0 means the leader closed the session.
A response that fails these checks is not processed (False).  ``handle_error`` (the
request failed) closes the session on the next request and asks for a new one.

Invariants: ``session_partitions`` is what the leader's cached session holds once the
last request built was served; ``session_topic_names`` maps the ids of topics in the
session to names (empty when the session does not use topic ids).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, NamedTuple

import structlog

from kafkapy.protocol.errors import ErrorCode, error_name
from kafkapy.protocol.topic_partition import TopicPartition
from kafkapy.replication.fetch_session import (FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID,
                                               is_full, next_epoch)

_log = structlog.get_logger("kafkapy.replication.fetch_session_handler")


class PartitionData(NamedTuple):
    """What one partition's fetch asks (Kafka's FetchRequest.PartitionData; equality is
    what makes a partition 'altered')."""

    topic_id: uuid.UUID | None
    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int


@dataclass
class FetchRequestData:
    """One request's worth: what to send, forget and replace, the whole session, its
    (id, epoch) and whether every partition has a topic id (else Fetch v12)."""

    to_send: dict[TopicPartition, PartitionData]
    to_forget: list[tuple[uuid.UUID | None, TopicPartition]]
    to_replace: list[tuple[uuid.UUID | None, TopicPartition]]
    session_partitions: Mapping[TopicPartition, PartitionData]
    session_id: int
    epoch: int
    can_use_topic_ids: bool

    @property
    def is_full(self) -> bool:
        return is_full(self.epoch)


@dataclass
class FetchSessionHandler:
    node: int
    session_id: int = INVALID_SESSION_ID
    epoch: int = INITIAL_EPOCH
    session_partitions: dict[TopicPartition, PartitionData] = field(default_factory=dict)
    session_topic_names: dict[uuid.UUID, str] = field(default_factory=dict)
    # The session's topic names by id and whether each of its partitions has an id, as
    # the last build that saw a partition come, go or change id worked them out.
    _names: dict[uuid.UUID, str] = field(default_factory=dict, init=False, repr=False)
    _all_ids: bool = field(default=True, init=False, repr=False)

    # -- requests -------------------------------------------------------------------------
    def build(self, next_data: dict[TopicPartition, PartitionData]) -> FetchRequestData:
        """Kafka's FetchSessionHandler.Builder.build over ``next_data`` (insertion order).

        A partition unchanged since the last request costs one dict lookup and one tuple
        comparison (its topic id is the same object, so no UUID method runs); the topic
        names are worked out again only when a partition comes, goes or changes topic
        id; the session's partitions are handed out as a read-only view, as Kafka's."""
        if is_full(self.epoch):
            self.session_partitions = dict(next_data)
            self._names, self._all_ids = _topic_names(next_data)
            self.session_topic_names = self._names if self._all_ids else {}
            return FetchRequestData(dict(next_data), [], [],
                                    MappingProxyType(self.session_partitions),
                                    self.session_id, self.epoch, self._all_ids)
        session = self.session_partitions
        removed, replaced, changed = [], [], []
        ids_moved = False
        for key, prev in list(session.items()):
            data = next_data.get(key)
            if data is None:
                del session[key]
                removed.append((prev.topic_id, key))
                ids_moved = True
            elif prev != data:
                if prev.topic_id is not data.topic_id:
                    ids_moved = True
                    if (prev.topic_id is not None and data.topic_id is not None
                            and prev.topic_id != data.topic_id):
                        replaced.append((prev.topic_id, key))
                # Sent after the new ones; it keeps its place in the session.
                changed.append(key)
                session[key] = data
        to_send = {}
        if len(session) < len(next_data):
            for key, data in next_data.items():
                if key not in session:
                    to_send[key] = data
            session.update(to_send)
            ids_moved = True
        for key in changed:
            to_send[key] = session[key]
        if ids_moved:
            self._names, self._all_ids = _topic_names(session)
        can_use_ids = self._all_ids and all(topic_id is not None for topic_id, _ in removed)
        self.session_topic_names = self._names if can_use_ids else {}
        return FetchRequestData(to_send, removed, replaced, MappingProxyType(session),
                                self.session_id, self.epoch, can_use_ids)

    # -- answers --------------------------------------------------------------------------
    def response_keys(self, response, version: int) -> dict[TopicPartition, object]:
        """The answer's partitions by (name, index); v13+ ids are named by the session
        (an id the session does not know is left out, as Kafka's responseData)."""
        out: dict[TopicPartition, object] = {}
        for topic in response.responses:
            if version >= 13:
                name = self.session_topic_names.get(topic.topic_id)
                if name is None:
                    continue
            else:
                name = topic.topic
            for data in topic.partitions:
                out[(name, data.partition_index)] = data
        return out

    def handle_response(self, response, version: int, answers: dict | None = None) -> bool:
        """Move the session on; False when the answer must not be processed.  ``answers``:
        the response's ``response_keys``, when the caller has them already."""
        if response.error_code:
            _log.info("leader could not process the fetch session", node=self.node,
                      session_id=self.session_id, epoch=self.epoch,
                      error=error_name(response.error_code))
            if response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self._initial()
            else:
                self.epoch = INITIAL_EPOCH   # close the current one, ask for a new one
            return False
        keys = set(self.response_keys(response, version) if answers is None else answers)
        unknown_ids = version >= 13 and any(t.topic_id not in self.session_topic_names
                                            for t in response.responses)
        session = self.session_partitions
        extra = [key for key in keys if key not in session]   # by the answer, not the session
        if is_full(self.epoch):
            omitted = set(session) - keys
            if extra or omitted or unknown_ids:
                _log.info("invalid full fetch response", node=self.node,
                          extra=sorted(extra), omitted=sorted(omitted))
                self._initial()
                return False
            if response.session_id == INVALID_SESSION_ID:
                self._initial()
            else:
                self.session_id, self.epoch = response.session_id, next_epoch(INITIAL_EPOCH)
            return True
        if extra or unknown_ids:
            _log.info("invalid incremental fetch response", node=self.node, extra=sorted(extra))
            self.epoch = INITIAL_EPOCH
            return False
        if response.session_id == INVALID_SESSION_ID:
            self._initial()   # the leader closed the session
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The request failed: close the session with the next one, asking for a new one."""
        self.epoch = INITIAL_EPOCH

    def notify_close(self) -> None:
        self.epoch = FINAL_EPOCH

    def _initial(self) -> None:
        self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH


def _topic_names(partitions: Mapping[TopicPartition, PartitionData]) -> tuple[dict, bool]:
    """({topic id: name} of ``partitions``, whether every one has an id).  A topic's
    partitions carry the same id object, so a partition whose name was seen with that
    very object adds nothing: a UUID hashes and compares in Python, a name and an
    identity test do not."""
    names: dict[uuid.UUID, str] = {}
    seen: dict[str, uuid.UUID] = {}
    can_use_ids = True
    for key, data in partitions.items():
        topic_id = data.topic_id
        if topic_id is None:
            can_use_ids = False
        elif seen.get(key[0]) is not topic_id:
            seen[key[0]] = topic_id
            names.setdefault(topic_id, key[0])
    return names, can_use_ids
