"""README.md's factual claims about config keys, tools and limits, each checked by running it.

Job: the walkthrough (``test_readme_walkthrough``) runs the README's example commands; this
module checks what the prose says. Wherever practical the claim is read from README.md at
test time, so a sentence that stops being true fails a test here:
- every ``kafkapy-*`` name is a console script of pyproject.toml that runs (``--help``), and
  the "Command-line tools" table lists every console script;
- every config key the README names (backticked, ``--override``/``--config``/
  ``--add-config`` in its commands, ``properties`` blocks) is a broker, topic, group or
  client key, and a ``key=value`` parses as that key's value;
- "Broker configs at runtime": its commands, run against a broker process, change configs
  that read back at once, take effect (a new topic's default) and read back the same after a
  restart; the keys it says kafkapy refuses are refused, and log level changes pass only with
  ``validate_only``; the connection limit it says applies at once does;
- the client quotas said to be stored but not enforced are described and throttle nothing
  (the enforced byte rates: tests/integration/test_client_quotas.py);
- the APIs the README lists are exactly those ApiVersions advertises (read with
  ``kafkapy-broker-api-versions``), with Kafka 3.9's ranges or the ones the list names, and
  the versions it names are served; each "Not yet" item
  is really missing: its APIs (and versions) are not advertised, its ``key=value`` broker
  settings and SASL mechanisms stop start-up;
- the keys said to stop start-up do; the keys said to be accepted but unused are read by no
  module outside ``kafkapy/config`` and (those of ``broker_keys_accepted``) are documented as
  unused in DescribeConfigs, which sends that documentation; the keys said to be read are;
- the key and trust store types and the commands they need (PEM: none, PKCS12: openssl,
  JKS: keytool), with an empty ``PATH``;
- the Python version matches pyproject.toml and the Makefile, and ``make run`` with an older
  interpreter (a fake one reporting the version below) stops with one line and leaves no
  ``.venv``;
- ``kafkapy-pipeline`` without pyspark stops with one line and the exit code said; the perf
  tools say which client they use in one stderr line, as the README shows;
- the start-up and Docker figures quoted match ``bench/results`` (the working tree's file or
  the committed one).

Invariants: traffic only to 127.0.0.1; brokers are processes on free ports, or one broker in
this process (``kafkapy.testing``) where the test writes to its metadata store; bounded waits,
no timed assertions.
"""
from __future__ import annotations

import fnmatch
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import uuid
from pathlib import Path

import pytest

from kafkapy.cli.broker_api_versions import _KAFKA_39_APIS
from kafkapy.config.broker_keys_accepted import GROUPS as ACCEPTED_GROUPS
from kafkapy.config.definitions import BROKER_CONFIGS, BROKER_DYNAMIC_ONLY_CONFIGS, TOPIC_CONFIGS
from kafkapy.config.group_configs import GROUP_CONFIGS
from kafkapy.handlers import build_registry
from kafkapy.testing._broker import free_port
from tests.support.broker_process import SERVER_PROPERTIES, BrokerProcess
from tests.support.request_fields import fields
from tests.support.wire import WireClient
from tests.support.readme import logical_lines, section, sh_blocks

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
TOOL_TIMEOUT_S = 120.0
WAIT_S = 30.0

pytestmark = pytest.mark.timeout(600)


# ---------------------------------------------------------------- reading README.md

def readme() -> str:
    return README.read_text()


def flat(text: str) -> str:
    """Whitespace collapsed, so sentences can be matched across line breaks."""
    return " ".join(text.split())


