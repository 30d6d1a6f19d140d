"""Plumbing shared by the Kafka-shaped command-line tools (``kafkapy-topics`` and friends).

Each tool mirrors one of Kafka's ``bin/`` scripts and talks to any broker over the Kafka
protocol through kafka-python. What they share:

- ``ToolParser``: argparse with Kafka's habits. A usage error prints the message and the
  usage to stderr and exits 1 (argparse exits 2); every tool takes ``--bootstrap-server``
  and ``--command-config``. Unambiguous prefixes of long options work, as with joptsimple.
- Client properties: ``--command-config`` (and the producer/consumer config files) are Java
  ``.properties`` files, read by ``kafkapy.config.properties`` exactly as Kafka reads them;
  ``--*-property key=value`` pairs are parsed like Kafka's ``parseKeyValueArgs``. Both use
  Kafka's client property names (``client.id``, ``request.timeout.ms``); ``client_config``
  turns them into kafka-python keyword arguments (``client_id``, ``request_timeout_ms``)
  typed after the client's defaults. A name kafka-python does not know is skipped with
  Kafka's warning "The configuration 'x' was supplied but isn't a known config.";
  ``sasl.jaas.config`` gives its ``username``/``password`` to kafka-python's SASL settings.
- ``run``: logging (WARN and above to stderr, in the layout of Kafka's tools-log4j), and
  failures to exit codes: ``UsageError`` -> its message on stderr, exit 1; ``CommandError``
  and kafka-python errors -> the tool's own error report, exit 1; Ctrl-C or SIGTERM -> 130.
  kafka-python's own log lines are silenced (below CRITICAL): they retry noisily where
  Kafka's client would not, and what fails reaches the user once, as the tool's report.
- A broker that is down is said once: before a client is made (``new_client``), each
  bootstrap server gets one TCP connect (bounded by Kafka's socket.connection.setup.timeout.ms
  default, 10 s); when none answers, the tool reports Kafka's NetworkClient sentence
  "Connection to node -1 (host/127.0.0.1:9092) could not be established. Node may not be
  available." (one per server, on one line) and exits 1, instead of kafka-python's 30 s of
  bootstrap retries.  An unresolvable host gets Kafka's "No resolvable bootstrap urls given
  in bootstrap.servers".
- ``send``: a request kafka-python builds but its admin methods do not send as a tool needs
  (per-resource errors kept, a chosen broker), through the admin client's connections.
- Topics: ``TopicFilter`` (Kafka's IncludeList: a regex matching the whole name, commas as
  alternatives), ``kafka_uuid`` (Kafka's base64 spelling of a topic id), ``error_text``
  (the broker's error message, else Kafka's default description of the error code).
- Java shapes: ``java_text`` (Java's string concatenation of a value), ``java_set_order``
  (the iteration order of a ``java.util.HashSet``, which Kafka's tools print) with the
  ``hashCode`` of Strings, ints and TopicPartitions (all from ``kafkapy.jvm``, re-exported).
"""
from __future__ import annotations

import argparse
import base64
import logging
import os
import re
import signal
import socket
import sys
import uuid
from typing import Callable

import kafka.errors
from kafka.admin import KafkaAdminClient

from kafkapy.config.errors import ConfigError
from kafkapy.config.properties import load_properties
from kafkapy.jvm import int_hash, string_hash, topic_partition_hash  # noqa: F401 (re-exported)
from kafkapy.jvm import java_hash_order as java_set_order  # noqa: F401 (re-exported)

log = logging.getLogger("kafkapy.cli")
# Kafka's socket.connection.setup.timeout.ms default.
_CONNECT_TIMEOUT_S = 10.0


class UsageError(Exception):
    """Bad command-line input; Kafka prints these to stderr and exits 1."""


class CommandError(Exception):
    """The operation failed (the broker refused, a resource is missing, ...)."""


class ToolParser(argparse.ArgumentParser):
    """argparse that fails like Kafka's joptsimple tools: message and usage, exit 1."""

    def __init__(self, prog: str, description: str) -> None:
        super().__init__(prog=prog, description=description)
        self.add_argument("--bootstrap-server", metavar="HOST1:PORT1,...",
                          help="REQUIRED: the Kafka server(s) to connect to")
        self.add_argument("--command-config", metavar="FILE",
                          help="property file with configs for the client")

    def error(self, message: str):
        print(message, file=sys.stderr)
        self.print_usage(sys.stderr)
        sys.exit(1)


