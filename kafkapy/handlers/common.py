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