def prose(text: str) -> str:
    """The text without its fenced blocks."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def backticked(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", prose(text))


def not_yet_items() -> list[str]:
    """The bullets of the "Not yet:" list, each flattened."""
    match = re.search(r"^Not yet:\n((?:(?:- |  ).*\n)+)", readme(), re.M)
    assert match, "README.md has no 'Not yet:' list of bullets"
    return [flat(item) for item in re.split(r"^- ", match.group(1), flags=re.M) if item.strip()]


def apis_bullet() -> str:
    match = re.search(r"^- \*\*APIs\*\*(.*?)(?=^- \*\*)", readme(), re.S | re.M)
    assert match, "README.md has no '**APIs**' bullet"
    return flat(match.group(1))


def clause(text: str, start: str, end: str) -> str:
    """The flattened text between ``start`` and the next ``end`` (both must be there)."""
    text = flat(text)
    assert start in text, f"README.md no longer says {start!r}"
    rest = text[text.index(start) + len(start):]
    assert end in rest, f"README.md no longer says {end!r} after {start!r}"
    return rest[:rest.index(end)]


def localize(command: str, port: int) -> str:
    """A README command against this test's broker, with this interpreter's console scripts."""
    command = re.sub(r"(?<=127\.0\.0\.1:)9092\b", str(port), command)
    return command.replace(".venv/bin/", f"{BIN}/")


# ---------------------------------------------------------------- running things

def run(args: list[str], env: dict | None = None, cwd: Path | None = None,
        timeout: float = TOOL_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=env, stdin=subprocess.DEVNULL)


def bash(script: str) -> subprocess.CompletedProcess:
    return run(["bash", "-euo", "pipefail", "-c", script], cwd=ROOT)


def tool(name: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run([str(BIN / name), *args], env=env)


def ok(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode == 0, (result.args, result.stdout, result.stderr)
    return result.stdout.splitlines()


def wait_for(condition, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout}s: {what}")
        time.sleep(0.1)


def blocked_modules(tmp_path: Path, *names: str) -> dict[str, str]:
    """An environment in which ``import <name>`` fails as for a package that is not
    installed (a package of that name that raises ModuleNotFoundError first on the path)."""
    root = tmp_path / ("blocked-" + "-".join(names))
    for name in names:
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{name}'\", name={name!r})\n")
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path)


def start_refused(tmp_path: Path, overrides: dict[str, str], env: dict | None = None,
                  timeout: float = 60.0) -> subprocess.CompletedProcess:
    """``python -m kafkapy config/server.properties --override ...``, expected to stop by
    itself (the test fails if it is still up after ``timeout``)."""
    log_dir = tmp_path / f"refused-{uuid.uuid4().hex[:8]}"
    port = free_port()
    settings = {"listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(log_dir),
                **overrides}
    cmd = [sys.executable, "-m", "kafkapy", str(SERVER_PROPERTIES)]
    for key, value in settings.items():
        cmd += ["--override", f"{key}={value}"]
    try:
        return run(cmd, env=env, cwd=ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the broker started (and ran {timeout}s) with {overrides}")


# ---------------------------------------------------------------- tools

def console_scripts() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project["scripts"]


def tool_table() -> list[str]:
    table = re.search(r"^\| tool \| what it does \|\n\|---\|---\|\n((?:\|.*\n)+)",
                      section("Command-line tools"), re.M)
    assert table, "the 'Command-line tools' section has no '| tool | what it does |' table"
    names = []
    for row in table.group(1).splitlines():
        first = row.split("|")[1]
        names += re.findall(r"`(kafkapy-[a-z0-9-]+)`", first)
    return names


def tools_named() -> set[str]:
    """Every ``kafkapy-x`` the README names as a tool: not an image (``kafkapy-base:...``), a
    file (``kafkapy-dashboard.json``) or an option (``--kafkapy-scope``)."""
    return set(re.findall(r"(?<![\w.-])kafkapy-[a-z0-9]+(?:-[a-z0-9]+)*(?![\w:-]|\.\w)",
                          readme()))


def test_every_tool_named_is_a_console_script_and_runs():
    scripts = console_scripts()
    named = tools_named()
    assert named - set(scripts) == set(), "README names tools that are no console scripts"
    for name in sorted(named):
        result = tool(name, "--help")     # some exit 1 after their help, as Kafka's do
        output = result.stdout + result.stderr
        assert result.returncode in (0, 1) and "usage" in output.lower(), (name, output[-2000:])
        assert "Traceback" not in output, (name, output[-2000:])


def test_the_tool_table_lists_every_console_script():
    table = tool_table()
    assert len(table) == len(set(table)), f"a tool listed twice: {table}"
    assert set(table) == set(console_scripts()), (
        f"missing from the table: {sorted(set(console_scripts()) - set(table))}; "
        f"not console scripts: {sorted(set(table) - set(console_scripts()))}")


# ---------------------------------------------------------------- config keys

KEY_TOKEN = re.compile(r"(?P<key>[a-z][a-z0-9]*(?:\.(?:[a-z0-9]+|<[a-z ]+>|\*))+\.?)"
                       r"(?:=(?P<value>.+))?")
SINGLE_KEY_TOKEN = re.compile(r"(?P<key>[a-z][a-z.]*)=(?P<value>.+)")
FILE_EXTENSIONS = {"properties", "py", "json", "yml", "yaml", "md", "sh", "java", "log", "jar",
                   "toml", "txt", "checkpoint"}
# Dotted names in backticks that are neither config keys nor files nor modules.
NOT_KEYS = {"os.sendfile", "partition.metadata", "docker.io"}


def _module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _key_match(token: str):
    """A dotted key (``a.b``, ``a.b=v``), or an undotted one given a value (``listeners=v``)
    when it is a defined key (``fresh=True`` is a Python argument)."""
    match = KEY_TOKEN.fullmatch(token)
    if match:
        return match
    match = SINGLE_KEY_TOKEN.fullmatch(token)
    return match if match and known_key(match.group("key")) else None


def mentioned_keys() -> list[tuple[str, str | None, str]]:
    """(key, value or None, where) for every config key the README names in its prose and
    its commands (``properties`` blocks: ``test_the_authorizer_settings_are_read``)."""
    text = readme()
    found = []
    for token in backticked(text):
        match = _key_match(token)
        if not match:
            continue
        key = match.group("key")
        if key.rsplit(".", 1)[-1] in FILE_EXTENSIONS or key in NOT_KEYS or _module(key):
            continue
        found.append((key, match.group("value"), f"`{token}`"))
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M):
        for line in logical_lines(block):
            for option, pairs in re.findall(r"--(override|config|add-config) ('[^']*'|\S+)",
                                            line):
                for pair in pairs.strip("'\"").split(","):
                    match = _key_match(pair)
                    if match:
                        found.append((match.group("key"), match.group("value"),
                                      f"--{option} {pair}"))
    return found


def known_key(name: str):
    return (BROKER_CONFIGS.get(name) or BROKER_DYNAMIC_ONLY_CONFIGS.get(name)
            or TOPIC_CONFIGS.get(name) or GROUP_CONFIGS.get(name))


def all_key_names() -> list[str]:
    return [k.name for defs in (BROKER_CONFIGS, BROKER_DYNAMIC_ONLY_CONFIGS, TOPIC_CONFIGS,
                                GROUP_CONFIGS)
            for k in defs]


def base_key(name: str) -> str:
    """``listener.name.<l>.<key>`` (and ``listener.name.<l>.<mechanism>.<key>``) -> ``<key>``."""
    match = re.fullmatch(r"listener\.name\.[^.]+\.(?:<mechanism>\.)?(.*)", name)
    return match.group(1) if match else name


def matching_keys(pattern: str) -> list[str]:
    """The defined keys a README key or pattern (``*``, a trailing ``.``) stands for."""
    base = base_key(pattern)
    if base in ("", "*"):
        return all_key_names() if pattern.startswith("listener.name.") else []
    if base.endswith("."):
        base += "*"
    if "*" in base:
        return [k for k in all_key_names() if fnmatch.fnmatchcase(k, base)]
    return [base] if known_key(base) else []


def client_key_known(name: str, value: str | None) -> bool:
    """A client setting librdkafka knows (the key and, when given, that value)."""
    from confluent_kafka import Consumer, KafkaException, Producer
    for factory, config in ((Producer, {}), (Consumer, {"group.id": "readme"})):
        try:
            factory({**config, name: value if value is not None else _any_value(name)})
            return True
        except KafkaException:
            continue
        except (TypeError, ValueError):
            return True     # the name is known; the placeholder value was not
    return False


def _any_value(name: str) -> str:
    return "1000" if name.endswith(".ms") else "classic"


def test_every_config_key_named_is_known():
    problems = []
    for key, value, where in mentioned_keys():
        keys = matching_keys(key)
        if not keys:
            if "*" in key or "<" in key or not client_key_known(key, value):
                problems.append(f"{where}: no broker, topic or client key {key!r}")
            continue
        if value is not None and len(keys) == 1 and "<" not in key:
            try:
                known_key(keys[0]).parse(value)
            except Exception as err:     # noqa: BLE001 -- any refusal is the finding
                problems.append(f"{where}: {value!r} is no value of {keys[0]}: {err}")
    assert not problems, "\n".join(problems)


# The AclAuthorizer's own settings, which Kafka reads outside KafkaConfig: what a running
# broker's authorizer makes of each.
AUTHORIZER_READS = {"super.users": lambda a: sorted(a.super_users),
                    "allow.everyone.if.no.acl.found": lambda a: a.allow_if_no_acls}


@pytest.mark.filterwarnings("ignore:kafkapy.testing. unknown broker setting")
async def test_the_authorizer_settings_are_read():
    """A broker starts with the README's ``properties`` block, and each of its keys is a
    broker key or one its authorizer took the value of."""
    from kafkapy.testing import broker
    (block,) = re.findall(r"^```properties\n(.*?)^```", readme(), re.S | re.M)
    settings = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
    async with broker(settings=settings) as b:
        authorizer = b.server.authorizer
        for key, value in settings.items():
            if known_key(key):
                assert b.server.config[key] == known_key(key).parse(value), key
                continue
            assert key in AUTHORIZER_READS, f"{key} is no broker key and the authorizer ignores it"
            expected = ([v.strip() for v in value.split(";")] if key == "super.users"
                        else value.strip().lower() == "true")
            assert AUTHORIZER_READS[key](authorizer) == expected, (key, value)


# ---------------------------------------------------------------- broker configs at runtime

def runtime_commands() -> tuple[list[str], list[str]]:
    (block,) = sh_blocks("Broker configs at runtime")
    lines = logical_lines(block)
    assignments = [line for line in lines if re.match(r"^[A-Za-z_]\w*=", line)]
    return assignments, [line for line in lines if line not in assignments]


def entity_args(command: str) -> str:
    return re.search(r"--entity-type brokers (--entity-default|--entity-name \S+)",
                     command).group(1)


def topic_synonym(broker_key_name: str) -> tuple[str, int] | None:
    for key in TOPIC_CONFIGS:
        for synonym in key.synonyms:
            if synonym.name == broker_key_name:
                return key.name, synonym.factor
    return None


def test_broker_configs_change_at_once_and_survive_a_restart(tmp_path):
    text = flat(section("Broker configs at runtime"))
    assert "every broker applies it at once, and it is still there after a restart" in text
    assignments, commands = runtime_commands()
    alters = [c for c in commands if "--alter" in c]
    describes = [c for c in commands if "--describe" in c]
    assert alters and describes and len(alters) + len(describes) == len(commands), commands
    broker = BrokerProcess(tmp_path / "logs").start()
    try:
        prefix = "\n".join(localize(a, broker.port) for a in assignments)

        def describe_all() -> dict[str, list[str]]:
            return {c: ok(bash(f"{prefix}\n{localize(c, broker.port)}")) for c in describes}

        expected: dict[str, list[str]] = {}
        for command in alters:
            lines = ok(bash(f"{prefix}\n{localize(command, broker.port)}"))
            assert lines and lines[0].startswith("Completed updating"), lines
            (pair,) = re.findall(r"--add-config (\S+)", command)
            expected.setdefault(entity_args(command), []).append(pair)
        before = describe_all()
        for command, lines in before.items():
            shown = [line.split()[0] for line in lines[1:]]
            assert sorted(shown) == sorted(expected[entity_args(command)]), (command, lines)
        # At once: a topic created now takes a changed topic default.
        for pairs in expected.values():
            for pair in pairs:
                key, value = pair.split("=", 1)
                synonym = topic_synonym(key)
                if synonym is None:
                    continue
                topic_key, factor = synonym
                topic = f"claims-{uuid.uuid4().hex[:8]}"
                ok(tool("kafkapy-topics", "--bootstrap-server", broker.bootstrap, "--create",
                        "--topic", topic))
                lines = ok(tool("kafkapy-configs", "--bootstrap-server", broker.bootstrap,
                                "--entity-type", "topics", "--entity-name", topic,
                                "--describe", "--all"))
                assert any(line.startswith(f"  {topic_key}={int(value) * factor} ")
                           for line in lines), (pair, lines)
        broker.restart()
        assert describe_all() == before
    finally:
        broker.kill()


@pytest.fixture
def own_broker(tmp_path):
    broker = BrokerProcess(tmp_path / "logs").start()
    yield broker
    broker.kill()


LISTENER_VALUES = {"listeners": "PLAINTEXT://127.0.0.1:{port}",
                   "advertised.listeners": "PLAINTEXT://127.0.0.1:{port}",
                   "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
                   "max.connections": "100", "max.connection.creation.rate": "100"}


def concrete(pattern: str) -> str:
    """A key the README pattern names, on the PLAINTEXT listener."""
    name = pattern.replace("<l>", "plaintext").replace("<name>", "plaintext")
    return name.replace("*", "max.connections")


def test_listener_keys_are_refused_at_runtime(own_broker):
    refused = clause(section("Broker configs at runtime"), "kafkapy also refuses the listener keys (",
                     ") and log level changes")
    patterns = re.findall(r"`([^`]+)`", refused)
    assert patterns, refused
    for pattern in patterns:
        key = concrete(pattern)
        value = LISTENER_VALUES[base_key(key)].format(port=own_broker.port)
        result = tool("kafkapy-configs", "--bootstrap-server", own_broker.bootstrap,
                      "--entity-type", "brokers", "--entity-name", "0", "--alter",
                      "--add-config", f"{key}={value}")
        assert result.returncode == 1, (key, result.stdout, result.stderr)
        assert "kafkapy cannot apply these configs dynamically" in result.stderr, result.stderr


def _set_log_level(bootstrap: str, validate_only: bool):
    client = WireClient(bootstrap)
    try:
        response = client.request(44, 0, **fields(44, resources=[
            {"resource_type": 8, "resource_name": "0", "configs": [
                {"name": "root", "config_operation": 0, "value": "DEBUG"}]}],
            validate_only=validate_only))
    finally:
        client.close()
    (result,) = response.responses
    return result.error_code, result.error_message


def test_log_level_changes_pass_only_with_validate_only(broker):
    text = flat(section("Broker configs at runtime"))
    assert "log level changes (BROKER_LOGGER: kafkapy's Python loggers, checked like Kafka's and " \
           "passing with `validate_only`)" in text
    assert _set_log_level(broker.bootstrap, validate_only=True) == (0, None)
    code, message = _set_log_level(broker.bootstrap, validate_only=False)
    assert code == 42 and "Log levels cannot be changed at runtime" in message, (code, message)


def test_a_connection_limit_applies_at_once(own_broker):
    """``max.connections.per.ip``, said to take effect at once, lowered to 1 with
    kafkapy-configs: a second connection from 127.0.0.1 is then closed by the broker."""
    at_once = clause(section("Broker configs at runtime"), "the connection limits (", ") take effect at once")
    assert "`max.connections.per.ip`" in at_once, at_once
    assert "Kafka's connection limits are enforced" in flat(readme())
    ok(tool("kafkapy-configs", "--bootstrap-server", own_broker.bootstrap, "--entity-type",
            "brokers", "--entity-name", "0", "--alter", "--add-config", "max.connections.per.ip=1"))

    def second_is_closed() -> bool:
        first = WireClient(own_broker.bootstrap)
        try:
            first.request(18, 0)          # answered: the first connection is within the limit
            second = WireClient(own_broker.bootstrap)
            try:
                return second.is_closed(timeout=5.0)
            finally:
                second.close()
        except (ConnectionError, OSError):
            return False                 # the tool's connection was still counted; again
        finally:
            first.close()

    wait_for(second_is_closed, "a second connection from 127.0.0.1 closed by the broker")


# ---------------------------------------------------------------- APIs

def advertised(bootstrap: str) -> dict[str, tuple[int, int]]:
    """{API name: (min, max)} as kafkapy-broker-api-versions prints the broker's answer; an
    API Kafka 3.9's table does not know, which the tool prints as UNKNOWN(key) as Kafka's
    does, by its schema's name."""
    lines = ok(tool("kafkapy-broker-api-versions", "--bootstrap-server", bootstrap))
    ranges = {}
    for line in lines:
        match = re.fullmatch(r"\t(\w+)\((\d+)\): (\d+)(?: to (\d+))?(?: \[.*\])?,?", line)
        if match:
            low = int(match.group(3))
            name = match.group(1)
            if name == "UNKNOWN":
                name = REGISTRY[int(match.group(2))].name
            ranges[name] = (low, int(match.group(4) or low))
    assert "ApiVersions" in ranges, lines
    return ranges


