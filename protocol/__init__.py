"""Kafka message schemas that kafka-python lacks (inter-broker APIs, internal-topic records)."""
