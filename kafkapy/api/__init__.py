"""What the listener and the API handlers share: the request context a handler gets and
the error that closes a connection (``context``), and the spec of an API that the listener
dispatches by (``spec``).  Below both ``kafkapy.network`` and ``kafkapy.handlers``."""