def run(body: Callable[[argparse.Namespace], int | None], parser: ToolParser,
        argv: list[str] | None, report: Callable[[str], None]) -> int:
    """Parse ``argv``, run ``body`` and map what goes wrong to Kafka's exit codes.

    ``report`` prints a failed operation in the tool's own words (each Kafka tool
    has its own prefix, stream and layout for these).
    """
    args = parser.parse_args(argv)
    _configure_logging()
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return body(args) or 0
    except UsageError as err:
        print(err, file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly; stdout now goes nowhere so the
        # interpreter's final flush does not complain either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (CommandError, kafka.errors.KafkaError, ConfigError, OSError) as err:
        report(failure_text(err))
        return 1
    except KeyboardInterrupt:
        return 130


def to_stderr(message: str) -> None:
    """The ``report`` of tools that print a failure as it is, on stderr."""
    print(message, file=sys.stderr)


def error_to_stderr(message: str) -> None:
    """The ``report`` of tools that print ``Error: <message>`` on stderr."""
    print(f"Error: {message}", file=sys.stderr)


def read_text(path: str) -> str:
    """A file named by an option, or Kafka's "Unable to read file" failure."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        raise CommandError(f"Unable to read file {path}") from None


def _interrupt(signum, frame) -> None:
    # SIGTERM ends a tool like Ctrl-C does, so ``finally`` blocks (closing clients,
    # committing a console consumer's offsets) still run, as in Kafka's shutdown hooks.
    raise KeyboardInterrupt


def _configure_logging() -> None:
    logging.addLevelName(logging.WARNING, "WARN")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    # kafka-python logs every retry (a down broker: 30 s of connection errors) and warnings
    # Kafka's client does not give (a consumer's first assignment before its metadata);
    # failures reach the user through the tool's own report instead (see module doc).
    logging.getLogger("kafka").setLevel(logging.CRITICAL)


def single_action(args: argparse.Namespace, actions, listing: str) -> str:
    """The one action flag given, else Kafka's usage error naming ``listing``."""
    given = [a for a in actions if getattr(args, a)]
    if len(given) != 1:
        raise UsageError(f"Command must include exactly one action: {listing}")
    return given[0]


def require_bootstrap(args: argparse.Namespace) -> str:
    if not args.bootstrap_server:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    return args.bootstrap_server


def properties_file(path: str | None) -> dict[str, str]:
    """A Java .properties file, or nothing when no path is given."""
    return load_properties(path) if path else {}


def key_values(items: list[str]) -> dict[str, str]:
    """``key=value`` pairs from repeated options, split at the first ``=`` as Kafka does."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"Invalid command line properties: {item}")
        pairs[key.strip()] = value.strip()
    return pairs


def kafka_python_poll(consumer, timeout_ms: int, join_wait_ms: int) -> dict:
    """``consumer.poll`` of a kafka-python group member; before any partition is assigned
    the poll waits up to ``join_wait_ms`` instead.  kafka-python 3.0 never applies an
    assignment whose SyncGroup answer comes after its poll gave up, when new metadata asked
    for the rejoin (the leader first assigned before it knew the topic): one poll has to
    see the whole join."""
    if not consumer.assignment():
        timeout_ms = max(timeout_ms, join_wait_ms)
    return consumer.poll(timeout_ms=timeout_ms)


def client_config(props: dict[str, str], defaults: dict) -> dict:
    """Kafka client properties -> kafka-python keyword arguments (see the module doc)."""
    config = {}
    for name, raw in props.items():
        if name == "sasl.jaas.config":
            config.update(_jaas_credentials(raw))
            continue
        key = name.replace(".", "_")
        if key not in defaults:
            log.warning("The configuration '%s' was supplied but isn't a known config.", name)
            continue
        try:
            config[key] = _typed(key, raw.strip(), defaults[key])
        except ValueError:
            raise UsageError(f"Invalid value {raw} for configuration {name}") from None
    return config


def _typed(key: str, raw: str, default):
    if key == "bootstrap_servers":
        return [server.strip() for server in raw.split(",") if server.strip()]
    if key == "acks":
        return "all" if raw == "all" else int(raw)
    if key == "compression_type":
        return None if raw == "none" else raw
    if isinstance(default, bool):
        return raw.lower() == "true"
    if isinstance(default, (int, float)):
        return int(raw)
    if default is None and re.fullmatch(r"-?\d+", raw):
        return int(raw)
    return raw


_JAAS_FIELD = re.compile(r'(username|password)\s*=\s*"([^"]*)"')


def _jaas_credentials(jaas: str) -> dict:
    fields = dict(_JAAS_FIELD.findall(jaas))
    config = {}
    if "username" in fields:
        config["sasl_plain_username"] = fields["username"]
    if "password" in fields:
        config["sasl_plain_password"] = fields["password"]
    return config


def admin_client(args: argparse.Namespace, **overrides):
    """A KafkaAdminClient for ``--bootstrap-server`` plus ``--command-config``.

    ``overrides`` are kafka-python settings a tool's own options impose (they win).
    """

    props = properties_file(args.command_config)
    props["bootstrap.servers"] = require_bootstrap(args)
    config = client_config(props, KafkaAdminClient.DEFAULT_CONFIG)
    return new_client(KafkaAdminClient, {**config, **overrides})


def send(admin, request, node_id: int | None = None):
    """``request`` as built (its own version range) through an admin client's connections,
    to ``node_id`` or else any broker; the response.  For what kafka-python's admin methods
    do not offer or whose per-resource errors they drop.

    A node named by a newer answer (DescribeCluster's controller or brokers) may be missing
    from the client's bootstrap metadata, taken before the broker's first UpdateMetadata:
    the metadata is refreshed once then, as Kafka's admin client does for an unknown node."""
    manager = admin._manager
    if node_id is not None and manager.cluster.broker_metadata(node_id) is None:
        manager.run(manager.cluster.refresh_metadata)
    return manager.run(manager.send, request, node_id)


def new_client(factory, config: dict):
    """``factory(**config)`` (a kafka-python client) once a bootstrap server accepts a
    connection; CommandError with Kafka's words when none does (see module doc)."""
    check_reachable(config.get("bootstrap_servers", "localhost:9092"))
    return factory(**config)


def check_reachable(servers: str | list[str]) -> None:
    """Return when one of ``servers`` accepts a TCP connection, else raise CommandError."""
    if isinstance(servers, str):
        servers = [s.strip() for s in servers.split(",") if s.strip()]
    failures, resolved = [], False
    for node, server in enumerate(servers, start=1):
        host, _, port = server.rpartition(":")
        host = host.strip("[]")
        try:
            addresses = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
        except (socket.gaierror, ValueError, UnicodeError):
            continue
        resolved = True
        if any(_accepts(*found) for found in addresses):
            return
        address = addresses[0][4]
        shown = "" if host == address[0] else host
        failures.append(f"Connection to node -{node} ({shown}/{address[0]}:{address[1]}) "
                        f"could not be established. Node may not be available.")
    if not resolved:
        raise CommandError("No resolvable bootstrap urls given in bootstrap.servers")
    raise CommandError(" ".join(failures))


def _accepts(family, kind, proto, _canonname, address) -> bool:
    with socket.socket(family, kind, proto) as sock:
        sock.settimeout(_CONNECT_TIMEOUT_S)
        try:
            sock.connect(address)
        except OSError:
            return False
    return True


class TopicFilter:
    """Kafka's ``IncludeList`` topic filter.

    Commas become alternatives, spaces and surrounding quotes are dropped (property files
    may bring quotes), and the regex must match the whole topic name (Java ``matches``).
    """

    def __init__(self, raw: str) -> None:
        regex = raw.strip().replace(",", "|").replace(" ", "").strip("\"'")
        try:
            self._pattern = re.compile(regex)
        except re.error:
            raise UsageError(f"{regex} is an invalid regex.") from None

    def allows(self, topic: str) -> bool:
        return self._pattern.fullmatch(topic) is not None


def kafka_uuid(topic_id) -> str | None:
    """A topic id as Kafka prints it (URL-safe base64, no padding); None for none/zero."""
    if topic_id is None:
        return None
    value = topic_id if isinstance(topic_id, uuid.UUID) else uuid.UUID(str(topic_id))
    if value.int == 0:
        return None
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def error_text(code: int, message: str | None = None) -> str:
    """The broker's message for an error code, else Kafka's default description."""
    if message:
        return message
    return kafka.errors.for_code(code).description or kafka.errors.for_code(code).__name__


def failure_text(err: Exception) -> str:
    """An exception as one line: a broker error's message (not kafka-python's ``[Error n]``)."""
    if isinstance(err, kafka.errors.BrokerResponseError):
        return str(err.args[0]) if err.args else error_text(err.errno)
    return str(err)


def check_error(code: int, message: str | None = None) -> None:
    if code:
        raise CommandError(error_text(code, message))


def java_text(value) -> str:
    """A value as Java's string concatenation prints it (``null``, ``true``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- admin calls that retry like Kafka's admin client (delete-records, transactions) --------

# Kafka's admin client default.api.timeout.ms: how long a call retries a lookup (a topic
# that does not exist, a partition without a leader) before its TimeoutException.
API_TIMEOUT_PROPERTY = "default.api.timeout.ms"
_API_TIMEOUT_DEFAULT_MS = 60000


def admin_client_and_timeout(args: argparse.Namespace, **overrides):
    """``admin_client`` plus the ``default.api.timeout.ms`` of ``--command-config`` (ms),
    which kafka-python does not know (so it is taken out before the client sees it)."""

    props = properties_file(args.command_config)
    try:
        timeout_ms = int(props.pop(API_TIMEOUT_PROPERTY, _API_TIMEOUT_DEFAULT_MS))
    except ValueError:
        raise UsageError(f"Invalid value for configuration {API_TIMEOUT_PROPERTY}") from None
    props["bootstrap.servers"] = require_bootstrap(args)
    config = client_config(props, KafkaAdminClient.DEFAULT_CONFIG)
    return new_client(KafkaAdminClient, {**config, **overrides}), timeout_ms


def partition_leaders(admin, topics) -> dict[tuple[str, int], int]:
    """{(topic, partition): leader id} from one Metadata request, for partitions that exist
    and have a leader (what Kafka's PartitionLeaderStrategy maps; the rest it retries)."""
    metadata = admin._manager.run(admin._get_cluster_metadata, sorted(set(topics)))
    return {(t["name"], p["partition_index"]): p["leader_id"]
            for t in metadata.get("topics", ()) if not t["error_code"]
            for p in t["partitions"] if p["leader_id"] >= 0}


def call_timeout_text(call: str, api: str, started_ms: int, timeout_ms: int, tries: int,
                      now_ms: int) -> str:
    """The message of the TimeoutException Kafka's admin client gives a call that ran out
    of ``default.api.timeout.ms`` while retrying ``api`` (e.g. METADATA)."""
    deadline = started_ms + timeout_ms
    return (f"Call(callName={call}(api={api}), deadlineMs={deadline}, tries={tries}, "
            f"nextAllowedTryMs={now_ms + 100}) timed out at {now_ms} after {tries} attempt(s)")


# Java exception names where kafka-python's error class name does not give them by
# replacing "Error" with "Exception".
_JAVA_EXCEPTION_NAMES = {
    3: "UnknownTopicOrPartitionException", 6: "NotLeaderOrFollowerException",
    7: "TimeoutException", 29: "TopicAuthorizationException",
    31: "ClusterAuthorizationException", 44: "PolicyViolationException",
    61: "DelegationTokenDisabledException", 62: "DelegationTokenNotFoundException",
    63: "DelegationTokenOwnerMismatchException", 64: "UnsupportedByAuthenticationException",
    65: "DelegationTokenAuthorizationException", 66: "DelegationTokenExpiredException",
    67: "InvalidPrincipalTypeException",
}


# Kafka's Errors default messages (what ``error.exception()`` carries) where kafka-python's
# descriptions differ; the errors the admin tools meet.
_KAFKA_MESSAGES = {
    1: "The requested offset is not within the range of offsets maintained by the server.",
    3: "This server does not host this topic-partition.",
    6: "For requests intended only for the leader, this error indicates that the broker is "
       "not the current leader. For requests intended for any replica, this error indicates "
       "that the broker is not a replica of the topic partition.",
    15: "The coordinator is not available.", 16: "This is not the correct coordinator.",
    29: "Topic authorization failed.", 31: "Cluster authorization failed.",
    44: "Request parameters do not satisfy the configured policy.",
    47: "Producer attempted to produce with an old epoch.",
    56: "Disk error when trying to access log file on the disk.",
    61: "Delegation Token feature is not enabled.",
    62: "Delegation Token is not found on server.",
    63: "Specified Principal is not valid Owner/Renewer.",
    64: "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on "
        "delegation token authenticated channels.",
    65: "Delegation Token authorization failed.",
    66: "Delegation Token is expired.",
    67: "Supplied principalType is not supported.",
    105: "The transactionalId could not be found.",
}


def kafka_error_message(code: int) -> str:
    """Kafka's default message for an error code (``Errors.X.message()``)."""
    return _KAFKA_MESSAGES.get(code) or error_text(code)


def java_exception_name(code: int) -> str:
    """The Java exception class (``org.apache.kafka.common.errors.X``) of an error code."""
    error = kafka.errors.for_code(code)
    name = _JAVA_EXCEPTION_NAMES.get(code) or re.sub(r"Error$", "Exception", error.__name__)
    return f"org.apache.kafka.common.errors.{name}"


def java_exception_text(code: int, message: str | None = None) -> str:
    """An error code as Java's ``exception.toString()`` prints it:
    ``org.apache.kafka.common.errors.OffsetOutOfRangeException: <message>``."""
    return f"{java_exception_name(code)}: {message or kafka_error_message(code)}"
