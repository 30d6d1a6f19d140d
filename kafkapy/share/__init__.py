"""Share groups' partition side (KIP-932): the share-partition leader's state of each
(group, topic partition) and the requests that read and change it.

``partition`` (``SharePartition``: Kafka's SharePartition, pure and clock-driven: the
in-flight records, their acquisition locks, delivery counts and the share-partition start
and end offsets; no I/O, its caller reads the log, persists and schedules timers).
"""
