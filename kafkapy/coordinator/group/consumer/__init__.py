"""The consumer group protocol (KIP-848, ``group.protocol=consumer``): the broker computes
each member's assignment and reconciles members towards it one epoch at a time."""
