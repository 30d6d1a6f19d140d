"""Producer id allocation in blocks claimed from the metadata store.

``/latest_producer_id_block`` holds the last block handed out:
``{"version":1,"broker":<id>,"block_start":"<first>","block_end":"<last>"}``
(numbers as strings, as Kafka writes them).  A broker claims the next 1000
ids with a conditional write on the znode version, so two brokers never get
the same block and a restarted broker never reuses an id.
"""
from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkapy.metadata import paths

BLOCK_SIZE = 1000
PATH = paths.LATEST_PRODUCER_ID_BLOCK


class ProducerIdManager:
    def __init__(self, store, node_id: int) -> None:
        self._store = store
        self._node_id = node_id
        self._next = 0
        self._end = -1

    def next_id(self) -> int:
        if self._next > self._end:
            self._claim_block()
        value = self._next
        self._next += 1
        return value

    def _claim_block(self) -> None:
        while True:
            try:
                data, stat = self._store.get(PATH)
            except NoNodeError:
                data, stat = b"", None
            start = paths.decode_producer_id_block(data).block_end + 1 if data else 0
            payload = paths.encode_producer_id_block(self._node_id, start,
                                                     start + BLOCK_SIZE - 1)
            try:
                if stat is None:
                    self._store.create(PATH, payload, makepath=True)
                else:
                    self._store.set(PATH, payload, version=stat.version)
            except (BadVersionError, NodeExistsError):
                continue
            self._next, self._end = start, start + BLOCK_SIZE - 1
            return
