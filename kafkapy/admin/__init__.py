"""The broker's admin side (Kafka's ZkAdminManager and AdminUtils): ``manager``
(``AdminManager``: CreateTopics, CreatePartitions, DeleteTopics and AlterConfigs checked
and written to the metadata store, and the waits on this broker's metadata cache) and
``assignment`` (replica placement for new topics and partitions, rack-aware; also used
by ``kafkapy-reassign-partitions``).  Any broker runs it; the active controller acts on
what it writes through its watches."""
