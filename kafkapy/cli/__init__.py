"""The command-line tools and the broker's entry point (``python -m kafkapy``).

Each is a process of its own, so the package loads kafka-python's modules one by one, not
through ``kafka/__init__.py`` (which imports the admin client, the consumer and the
producer whatever the process uses): see ``kafkapy._kafka_package``.
"""
from kafkapy._kafka_package import defer_client_imports

defer_client_imports()      # before any tool imports kafka-python
