"""A fake replica manager that records the topic config changes applied to it."""
from __future__ import annotations




class FakeLog:
    def __init__(self):
        self.configs = []

    def update_config(self, config):
        self.configs.append(config)


class FakePartition:
    def __init__(self):
        self.log = FakeLog()


class FakeReplicaManager:
    def __init__(self, keys):
        self.partitions = {key: FakePartition() for key in keys}
