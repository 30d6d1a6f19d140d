"""Fault injection with checked histories: a ZooKeeper + three-broker cluster (kafkapy or
Kafka 3.9) under network partitions, pauses, kills and session expiry, while workloads record
every client operation into a history that the checker reads for Kafka's anomalies."""
