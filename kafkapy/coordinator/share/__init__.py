"""The share coordinator (KIP-932): share partitions' persisted state in
``__share_group_state``, and the persister share-partition leaders and the group
coordinator call.

``persister`` (the ``Persister`` protocol, ``StateBatch``, ``ShareState``), ``batches``
(Kafka's PersisterStateBatchCombiner), ``state`` (one state partition's keys, Kafka's
ShareCoordinatorShard: decisions and replay), ``records`` (ShareSnapshot/ShareUpdate in
Kafka's bytes), ``coordinator`` (``ShareCoordinator``: the partitions this broker serves,
appends with acks=-1), ``service`` (``ShareService``: the topic, loading on leadership,
background work), ``broker_persister`` (``BrokerPersister``: each key to its coordinator,
in-process or over the wire).
"""