REGISTRY = build_registry()
# Kafka 3.9's names, and kafkapy's for the APIs Kafka 3.9 does not know
API_NAMES = ({name for name, *_ in _KAFKA_39_APIS.values()}
             | {spec.name for key, spec in REGISTRY.items() if key not in _KAFKA_39_APIS})
VERSIONED = re.compile(r"\b(?P<api>[A-Z][A-Za-z]+)\b(?: \(?v(?P<low>\d+)(?:(?P<plus>\+)|-(?P<high>\d+))?\)?)?")


def api_mentions(text: str) -> list[tuple[str, int | None, int | None]]:
    """(API, lowest, highest version named or None) for every API name in the text."""
    found = []
    for m in VERSIONED.finditer(text):
        if m.group("api") not in API_NAMES:
            continue
        low = int(m.group("low")) if m.group("low") else None
        high = None if m.group("plus") else (int(m.group("high")) if m.group("high") else low)
        found.append((m.group("api"), low, high))
    return found


def test_the_api_list_is_what_api_versions_advertises(broker):
    bullet = apis_bullet()
    assert "ApiVersions advertises exactly these, each with Kafka 3.9's version range" in bullet
    ranges = advertised(broker.bootstrap)
    listed = {api for api, _, _ in api_mentions(bullet)}
    assert listed == set(ranges), (f"listed, not advertised: {sorted(listed - set(ranges))}; "
                                   f"advertised, not listed: {sorted(set(ranges) - listed)}")
    # Kafka 3.9's range, but where the bullet names another (Kafka 4.x's)
    kafka_39 = {name: (low, high) for name, low, high, _ in _KAFKA_39_APIS.values()}
    named = {api: (low, high) for api, low, high in api_mentions(bullet) if low is not None}
    assert named, bullet
    assert {api: named.get(api, kafka_39.get(api)) for api in ranges} == ranges


