"""The share coordinator (KIP-932): share partitions' persisted state in
``__share_group_state``, and the persister share-partition leaders and the group
coordinator call.

``persister`` (the ``Persister`` protocol, ``StateBatch``, ``ShareState``), ``batches``
(Kafka's PersisterStateBatchCombiner), ``state`` (one state partition's keys, Kafka's
ShareCoordinatorShard: decisions and replay).
"""
