"""Topic names and topic ids as Kafka defines them.

Topic names (Kafka's ``Topic.validate``): 1..249 characters from
``[a-zA-Z0-9._-]``, not ``.`` or ``..``.  Two names that differ only by ``.``
versus ``_`` collide (metric names would clash), so creating the second fails.

Topic ids are 128-bit UUIDs, written in ZooKeeper and ``partition.metadata`` as
22 characters of URL-safe base64 without padding (Kafka's ``Uuid.toString``);
Kafka never hands out an id whose text starts with ``-`` or the all-zero id.
"""
from __future__ import annotations

import base64
import re
import uuid

MAX_NAME_LENGTH = 249
#: The internal topics (Kafka's Topic.GROUP_METADATA_TOPIC_NAME,
#: TRANSACTION_STATE_TOPIC_NAME and SHARE_GROUP_STATE_TOPIC_NAME): the group
#: coordinator's, the transaction coordinator's and the share coordinator's logs.
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


def invalid_topic_reason(name: str | None) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka 3.9's Topic.validate message), or None."""
    if not name:
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return (f"Topic name is invalid: the length of '{name}' is longer than the max "
                f"allowed length {MAX_NAME_LENGTH}")
    if not _LEGAL.match(name):
        return (f"Topic name is invalid: '{name}' contains one or more characters other "
                "than ASCII alphanumerics, '.', '_' and '-'")
    return None


def collision_key(name: str) -> str:
    return name.replace(".", "_")


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS


def new_topic_id() -> uuid.UUID:
    while True:
        candidate = uuid.uuid4()
        if not topic_id_text(candidate).startswith("-"):
            return candidate


def topic_id_text(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


def parse_topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def topic_id_key(topic_id) -> str:
    """A topic id as its text, to look a name up by: a ``uuid.UUID`` converted, text as
    is, anything else "" (which names no topic)."""
    if isinstance(topic_id, str):
        return topic_id
    try:
        return topic_id_text(topic_id)
    except (AttributeError, TypeError):
        return ""
