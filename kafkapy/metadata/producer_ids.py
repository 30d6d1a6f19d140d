"""Producer id allocation in blocks claimed from the metadata store.

``/latest_producer_id_block`` holds the last block handed out:
``{"version":1,"broker":<id>,"block_start":"<first>","block_end":"<last>"}``
(numbers as strings, as Kafka writes them).  ``new_producer_id_block`` is Kafka 3.9's
``ZkProducerIdManager.getNewProducerIdBlock``: read the znode and its zk version, write
the next 1000 ids conditionally on that version, retry on a conflict.  Two writers
therefore never get the same block and a restarted broker never reuses an id.

Two callers share it:

* ``ProducerIdManager`` (this broker's InitProducerId and transaction coordinator)
  claims blocks for itself by writing the znode directly;
* the active controller serves AllocateProducerIds (API 67) with it: a Kafka 3.9
  broker in ZooKeeper mode at ``inter.broker.protocol.version`` >= 3.0 never writes
  the znode itself but asks the controller (Kafka's RPCProducerIdManager), so a
  kafkapy controller must hand out blocks for it (``broker`` = the asking broker).

Why kafkapy brokers keep writing the znode instead of asking the controller by RPC:
uniqueness comes from the znode's conditional update, whoever the writer is -- Kafka's
own controller writes it with this very loop, whose comment expects other brokers to
write it concurrently during a rolling upgrade; so direct writers and the controller
(either kind) interleave safely, and blocks only grow.  Kafka moved its brokers to the
RPC (KIP-730) for the ZooKeeper-to-KRaft migration, where a KRaft controller owns the
ids and the znode stops being the authority; kafkapy has no KRaft mode and no
migration, so that reason does not apply, and the direct write keeps InitProducerId
independent of the controller's availability (Kafka's RPC manager answers
COORDINATOR_LOAD_IN_PROGRESS while it waits for a block).

Invariants: ids handed out are strictly increasing per manager; every block written
starts right after the block the znode held (or at 0); at most ``_MAX_ATTEMPTS``
conflicting writes are retried, then ``ProducerIdBlockError`` is raised.
"""
from __future__ import annotations

import structlog
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkapy.metadata import paths
from kafkapy.metadata.paths import ProducerIdBlock

BLOCK_SIZE = paths.PRODUCER_ID_BLOCK_SIZE
PATH = paths.LATEST_PRODUCER_ID_BLOCK
#: Java's Long.MAX_VALUE: a block never reaches past it (Kafka's exhaustion check).
_MAX_ID = 2**63 - 1
#: Conflicting writes retried before giving up (Kafka retries forever; a conflict
#: means another writer got a block, so this is only reached under a storm of them).
_MAX_ATTEMPTS = 1000

_log = structlog.get_logger("kafkapy.producer_ids")


class ProducerIdBlockError(Exception):
    """No block could be claimed (ids exhausted, or too many conflicting writes)."""


def new_producer_id_block(store, broker_id: int) -> ProducerIdBlock:
    """Claim the next block of ``BLOCK_SIZE`` ids for ``broker_id`` (Kafka's
    ``ZkProducerIdManager.getNewProducerIdBlock``).  Store errors propagate."""
    for _ in range(_MAX_ATTEMPTS):
        try:
            data, stat = store.get(PATH)
        except NoNodeError:
            data, stat = b"", None
        start = _next_block_start(data)
        block = ProducerIdBlock(broker=int(broker_id), block_start=start,
                                block_end=start + BLOCK_SIZE - 1)
        if _write(store, block, stat):
            _log.info(f"Acquired new producerId block {_describe(block)} by writing to Zk "
                      f"with path version {0 if stat is None else stat.version + 1}")
            return block
    raise ProducerIdBlockError(f"gave up claiming a producer id block after "
                               f"{_MAX_ATTEMPTS} conflicting writes")


def _next_block_start(data: bytes) -> int:
    if not data:
        return 0
    current = paths.decode_producer_id_block(data)
    if current.block_end > _MAX_ID - BLOCK_SIZE:
        _log.critical("Exhausted all producerIds as the next block's end producerId is will "
                      "has exceeded long type limit (current block end producerId is "
                      f"{current.block_end})")
        raise ProducerIdBlockError("Have exhausted all producerIds.")
    return current.block_end + 1


def _write(store, block: ProducerIdBlock, stat) -> bool:
    """The conditional write; False when another writer came first."""
    payload = paths.encode_producer_id_block(block.broker, block.block_start, block.block_end)
    try:
        if stat is None:
            store.create(PATH, payload, makepath=True)
        else:
            store.set(PATH, payload, version=stat.version)
    except (BadVersionError, NodeExistsError, NoNodeError):
        return False
    return True


def _describe(block: ProducerIdBlock) -> str:
    return (f"ProducerIdsBlock(assignedBrokerId={block.broker}, "
            f"firstProducerId={block.block_start}, size={block.size})")


class ProducerIdManager:
    """This broker's producer ids (Kafka's ZkProducerIdManager): one block at a time,
    the next claimed when the current one is used up."""

    def __init__(self, store, node_id: int) -> None:
        self._store = store
        self._node_id = node_id
        self._next = 0
        self._end = -1

    def next_id(self) -> int:
        if self._next > self._end:
            block = new_producer_id_block(self._store, self._node_id)
            self._next, self._end = block.block_start, block.block_end
        value = self._next
        self._next += 1
        return value
