"""Helpers the case modules share: case constructors and request fragments."""
from __future__ import annotations

import uuid

from tests.conformance.cases import ZOOKEEPER, Case, Side

UNKNOWN_TOPIC_ID = uuid.UUID("7b1d3c1e-0000-4000-8000-00000000c0de")


def case(name: str, build, setup=None, timeout: float = 15.0, after=None,
         reference: str = ZOOKEEPER, shape=None) -> Case:
    """A case whose request is ``build`` (a dict, or a function of the side)."""
    fn = build if callable(build) else (lambda side, fields=build: fields)
    return Case(name=name, build=fn, setup=setup, timeout=timeout, after=after,
                reference=reference, shape=shape)


def tid(side: Side, topic: str):
    """The broker's own id of ``topic`` (the zero uuid when it has none)."""
    return side.topic_ids.get(topic, uuid.UUID(int=0))
