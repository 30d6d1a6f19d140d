"""Share groups (KIP-932) in the group coordinator: the group, its records in
``__consumer_offsets``, Kafka's SimpleAssignor and the assignment steps; the heartbeat
itself is ``kafkapy.coordinator.group.share_ops``."""
