"""The case table: per API key, a generator of cases for one version.

A ``Case`` is one request sent alike to both brokers.  ``build(side)`` returns the request's
fields as a plain dict (a superset over versions is fine: fields a version lacks are dropped);
``setup(side)``, when given, first brings that broker into the state the request needs (a
joined member, a fresh producer id) and keeps what the request needs in ``side.vars``.
Broker-specific values (topic ids, member ids, producer ids) come only from ``side``, so the
two requests mean the same thing on both brokers.

Modules in this package register generators with ``@for_api(key)``; ``all_cases(advertised)``
expands them over every version kafkapy advertises.  A case's ``reference`` says which Kafka
answers it: ``ZOOKEEPER`` (the suite's Kafka 3.9 in ZooKeeper mode, the default) or ``KRAFT``
(Kafka 3.9 in KRaft mode with the consumer group protocol's preview, for the APIs its
ZooKeeper mode does not serve); ``shape(tree, side)``, when given, rewrites both normalised
answers before the diff (random member ids to labels, assignments to counts).  Names of stateful resources (topics,
groups, transactional ids) include the case id so cases never share mutable state.
"""
from __future__ import annotations

import importlib
import pkgutil
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkapy.protocol.messages import REQUESTS
from tests.conformance.client import Connection

# Recent (not fixed): records older than retention.ms would be deleted by the retention
# check during the run; both brokers get the same value.
FIXED_TIMESTAMP = int(time.time()) * 1000 - 60_000
NO_ID = None
ZOOKEEPER, KRAFT = "zookeeper", "kraft"     # Case.reference: the Kafka that answers it


class SetupError(AssertionError):
    pass


@dataclass
class Side:
    """One broker as cases see it."""
    name: str
    conn: Connection
    topic_ids: dict[str, Any] = field(default_factory=dict)   # name -> uuid.UUID
    vars: dict[str, Any] = field(default_factory=dict)        # per-case scratch

    def id_names(self) -> dict[str, str]:
        """base64 topic id -> topic name, for normalisation."""
        import base64
        return {base64.urlsafe_b64encode(u.bytes).decode().rstrip("="): n
                for n, u in self.topic_ids.items()}

    def call(self, api_key: int, version: int, fields: dict, retry_codes=(),
             code=lambda r: 0, attempts: int = 50) -> Any:
        """A setup request; retried (bounded) while ``code(response)`` is in retry_codes."""
        for _ in range(attempts):
            answer = self.conn.exchange(api_key, version, fields)
            if answer.response is None:
                raise SetupError(f"{self.name}: setup request {api_key} v{version} "
                                 f"failed: {answer.failure}")
            if code(answer.response) not in retry_codes:
                return answer.response
            time.sleep(0.1)
        raise SetupError(f"{self.name}: setup request {api_key} v{version} kept answering "
                         f"{code(answer.response)}")


@dataclass
class Case:
    name: str
    build: Callable[[Side], dict]
    setup: Callable[[Side], None] | None = None
    timeout: float = 15.0             # seconds to wait for each broker's answer
    after: Callable[[Side], None] | None = None    # settles state the request changed
    reference: str = ZOOKEEPER
    shape: Callable[[Any, Side], Any] | None = None   # rewrites a normalised answer
    api_key: int = -1
    version: int = -1

    @property
    def id(self) -> str:
        return f"{api_name(self.api_key)}-v{self.version}-{self.name}"


GENERATORS: dict[int, Callable[[int], Iterable[Case]]] = {}


def for_api(api_key: int):
    def register(gen: Callable[[int], Iterable[Case]]):
        GENERATORS[api_key] = gen
        return gen
    return register


def api_name(api_key: int) -> str:
    return REQUESTS[api_key].name.removesuffix("Request")


def _load_modules() -> None:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


def all_cases(advertised: dict[int, tuple[int, int]]) -> list[Case]:
    """Every case for every advertised (api, version); an API without generator gets none
    (``test_every_advertised_api_has_cases`` reports it)."""
    _load_modules()
    cases = []
    for key in sorted(advertised):
        gen = GENERATORS.get(key)
        lo, hi = advertised[key]
        for version in range(lo, hi + 1):
            for case in (gen(version) if gen else ()):
                case.api_key, case.version = key, version
                cases.append(case)
    return cases


def batch(records: list[tuple[bytes | None, bytes | None]], magic: int = 2,
          transactional: bool = False, producer_id: int = -1, producer_epoch: int = -1,
          base_sequence: int = -1, headers: list | None = None, compression: int = 0,
          timestamp: int | None = None) -> bytes:
    """One record batch (or legacy message set) with fixed timestamps; compression is the
    attribute code (1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
    ts = FIXED_TIMESTAMP if timestamp is None else timestamp
    if magic < 2:
        builder = LegacyRecordBatchBuilder(magic, compression, 1 << 20)
        for i, (key, value) in enumerate(records):
            builder.append(i, ts + i if magic else None, key, value)
        return bytes(builder.build())
    builder = DefaultRecordBatchBuilder(2, compression, transactional, producer_id,
                                        producer_epoch, base_sequence, 1 << 20)
    for i, (key, value) in enumerate(records):
        builder.append(i, ts + i, key, value, headers or [])
    return bytes(builder.build())


def values(n: int, prefix: str = "v") -> list[tuple[None, bytes]]:
    return [(None, f"{prefix}{i}".encode()) for i in range(n)]
