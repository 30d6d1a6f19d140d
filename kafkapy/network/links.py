"""Which other brokers this broker can reach: the seam through which tests cut links.

Every inter-broker connection (``kafkapy.network.client.BrokerConnection``: the controller's
requests, replica fetches, AlterPartition, transaction markers, the share persister...) is
made with the broker's ``Links``, or with ``None``: every broker reachable, which is what a
broker outside a test always has (``kafkapy.server.Broker`` gets None unless given one), and
then the connection asks nothing.

While ``reachable(host, port)`` is False the link to that endpoint behaves as a network
partition does, not as a closed socket: a new connection does not connect (it waits until
the link is back or its connect timeout passes), and an open one neither sends nor receives
(requests are held and go out, in order, when the link is back; responses already arrived
are handed over only then), so requests time out as they would.

Invariant: ``wait_reachable(host, port)`` returns once ``reachable(host, port)`` is True.
"""
from __future__ import annotations

from typing import Protocol


class Links(Protocol):
    """A broker's view of which inter-broker endpoints its packets reach now."""

    def reachable(self, host: str, port: int) -> bool:
        """Whether bytes to and from ``host:port`` get through now."""
        ...

    async def wait_reachable(self, host: str, port: int) -> None:
        """Return once ``host:port`` is reachable (at once when it is)."""
        ...
