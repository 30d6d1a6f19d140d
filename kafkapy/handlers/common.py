"""Small helpers shared by handler modules."""
from __future__ import annotations

from collections import Counter
from typing import Hashable, Iterable


def repeated(keys: Iterable[Hashable]) -> set:
    """Keys (topic names, partitions) that appear more than once in a request;
    Kafka answers each of them INVALID_REQUEST."""
    return {key for key, count in Counter(keys).items() if count > 1}


# What Kafka answers every ACL request with when authorizer.class.name is empty
# (its default): error SECURITY_DISABLED with this message.
NO_AUTHORIZER = "No Authorizer is configured."


# What Kafka answers for "authorized operations" with no authorizer configured: every
# operation the resource type supports (AclEntry.supportedOperations), as AclOperation
# codes -- READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.  Encoded as bits: topic 3576,
# cluster 8096, group 328.  When the request does not ask for them the field keeps its
# schema default, INT32_MIN (None here).
TOPIC_OPERATIONS = frozenset({3, 4, 5, 6, 7, 8, 10, 11})
CLUSTER_OPERATIONS = frozenset({5, 7, 8, 9, 10, 11, 12})
GROUP_OPERATIONS = frozenset({3, 6, 8})
