"""kafka-python's package in the broker and tool processes, without its clients until
asked for.

The broker uses kafka-python's protocol codecs and error classes, never its clients; a tool
uses one client at most (most of them only the admin client).
``import kafka.protocol`` first runs the package's ``kafka/__init__.py``, and that imports
the admin client, the consumer and the producer: some 100 modules and about 60 ms of CPU,
a tenth of what importing the broker costs, paid by every broker start (the test suite
starts hundreds).

``defer_client_imports()`` registers the package module without running that file, so
``kafka.protocol`` and ``kafka.errors`` load alone.  The first name asked of the package
itself (``from kafka import KafkaProducer``, ``kafka.__version__``) runs the file then, into
the same module, so code that wants the clients sees the package as it always is.
Called by ``kafkapy.cli``'s package file, so before anything the broker's entry point or a
tool imports; when ``kafka`` is already imported (a test process) it does nothing.
"""
from __future__ import annotations

import importlib.util
import sys

_PACKAGE = "kafka"
# Names the package's file defines that look like the import system's own (those are not
# worth running it for: a probe of ``__wrapped__`` or ``__path__`` is not a use).
_PACKAGE_DUNDERS = frozenset({"__version__", "__all__", "__title__", "__author__",
                              "__license__", "__copyright__"})


def defer_client_imports() -> None:
    if _PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.loader is None:
        return      # not installed: the first import says so
    package = importlib.util.module_from_spec(spec)   # __path__ set, the file not run
    loaded = False

    def finish(name: str):
        """Module ``__getattr__``: run the package's file once, then answer from it."""
        nonlocal loaded
        if not loaded and (name in _PACKAGE_DUNDERS or not name.startswith("__")):
            loaded = True
            spec.loader.exec_module(package)
        try:
            return package.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {_PACKAGE!r} has no attribute {name!r}") from None

    package.__getattr__ = finish
    sys.modules[_PACKAGE] = package
