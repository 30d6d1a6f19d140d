"""Small helpers shared by handler modules."""
from __future__ import annotations

from collections import Counter
from typing import Iterable


def repeated(names: Iterable[str]) -> set[str]:
    """Names that appear more than once in a request (Kafka answers them INVALID_REQUEST)."""
    return {name for name, count in Counter(names).items() if count > 1}
