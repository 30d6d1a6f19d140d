"""The broker's logging: every line, its own and its libraries', rendered by structlog.

One handler sits on the stdlib root logger, writing to stderr through structlog's
``ProcessorFormatter``.  structlog loggers hand their event dicts to stdlib loggers of the
same name (``LoggerFactory`` + ``wrap_for_formatter``); records from plain ``logging``
users (kazoo, asyncio, prometheus_client, ``warnings``, uncaught exceptions) take the same
formatter through its ``foreign_pre_chain``.  So:

- with ``fmt="json"`` every line on stderr is one JSON object carrying ``event``,
  ``level``, ``logger`` and ``timestamp`` (and ``exception`` when there is one); with
  ``"console"`` every line is structlog's console layout;
- levels are log4j's names, any case: ALL TRACE DEBUG INFO WARN ERROR FATAL OFF.  ``level``
  is the root level (``kafkapy.log.level``); ``levels`` sets named loggers, ``name=LEVEL``
  items (``kafkapy.log.levels=kazoo=WARN,kafkapy.server=DEBUG``), a logger's level covering
  its children as in log4j.  Both act on structlog and stdlib loggers alike, because the
  stdlib logger of the same name decides;
- ``configure_logging`` may run more than once; each call replaces the previous handler.
  ``fmt=None`` holds records back instead (start-up, while the config that names the format
  is being read): the next call writes them in its format, so config warnings of a JSON
  broker are JSON too; records still held when the process exits (a config error) are
  written in the console layout then.
"""
from __future__ import annotations

import atexit
import logging
import sys
import threading

import structlog

TRACE = 5
# log4j's levels as stdlib numbers. ALL is 1, not 0: level 0 on a named logger means
# "inherit from the parent" in stdlib logging.
LEVELS = {"ALL": 1, "TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
          "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL,
          "OFF": logging.CRITICAL + 10}
# make_filtering_bound_logger only knows stdlib's own levels.
_FILTER_STEPS = (logging.CRITICAL, logging.ERROR, logging.WARNING, logging.INFO,
                 logging.DEBUG, logging.NOTSET)


def level_number(name: str) -> int:
    """A log4j level name (any case) as a stdlib level; ValueError if it is none."""
    try:
        return LEVELS[name.strip().upper()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown log level {name!r}") from None


def parse_logger_levels(items: list[str] | None) -> dict[str, int]:
    """``["kazoo=WARN", ...]`` -> {"kazoo": 30}; ValueError on a malformed item."""
    levels = {}
    for item in items or []:
        name, sep, level = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{item!r} is not logger=LEVEL")
        levels[name.strip()] = level_number(level)
    return levels


def is_level(value: object) -> bool:
    return _valid(level_number, value)


def are_logger_levels(value: object) -> bool:
    return _valid(parse_logger_levels, value)


def _valid(parse, value) -> bool:
    try:
        parse(value)
    except (ValueError, TypeError):
        return False
    return True


class _Hold(logging.Handler):
    """Keeps records until the format is known (``configure_logging(None)``)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


# Kafka writes the controller's per-partition state changes and requests to
# state-change.log, not to the server log; here they are WARN unless named in
# kafkapy.log.levels (``kafkapy.state.change=INFO``).
_QUIET_BY_DEFAULT = ("kafkapy.state.change", "kafkapy.controller.request_batch")


def configure_logging(fmt: str | None = "console", level: str = "INFO",
                      levels: list[str] | None = None) -> None:
    """Route all logging to one stderr handler in ``fmt`` ("console" or "json"; None holds
    records for the next call, see the module doc)."""
    root_level = level_number(level)
    quiet = max(root_level, logging.WARNING)
    named = {**{name: quiet for name in _QUIET_BY_DEFAULT}, **parse_logger_levels(levels)}
    logging.addLevelName(TRACE, "TRACE")
    held = _install_handler(fmt, root_level)
    for name, value in named.items():
        logging.getLogger(name).setLevel(value)
    _replay(held)
    lowest = min([root_level, *named.values()])
    structlog.configure(
        processors=[structlog.stdlib.filter_by_level, *_shared_chain(),
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        # Calls below every configured level cost one no-op method call; the stdlib
        # logger of the event's name filters the rest (per-logger levels).
        wrapper_class=structlog.make_filtering_bound_logger(
            next(step for step in _FILTER_STEPS if step <= lowest)),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught
    threading.excepthook = lambda args: _log_uncaught(args.exc_type, args.exc_value,
                                                      args.exc_traceback)


def _shared_chain() -> list:
    """What every event gets, whether it came from structlog or from stdlib logging."""
    return [structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_logger_name,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer()]


def _install_handler(fmt: str | None, root_level: int) -> list[logging.LogRecord]:
    """Install the handler for ``fmt``; returns the records an earlier hold kept."""
    if fmt is None:
        handler = _Hold()
        atexit.register(_release, handler)
        return _replace_root_handlers(handler, root_level)
    if fmt == "json":
        render = [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    else:
        # The console renderer lays out tracebacks itself.
        render = [structlog.dev.ConsoleRenderer(colors=False)]
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_chain(),
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *render])
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    return _replace_root_handlers(handler, root_level)


def _replace_root_handlers(handler: logging.Handler, root_level: int) -> list:
    root = logging.getLogger()
    held = []
    # Any handler, ours from an earlier call or logging.basicConfig's, would write
    # lines in another layout.
    for old in list(root.handlers):
        if isinstance(old, _Hold):
            held += old.records
            old.records = []
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(root_level)
    return held


def _replay(records: list[logging.LogRecord]) -> None:
    """Held records through the new handler, if their logger's level lets them pass now."""
    for record in records:
        if logging.getLogger(record.name).isEnabledFor(record.levelno):
            logging.getLogger().handle(record)


def _release(hold: _Hold) -> None:
    """At exit: records a hold still keeps (no format was ever configured), as console lines."""
    if hold.records and hold in logging.getLogger().handlers:
        configure_logging("console")


def _log_uncaught(exc_type, exc_value, exc_traceback) -> None:
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc_value, exc_traceback)
        return
    logging.getLogger("kafkapy").critical(
        "uncaught exception", exc_info=(exc_type, exc_value, exc_traceback))
