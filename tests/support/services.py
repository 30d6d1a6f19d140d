"""The handler tests' broker: a ``Services`` record holding the components a test names.

``services(cache=..., authorizer=...)`` is what a real broker hands its handlers, with
only the parts the test gives (and a config, a mock clock, the API registry, node 0, no
authorizer, no transaction coordinator).  Every other part is absent: reading it raises
an AttributeError naming it, so a handler that reaches for something the test did not
expect fails loudly instead of passing on a stand-in.  ``context(...)`` wraps the record
in a request context, as the listener does for each request.
"""
from __future__ import annotations

from dataclasses import MISSING, fields

from kafkapy.api.context import RequestContext
from kafkapy.api.principal import PLAINTEXT_SESSION, Session
from kafkapy.clock import MockClock
from kafkapy.config.broker import BrokerConfig
from kafkapy.handlers import build_registry
from kafkapy.handlers.services import Services
from kafkapy.protocol.messages import RESPONSES
from kafkapy.quota.client import ClientQuotas
from kafkapy.quota.controller_mutation import ControllerMutationQuotaManager

TS = 1_700_000_000_000


class Absent:
    """A component the test did not give: any use of it fails, naming it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        raise AttributeError(f"the test's services have no {self._name} (asked for .{attr})")

    def __repr__(self) -> str:
        return f"<absent {self._name}>"


def services(**parts) -> Services:
    """A ``Services`` with ``parts``; node 0's default config and a MockClock unless given."""
    given = {"node_id": 0, "authorizer": None, "txn_coordinator": None, **parts}
    if "config" not in given:
        given["config"] = BrokerConfig.from_properties({"broker.id": str(given["node_id"])})
    given.setdefault("clock", MockClock(TS))
    given.setdefault("apis", build_registry())
    given.setdefault("client_quotas", ClientQuotas(None, given["clock"]))
    given.setdefault("controller_mutation", ControllerMutationQuotaManager(11, 1, given["clock"]))
    unknown = set(given) - {f.name for f in fields(Services)}
    if unknown:
        raise TypeError(f"Services has no {sorted(unknown)}")
    for f in fields(Services):
        if f.default is MISSING:    # a field with a default keeps it (links: all reachable)
            given.setdefault(f.name, Absent(f.name))
    return Services(**given)


def context(parts: Services, api_key: int, version: int, *, correlation_id: int = 1,
            client_id: str | None = "test", peer: str = "127.0.0.1:1",
            listener: str | None = None, session: Session = PLAINTEXT_SESSION,
            connection_auth=None, response_cls: type | None = None) -> RequestContext:
    """The context the listener makes for one request of ``api_key`` at ``version``."""
    return RequestContext(parts, api_key, version, correlation_id, client_id, peer,
                          response_cls or RESPONSES[api_key], listener=listener,
                          session=session, connection_auth=connection_auth)