def test_every_version_named_is_served(broker):
    ranges = advertised(broker.bootstrap)
    text = flat(prose(readme())).replace("**", "")
    text = text[:text.index("Not yet:")] + text[text.index("## Benchmarks"):]
    for api, low, high in api_mentions(text):
        if low is None:
            continue
        lo, hi = ranges[api]
        assert lo <= low and (high is None or high <= hi) and low <= hi, (api, low, high, ranges[api])


SASL_MECHANISMS = ("GSSAPI", "OAUTHBEARER", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def sasl_listener_start(tmp_path: Path, mechanism: str) -> subprocess.CompletedProcess:
    plain, sasl = free_port(), free_port()
    return start_refused(tmp_path, {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": mechanism,
        f"listener.name.sasl_plaintext.{mechanism.lower()}.sasl.jaas.config":
            "org.apache.kafka.common.security.plain.PlainLoginModule required;"})


def test_not_yet_items_are_really_missing(broker, tmp_path):
    ranges = advertised(broker.bootstrap)
    items = not_yet_items()
    assert len(items) >= 3, items
    for item in items:
        checks = 0
        for api, low, _ in api_mentions(item):
            checks += 1
            if low is None:
                assert api not in ranges, f"'Not yet' names {api}, advertised {ranges[api]}: {item}"
            else:
                assert api not in ranges or ranges[api][1] < low, (
                    f"'Not yet' names {api} v{low}, advertised {ranges[api]}: {item}")
        for key, value in re.findall(r"`([a-z][a-z0-9.]*)=([^`]+)`", item):
            if BROKER_CONFIGS.get(key) is None:
                continue                    # a client setting (group.protocol)
            checks += 1
            result = start_refused(tmp_path, {key: value})
            assert result.returncode == 1 and key in result.stderr + result.stdout, (
                item, result.stdout[-2000:], result.stderr[-2000:])
        for mechanism in re.findall(r"\b(" + "|".join(SASL_MECHANISMS) + r")\b", item):
            checks += 1
            result = sasl_listener_start(tmp_path, mechanism)
            assert result.returncode == 1, (item, result.stdout[-2000:], result.stderr[-2000:])
            assert f"SASL mechanism {mechanism}" in result.stderr + result.stdout, result.stderr
        assert checks, f"'Not yet' item with nothing this test can check: {item}"


# ---------------------------------------------------------------- keys accepted, read, refused

STOP_VALUES = {"process.roles": "broker", "controller.quorum.voters": "1@127.0.0.1:9999",
               "controller.quorum.bootstrap.servers": "127.0.0.1:9999",
               "controller.listener.names": "CONTROLLER",
               "authorizer.class.name": "org.example.OtherAuthorizer"}


def startup_paragraph() -> str:
    return clause(section("Starting like Kafka"), "DescribeConfigs lists every broker key",
                  "see \"Broker configs at runtime\".")


def code_mentions() -> str:
    """Every module of kafkapy outside kafkapy/config, as one text."""
    return "\n".join(p.read_text() for p in (ROOT / "kafkapy").rglob("*.py")
                     if "config" not in p.relative_to(ROOT / "kafkapy").parts[:1])


def accepted_keys() -> set[str]:
    return {row[0] for _, rows in ACCEPTED_GROUPS for row in rows}


def test_keys_said_to_stop_start_up_do(tmp_path):
    stops = clause(startup_paragraph(), "Others stop start-up with a message naming the key:",
                   "The TLS and SASL settings are served")
    tokens = re.findall(r"`([^`]+)`", stops)
    assert tokens, stops
    for token in tokens:
        key, _, value = token.partition("=")
        value = value or STOP_VALUES[key]
        result = start_refused(tmp_path, {key: value})
        assert result.returncode == 1 and key in result.stderr + result.stdout, (
            token, result.stdout[-2000:], result.stderr[-2000:])


def test_keys_said_to_be_unused_are_unused():
    unused = clause(startup_paragraph(), "DescribeConfigs says so", "Others stop start-up")
    # A key whose true value stops start-up is read (by that check), whatever family it is in.
    stopping = {t.partition("=")[0] for t in re.findall(r"`([^`]+)`", clause(
        startup_paragraph(), "Others stop start-up", "The TLS and SASL settings are served"))}
    code = code_mentions()
    accepted = accepted_keys()
    patterns = [t for t in re.findall(r"`([^`]+)`", unused)
                if KEY_TOKEN.fullmatch(t) and not t.endswith(".py")]
    assert len(patterns) >= 10, patterns
    for pattern in patterns:
        key = pattern.partition("=")[0]
        keys = [k for k in matching_keys(key)
                if k not in STOP_VALUES and k not in stopping]
        assert keys, pattern
        for name in keys:
            assert name not in code, f"{name} (README: accepted but unused) is read by kafkapy"
            if name in accepted:
                assert "unused" in BROKER_CONFIGS[name].doc, (name, BROKER_CONFIGS[name].doc)


def test_keys_said_to_be_read_are_read_and_documented_so():
    read = clause(startup_paragraph(), "the quota windows", "time the")
    keys = re.findall(r"`([a-z][a-z.]+)`", read)
    assert len(keys) >= 3, read
    code = code_mentions()
    for key in keys:
        for name in (key, key.replace(".num", ".size.seconds")):
            assert name in code, f"{name} (README: read by kafkapy) is not read"
            assert BROKER_CONFIGS[name].doc.split(": ", 1)[1].startswith("read by kafkapy"), (
                name, BROKER_CONFIGS[name].doc)
    # Every accepted key the code reads is documented as read, and the others as unused.
    for name in accepted_keys():
        doc = BROKER_CONFIGS[name].doc
        if name in code and name not in STOP_VALUES:
            assert "read by kafkapy" in doc, (name, doc)
        elif name not in code:
            assert "unused" in doc, (name, doc)


def test_describe_configs_sends_the_documentation(broker):
    names = sorted(k for k in accepted_keys() if not BROKER_CONFIGS[k].internal)
    client = WireClient(broker.bootstrap)
    try:
        response = client.request(32, 4, **fields(32, resources=[
            {"resource_type": 4, "resource_name": "0", "configuration_keys": names}],
            include_synonyms=False, include_documentation=True))
    finally:
        client.close()
    (result,) = response.results
    assert result.error_code == 0, result
    docs = {c.name: c.documentation for c in result.configs}
    assert docs == {name: BROKER_CONFIGS[name].doc for name in names}


# ---------------------------------------------------------------- key stores

def store_claims() -> dict[str, str | None]:
    """Store type -> the command the README says it needs (None: nothing)."""
    text = flat(section("Security"))
    pem = re.search(r"Key and trust stores in (\w+) \(.*?\) need nothing more", text)
    p12 = re.search(r"A (\w+) store is read with the `(\w+)` command", text)
    jks = re.search(r"a (\w+) store \([^)]*\) is first converted to \w+ with Java's `(\w+)`", text)
    assert pem and p12 and jks, text
    return {pem.group(1): None, p12.group(1): p12.group(2), jks.group(1): jks.group(2)}


def ssl_overrides(tmp_path: Path, store_type: str, location: Path) -> dict[str, str]:
    plain, tls = free_port(), free_port()
    return {"listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls}",
            "inter.broker.listener.name": "PLAINTEXT", "ssl.keystore.type": store_type,
            "ssl.keystore.location": str(location), "ssl.keystore.password": "secret"}


def test_key_stores_need_the_commands_said(tmp_path):
    """With an empty PATH (no openssl, no keytool, no java): a PKCS12 or JKS keystore stops
    start-up with a message naming the command it needs; a PEM one starts."""
    claims = store_claims()
    assert "no Java (only a JKS keystore needs Java's `keytool`" in flat(readme())
    empty = tmp_path / "empty-path"
    empty.mkdir()
    env = dict(os.environ, PATH=str(empty))
    dummy = tmp_path / "store.bin"
    dummy.write_bytes(b"not a store")
    for store_type, command in claims.items():
        if command is None:
            continue
        result = start_refused(tmp_path, ssl_overrides(tmp_path, store_type, dummy), env=env)
        assert result.returncode == 1, (store_type, result.stdout[-2000:], result.stderr[-2000:])
        assert f"{command}" in result.stdout + result.stderr, (store_type, result.stderr[-2000:])
    (pem_type,) = [t for t, c in claims.items() if c is None]
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl to make a PEM key pair for the PEM half")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    ok(run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
            "-days", "1", "-keyout", str(key), "-out", str(cert)]))
    pem = tmp_path / "keystore.pem"
    pem.write_text(key.read_text() + cert.read_text())
    overrides = ssl_overrides(tmp_path, pem_type, pem)
    tls_port = int(overrides["listeners"].rsplit(":", 1)[1])
    cmd = [sys.executable, "-m", "kafkapy", str(SERVER_PROPERTIES),
           "--override", f"log.dirs={tmp_path / 'pem-logs'}"]
    for k, v in overrides.items():
        cmd += ["--override", f"{k}={v}"]
    output = tmp_path / "pem-broker.out"
    with open(output, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        def tls_listening() -> bool:
            assert proc.poll() is None, output.read_text(errors="replace")[-2000:]
            try:
                with socket.create_connection(("127.0.0.1", tls_port), timeout=1.0):
                    return True
            except OSError:
                return False
        wait_for(tls_listening, "the PEM-keystore broker listening with an empty PATH")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------- Python and make

def test_the_python_version_is_the_same_everywhere():
    readme_versions = set(re.findall(r"Python ≥ (\d+\.\d+)", readme()))
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    makefile = re.search(r"^MIN_PYTHON := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert readme_versions == {requires.removeprefix(">=")} == {makefile.group(1)}, (
        readme_versions, requires, makefile)


FAKE_PYTHON = '''#!{real}
"""A Python {version} for the Makefile: -c probes see that version; -m venv makes a .venv
whose python is this script; pip refuses kafkapy as pip does for a too old Python."""
import os, shutil, sys
VERSION = ({major}, {minor}, 12, "final", 0)
args = sys.argv[1:]
if args[:1] == ["-c"]:
    sys.argv = ["-c", *args[2:]]
    sys.version_info = VERSION
    exec(compile(args[1], "<string>", "exec"), {{"__name__": "__main__"}})
elif args[:2] == ["-m", "venv"]:
    bin_dir = os.path.join(args[2], "bin")
    os.makedirs(bin_dir)
    shutil.copy(__file__, os.path.join(bin_dir, "python"))
    with open(os.path.join(bin_dir, "pip"), "w") as f:
        f.write('#!/bin/sh\\nexec "$(dirname "$0")/python" -m pip "$@"\\n')
    os.chmod(os.path.join(bin_dir, "pip"), 0o755)
elif args[:2] == ["-m", "pip"]:
    if "-e" in args:
        sys.exit("ERROR: Package 'kafkapy' requires a different Python: {major}.{minor}.12 not in '>={needed}'")
else:
    sys.exit("fake python: unexpected arguments %r" % (args,))
'''


def make_copy(tmp_path: Path) -> Path:
    """What the Makefile's venv rules read: itself and the files an install builds from."""
    copy = tmp_path / "repo"
    copy.mkdir()
    for name in ("Makefile", "pyproject.toml", "setup.py", "kafkapy/native/_batchcheck.c"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, copy / name)
    return copy


def fake_python(tmp_path: Path, needed: str, minor_delta: int) -> Path:
    major, minor = map(int, needed.split("."))
    script = tmp_path / f"python{major}.{minor + minor_delta}"
    script.write_text(FAKE_PYTHON.format(real=sys.executable, major=major, minor=minor + minor_delta,
                                         version=f"{major}.{minor + minor_delta}", needed=needed))
    script.chmod(0o755)
    return script


def make(copy: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return run(["make", "--no-print-directory", *args], cwd=copy, env=env)


def our_lines(stderr: str) -> list[str]:
    """stderr without make's own "make: *** [...] Error 1" line."""
    return [line for line in stderr.splitlines() if not line.startswith("make: ***")]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_run_with_an_older_python_says_so_and_leaves_no_venv(tmp_path):
    needed = re.search(r"Python ≥ (\d+\.\d+)", readme()).group(1)
    pick = re.search(r"`(make run PYTHON=\S+)`", readme()).group(1)
    copy = make_copy(tmp_path)
    old = fake_python(tmp_path, needed, -1)
    result = make(copy, "run", f"PYTHON={old}")
    assert result.returncode != 0
    lines = our_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    assert f"Python >= {needed}" in lines[0] and pick in lines[0], lines
    assert f"Python {needed.split('.')[0]}.{int(needed.split('.')[1]) - 1}" in lines[0], lines
    assert not (copy / ".venv").exists()
    # Not found at all: the same line, naming the interpreter given.
    result = make(copy, "run", "PYTHON=python-that-is-not-there")
    lines = our_lines(result.stderr)
    assert result.returncode != 0 and len(lines) == 1, result.stderr
    assert "python-that-is-not-there is not found" in lines[0] and pick in lines[0], lines
    assert not (copy / ".venv").exists()
    # The next make with a good Python makes a fresh .venv (a dry run shows the plan).
    plan = make(copy, "-n", "run", f"PYTHON={sys.executable}")
    assert plan.returncode == 0 and f"{sys.executable} -m venv .venv" in plan.stdout, plan.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_clean_deletes_what_the_readme_says(tmp_path):
    said = re.search(r"`make clean` deletes ((?:`[^`]+`|[\w ,])+?): the logs", flat(readme()))
    assert said, "README.md no longer says what `make clean` deletes"
    paths = [p.rstrip("/") for p in re.findall(r"`([^`]+)`", said.group(1))]
    assert "data" in paths and ".venv" in paths, paths
    plan = make(make_copy(tmp_path), "-n", "clean")
    (command,) = [line for line in plan.stdout.splitlines() if line.startswith("rm -rf ")]
    assert set(paths) <= set(command.split()[2:]), (paths, command)


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_a_venv_made_by_an_older_python_is_removed(tmp_path):
    needed = re.search(r"Python ≥ (\d+\.\d+)", readme()).group(1)
    copy = make_copy(tmp_path)
    old = fake_python(tmp_path, needed, -1)
    ok(run([str(old), "-m", "venv", str(copy / ".venv")]))
    result = make(copy, "run")
    assert result.returncode != 0
    lines = our_lines(result.stderr)
    assert len(lines) == 1 and f"Python >= {needed}" in lines[0], result.stderr
    assert not (copy / ".venv").exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_a_failed_venv_creation_leaves_no_venv(tmp_path):
    needed = re.search(r"Python ≥ (\d+\.\d+)", readme()).group(1)
    copy = make_copy(tmp_path)
    good = fake_python(tmp_path, needed, 0)
    # This interpreter passes the check, makes .venv, then pip fails in it.
    venv_python = good.read_text().replace('if "-e" in args:', 'if True:')
    good.write_text(venv_python)
    result = make(copy, "run", f"PYTHON={good}")
    assert result.returncode != 0, result.stdout + result.stderr
    assert not (copy / ".venv").exists(), result.stdout + result.stderr


# ---------------------------------------------------------------- the pipeline without pyspark

PIPELINE_ARGS = {"stream": ["--topics", "events"], "backfill": ["--topics", "events", "--out"],
                 "show": [], "send": ["--count", "1", "--topic", "{topic}"],
                 "show --from-topic": ["--output-topic", "{topic}"]}


def test_the_pipeline_without_pyspark_says_so_in_one_line(broker, tmp_path):
    text = flat(section("The PySpark pipeline"))
    stops = re.search(r"without it, ((?:`[\w -]+`(?:, | and )?)+) stop with one line naming "
                      r"the extra \(exit (\d+)\)", text)
    only = re.search(r"((?:`[\w -]+`(?: and )?)+) need only kafka-python", text)
    assert stops and only, text
    env = blocked_modules(tmp_path, "pyspark")
    for command in re.findall(r"`([\w -]+)`", stops.group(1)):
        args = list(PIPELINE_ARGS[command])
        if args and args[-1] == "--out":
            args.append(str(tmp_path / "out"))
        result = tool("kafkapy-pipeline", *command.split(), *args, env=env)
        assert result.returncode == int(stops.group(2)), (command, result.stderr)
        assert result.stdout == "" and len(result.stderr.splitlines()) == 1, (command, result.stderr)
        assert "Traceback" not in result.stderr and "'.[spark]'" in result.stderr, result.stderr
    topic = f"pipeline-{uuid.uuid4().hex[:8]}"
    for command in re.findall(r"`([\w -]+)`", only.group(1)):
        args = [a.format(topic=topic) for a in PIPELINE_ARGS[command]]
        result = tool("kafkapy-pipeline", *command.split(), "--bootstrap", broker.bootstrap,
                      *args, env=env)
        assert result.returncode == 0, (command, result.stdout, result.stderr)


# ---------------------------------------------------------------- the perf tools' client

def test_the_perf_tools_say_which_client_they_use(broker, tmp_path):
    row = next(r for r in section("Command-line tools").splitlines()
               if r.startswith("| `kafkapy-producer-perf-test`"))
    example = re.search(r'\("(using [^"]+)"\)', row).group(1)
    shape = re.escape(example)
    for version in re.findall(r"\d+(?:\.\d+)+", example):
        shape = shape.replace(re.escape(version), r"[\w.+-]+")
    assert "confluent-kafka when it is installed" in row and "else kafka-python" in row, row
    topic = f"perf-claims-{uuid.uuid4().hex[:8]}"
    clients = [("confluent-kafka", None), ("kafka-python", blocked_modules(tmp_path, "confluent_kafka"))]
    if importlib.util.find_spec("confluent_kafka") is None:
        clients = clients[1:]
    for client, env in clients:
        produced = tool("kafkapy-producer-perf-test", "--topic", topic, "--num-records", "100",
                        "--record-size", "10", "--throughput", "-1", "--producer-props",
                        f"bootstrap.servers={broker.bootstrap}", env=env)
        consumed = tool("kafkapy-consumer-perf-test", "--bootstrap-server", broker.bootstrap,
                        "--topic", topic, "--messages", "100", "--group", f"g-{client}", env=env)
        for result in (produced, consumed):
            assert result.returncode == 0, (client, result.stdout, result.stderr)
            (line,) = [x for x in result.stderr.splitlines() if x.startswith("using ")]
            assert line.startswith(f"using {client} "), (client, line)
            if client == "confluent-kafka":
                assert re.fullmatch(shape, line), (shape, line)
            assert "using " not in result.stdout
        assert produced.stdout.splitlines()[-1].startswith("100 records sent, "), produced.stdout


# ---------------------------------------------------------------- figures from bench/results

def result_texts(relative: str) -> list[str]:
    """The results file as in the working tree and as committed (a test run may have just
    rewritten the working tree's with new figures)."""
    texts = []
    path = ROOT / relative
    if path.is_file():
        texts.append(path.read_text())
    if (ROOT / ".git").exists():
        committed = run(["git", "show", f"HEAD:{relative}"], cwd=ROOT)
        if committed.returncode == 0:
            texts.append(committed.stdout)
    assert texts, f"no {relative}"
    return texts


def quoted(readme_figure: str, actual: float) -> bool:
    """``actual`` rounded as the README's figure is written equals it."""
    decimals = len(readme_figure.partition(".")[2])
    return round(actual, decimals) == float(readme_figure)


def _figure(text: str, label: str) -> float:
    match = re.search(r"^\| " + re.escape(label) + r" \| ([\d,.]+)", text, re.M)
    assert match, f"no '{label}' row"
    return float(match.group(1).replace(",", ""))


def _row(text: str, label: str, column: int) -> float:
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == label:
            return float(cells[column].replace(",", ""))
    raise AssertionError(f"no '{label}' row")


def test_docker_figures_match_the_results():
    text = flat(section("Docker"))
    m = re.search(r"(\d+) MB for `kafkapy:latest`, built in about (\d+) minutes; ZooKeeper \+ 3 "
                  r"brokers served their first acked record ([\d.]+) s after `up`, one broker "
                  r"([\d.]+) s", text)
    assert m, text
    size, minutes, cluster, single = m.groups()

    def matches(results: str) -> bool:
        return (quoted(size, _figure(results, "image size (kafkapy:latest)"))
                and quoted(minutes, _figure(results, "docker_base.sh (this run)") / 60)
                and quoted(cluster, _figure(results, "cluster start (compose up -> first acked "
                                                     "produce, ZK + 3 brokers)"))
                and quoted(single, _figure(results, "single node start (compose up -> first "
                                                    "acked produce)")))

    texts = result_texts("bench/results/docker-latest.md")
    assert any(matches(t) for t in texts), (m.groups(), texts[0])


def test_startup_figures_match_the_results():
    text = flat(section("Testing your code against a real broker"))
    m = re.search(r"A broker is ready about ([\d.]+) ms after you start it, and three brokers "
                  r"about ([\d.]+) ms after\. Apache Kafka 3\.9 needs about ([\d.]+) s on the "
                  r"same machine, plus ([\d.]+) s to format its storage", text)
    assert m, text
    one, three, kafka, fmt = m.groups()

    def matches(results: str) -> bool:
        return (quoted(one, _row(results, "kafkapy in-process, async, 1 broker", 2))
                and quoted(three, _row(results, "kafkapy in-process cluster, 3 brokers", 2))
                and quoted(kafka, _row(results, "Kafka 3.9 KRaft (combined), 1 node", 2) / 1000)
                and quoted(fmt, _row(results, "Kafka 3.9 KRaft (combined), 1 node", 7) / 1000))

    texts = result_texts("bench/results/startup-latest.md")
    assert any(matches(t) for t in texts), (m.groups(), texts[0])
