"""The valid-transition check shared by the partition and replica state machines.

Each machine has a table ``target -> states it may be entered from``; an item the
machine has never seen is recorded in its NonExistent state first (Kafka's
``getOrElseUpdate(..., NonExistent...)``), then checked against the table.
"""
from __future__ import annotations

from typing import Callable, Hashable, Iterable, Mapping, TypeVar

S = TypeVar("S")
K = TypeVar("K", bound=Hashable)


def split_valid_transitions(items: Iterable[K], states: dict[K, S],
                            valid_previous: Mapping[S, frozenset[S]], target: S,
                            non_existent: S, on_invalid: Callable[[K, S], None]) -> list[K]:
    """The items that may move to ``target``; ``on_invalid(item, current)`` for the others."""
    valid = []
    for item in items:
        current = states.setdefault(item, non_existent)
        if current in valid_previous[target]:
            valid.append(item)
        else:
            on_invalid(item, current)
    return valid
