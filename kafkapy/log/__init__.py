"""Kafka's on-disk log: segments, indexes, checkpoints, recovery, producer state.

Entry points: ``LogManager`` (all partitions of the broker) and ``Log`` (one
partition).  See each module's docstring for its file format.
"""
from kafkapy.log.log import AppendInfo, Log
from kafkapy.log.manager import LogManager
from kafkapy.log.segment import FetchSlice

__all__ = ["AppendInfo", "Log", "LogManager", "FetchSlice"]
