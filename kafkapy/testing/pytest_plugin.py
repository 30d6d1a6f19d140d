"""pytest plugin: real in-process kafkapy brokers as fixtures (entry point ``pytest11``).

Fixtures
    ``kafka_broker``   a running single broker, the *sync* handle of ``kafkapy.testing.broker()``
                       (``.bootstrap``, ``.create_topic()``, ``.records()``, ``.advance()``, ...)
    ``kafka_cluster``  a running cluster, the sync handle of ``kafkapy.testing.cluster()``
                       (``.bootstrap``, ``.brokers``, ``.fail()``, ``.restart()``, ...)
    ``async_kafka_broker`` / ``async_kafka_cluster``  (when pytest-asyncio is installed) the
                       *async* handles, started in the test's own event loop: ``await
                       b.create_topic(...)``; always one per test.

Settings come from a marker and/or an indirect parameter; the closest marker wins over outer
ones (module ``pytestmark`` < class < function) and the parameter wins over markers::

    @pytest.mark.kafka_broker(num_partitions=3, auto_create_topics_enable=False)
    def test_x(kafka_broker): ...

    @pytest.mark.kafka_cluster(brokers=3, mock_clock=True)
    def test_y(kafka_cluster): ...

    @pytest.mark.parametrize("kafka_broker", [{"num_partitions": 1}, {"num_partitions": 4}],
                             indirect=True)
    def test_z(kafka_broker): ...

Every keyword is passed to ``broker()`` / ``cluster()`` as is (``num_partitions`` ->
``num.partitions``), except two handled here: ``mock_clock=True`` gives the broker (cluster) a
fresh ``MockClock`` (``clock=MockClock()`` passes one of your own), and ``fresh=True`` gives the
test its own broker even when brokers are shared (see below).

Lifetime (``--kafkapy-scope`` on the command line, else the ini option ``kafkapy_scope``;
``function`` by default): ``function`` starts a broker for each test and stops it after;
``module``, ``package`` or ``session`` share one broker per distinct set of settings for that
long, so tests must then not depend on a clean broker (unique topic and group names) and
should not leave it damaged -- mark tests that fail brokers or move the clock ``fresh=True``.

Invariants: importing this module imports neither the broker nor pytest-asyncio's loop
machinery beyond what pytest already loaded (collection stays fast; ``kafkapy.testing`` is
lazy); a fixture named ``kafka_broker``/``kafka_cluster`` in a conftest or test module
overrides these, as pytest always lets closer fixtures do; every broker a fixture started is
stopped by the fixture that owns it (test end for ``function``/``fresh``, scope end otherwise),
in reverse order of starting.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

_SCOPES = ("function", "class", "module", "package", "session")
_KINDS = ("kafka_broker", "kafka_cluster")  # fixture name == marker name

try:  # pytest-asyncio is optional: without it there are no async fixtures.
    import pytest_asyncio as _pytest_asyncio
except ImportError:  # pragma: no cover - exercised only without pytest-asyncio
    _pytest_asyncio = None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafkapy", "kafkapy in-process brokers")
    group.addoption(
        "--kafkapy-scope", dest="kafkapy_scope", choices=_SCOPES, default=None,
        help="how long kafka_broker/kafka_cluster brokers live: function (default: one per "
             "test) or module/package/session (shared per distinct settings)")
    parser.addini("kafkapy_scope", default="function",
                  help="default of --kafkapy-scope (function, class, module, package, session)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "kafka_broker(**settings): settings of the kafka_broker fixture's broker "
                   "(broker config keywords, mock_clock=True, fresh=True)")
    config.addinivalue_line(
        "markers", "kafka_cluster(brokers=3, **settings): settings of the kafka_cluster "
                   "fixture's cluster (as kafka_broker, plus brokers=N, zookeeper=...)")


def _shared_scope(fixture_name: str, config: pytest.Config) -> str:
    """The scope of the pool that owns shared brokers (pytest's dynamic-scope callable)."""
    scope = config.getoption("kafkapy_scope", None) or config.getini("kafkapy_scope")
    scope = (scope or "function").strip()
    if scope not in _SCOPES:
        raise pytest.UsageError(f"kafkapy_scope = {scope!r}: expected one of {', '.join(_SCOPES)}")
    return scope


class _Pool:
    """Running brokers/clusters keyed by (kind, settings); stopped together in close()."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._handles: dict[tuple, Any] = {}

    def get(self, kind: str, settings: dict[str, Any]) -> Any:
        key = (kind, _freeze(settings))
        if key not in self._handles:
            self._handles[key] = _start(self._stack, kind, settings)
        return self._handles[key]

    def close(self) -> None:
        self._handles.clear()
        self._stack.close()


@pytest.fixture(scope=_shared_scope)
def _kafkapy_pool() -> Iterator[_Pool]:
    pool = _Pool()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def kafka_broker(request: pytest.FixtureRequest, _kafkapy_pool: _Pool) -> Iterator[Any]:
    """A running in-process kafkapy broker (sync handle); settings from the
    ``kafka_broker`` marker or an indirect parameter."""
    yield from _provide(request, _kafkapy_pool, "kafka_broker")


@pytest.fixture
def kafka_cluster(request: pytest.FixtureRequest, _kafkapy_pool: _Pool) -> Iterator[Any]:
    """A running in-process kafkapy cluster (sync handle, 3 brokers unless ``brokers=N``);
    settings from the ``kafka_cluster`` marker or an indirect parameter."""
    yield from _provide(request, _kafkapy_pool, "kafka_cluster")


def _provide(request: pytest.FixtureRequest, pool: _Pool, kind: str) -> Iterator[Any]:
    settings = _settings(request, kind)
    if settings.pop("fresh", False):
        with contextlib.ExitStack() as stack:
            yield _start(stack, kind, settings)
        return
    yield pool.get(kind, settings)


if _pytest_asyncio is not None:

    @_pytest_asyncio.fixture
    async def async_kafka_broker(request: pytest.FixtureRequest) -> Any:
        """A broker started in the test's event loop (async handle), one per test; settings
        from the ``kafka_broker`` marker or an indirect parameter."""
        async with _manager("kafka_broker", _async_settings(request, "kafka_broker")) as b:
            yield b

    @_pytest_asyncio.fixture
    async def async_kafka_cluster(request: pytest.FixtureRequest) -> Any:
        """A cluster started in the test's event loop (async handle), one per test; settings
        from the ``kafka_cluster`` marker or an indirect parameter."""
        async with _manager("kafka_cluster", _async_settings(request, "kafka_cluster")) as c:
            yield c


def _async_settings(request: pytest.FixtureRequest, kind: str) -> dict[str, Any]:
    settings = _settings(request, kind)
    settings.pop("fresh", None)  # async handles are always the test's own
    return settings


def _settings(request: pytest.FixtureRequest, kind: str) -> dict[str, Any]:
    """Marker keywords (outermost first, so the closest marker wins), then the indirect
    parameter; ``mock_clock=True`` stays in (it is part of the sharing key) until _start."""
    settings: dict[str, Any] = {}
    for mark in reversed(list(request.node.iter_markers(kind))):
        if mark.args:
            raise pytest.UsageError(
                f"@pytest.mark.{kind} takes keywords only, got positional {mark.args!r}")
        settings.update(mark.kwargs)
    param = getattr(request, "param", None)
    if param is not None:
        if not isinstance(param, dict):
            raise pytest.UsageError(
                f"indirect parameter of {kind} must be a dict of settings, got {param!r}")
        settings.update(param)
    return settings


def _manager(kind: str, settings: dict[str, Any]) -> Any:
    """The context manager of ``kafkapy.testing`` for these settings (imported only now)."""
    from kafkapy import testing

    settings = dict(settings)
    if settings.pop("mock_clock", False):
        settings.setdefault("clock", testing.MockClock())
    if kind == "kafka_broker":
        return testing.broker(**settings)
    settings.setdefault("brokers", 3)
    return testing.cluster(**settings)


def _start(stack: contextlib.ExitStack, kind: str, settings: dict[str, Any]) -> Any:
    """Start a broker/cluster in its background thread; ``stack`` stops it."""
    return stack.enter_context(_manager(kind, settings))


def _freeze(value: Any) -> Any:
    """A hashable stand-in for a settings value (dicts and lists by content)."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set, frozenset)):
        return (type(value).__name__, tuple(_freeze(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return value
