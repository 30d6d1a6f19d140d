"""``kafkapy-configs``: Kafka's ``bin/kafka-configs.sh`` (ConfigCommand) for topics, brokers,
groups, users' SCRAM credentials and client quotas (users, clients, ips).

Entities: ``--entity-type topics|brokers|groups`` with ``--entity-name X`` (or
``--entity-default`` for the cluster-wide broker defaults), or the shortcuts ``--topic X``,
``--broker N``, ``--broker-defaults``, ``--group G``.

- ``--describe``: "Dynamic configs for topic X are:" (``All configs`` with ``--all``;
  "Default configs for brokers in the cluster are:" for the defaults), then per config,
  sorted by name, ``  name=value sensitive=false synonyms={SOURCE:name=value, ...}``. Only
  configs whose source is the entity's own dynamic source are listed unless ``--all``.
  Without a name every topic, or every broker plus the defaults, is described. A topic or
  broker that does not exist: "The topic 'X' doesn't exist and doesn't have dynamic
  config." (exit 0, as in Kafka).
- ``--alter``: ``--add-config k1=v1,k2=[a,b]`` (brackets group values holding commas),
  ``--add-config-file FILE``, ``--delete-config k1,k2``; deleting a key that is not set
  dynamically fails with "Invalid config(s): k". A topic's changes go as one
  IncrementalAlterConfigs request (deletions first). A broker's (or the broker
  defaults') go as Kafka 3.9's ConfigCommand sends them: the entity's current dynamic
  configs, plus the added, minus the deleted, as one (non-incremental) AlterConfigs
  request; a current entry whose value is hidden (sensitive) must be given again, else
  "All sensitive broker config entries must be specified for --alter, missing entries:
  Set(k)". Success: "Completed updating config for topic X." / "... for broker N." (or
  "Completed updating default config for brokers in the cluster.").

Groups (``--entity-type groups --entity-name G`` or ``--group G``), as Kafka 4.x's
ConfigCommand: the GROUP config resource (type 32; a consumer group's ``consumer.*``, a share
group's ``share.*``, its dead-letter topic and redelivery backoff, see
``kafkapy.config.group_configs``).  A group need not exist to have settings.
- ``--describe``: DescribeConfigs, "Dynamic configs for group G are:", then the group's own
  settings (source DYNAMIC_GROUP_CONFIG) in the line format above (``--all``: every group
  config, the effective defaults as DEFAULT_CONFIG).  "The group 'G' doesn't exist and
  doesn't have dynamic config." only when neither ListGroups (any type, every broker) nor
  ListConfigResources (GROUP, Kafka 4.1+) names G; a broker that does not serve
  ListConfigResources (kafkapy, Kafka 3.9) or refuses it gets any name described, as from
  Kafka's tool.  Without a name: every group either list names, in the order of the Java
  HashSets Kafka's tool gathers them in.
- ``--alter``: as for a topic (IncrementalAlterConfigs, deletions first, each checked against
  the dynamic settings); the broker's refusal (an unknown key, a value out of bounds) is
  reported as an unexpected failure, with the broker's message; "Completed updating config
  for group G.".
- ``--entity-default``: "--entity-default must not be specified with --describe of groups",
  "An entity name must be specified with --alter of groups".

Users (``--entity-type users --entity-name U``, SCRAM credentials only, as ConfigCommand
with ``--bootstrap-server``): ``--add-config 'SCRAM-SHA-256=[iterations=8192,password=p]'``
(iterations default 4096) salts and hashes the password here and sends
AlterUserScramCredentials to the controller; ``--delete-config SCRAM-SHA-512`` removes
one; "Completed updating config for user U.".  ``--describe`` (one user, or all without a
name) prints "SCRAM credential configs for user-principal 'U' are
SCRAM-SHA-256=iterations=8192, ..." per user that has credentials, after the user's quotas.

Client quotas (``--entity-type users|clients|ips``, ``users`` then ``clients`` for a user's
client; ``--entity-name`` or ``--entity-default`` for each): ``--add-config
producer_byte_rate=1024`` / ``--delete-config`` / ``--describe``, as
``kafkapy.cli._quota_configs`` says (a users alter goes there when it names quota keys).

Usage errors and refused changes print their reason to stderr and exit 1; an unexpected
failure prints "Error while executing config command with args '...'" and the reason.

Differences from Kafka:
- Broker-loggers and client-metrics are not offered, nor ``--bootstrap-controller``, nor
  the ``--user``/``--client``/``--ip`` shortcuts.
- Requests go through kafka-python's connection manager (``KafkaAdminClient._manager``)
  rather than ``describe_configs``/``alter_configs``: kafka-python drops per-resource
  errors and cannot address the broker-defaults entity (an empty broker name).
- No Java stack trace is printed after "Error while executing config command".
"""
from __future__ import annotations

import argparse
import re
import sys
import time

from kafka.errors import ClusterAuthorizationFailedError, UnsupportedVersionError
from kafka.protocol.admin import (AlterConfigsRequest, AlterUserScramCredentialsRequest,
                                  DescribeConfigsRequest, DescribeUserScramCredentialsRequest,
                                  IncrementalAlterConfigsRequest)

from kafkapy.cli import _common as common
from kafkapy.cli import _quota_configs as quota_configs
from kafkapy.cli._common import UsageError
from kafkapy.jvm import hash_set_capacity, java_hash_order, string_hash
from kafkapy.security.sasl import credentials

TOPIC, BROKER, GROUP = 2, 4, 32
USER = "users"          # not a ConfigResource type: SCRAM credentials have their own APIs
_TYPES = {"topics": TOPIC, "brokers": BROKER, "users": USER, "groups": GROUP}
_PLURAL = {kind: name for name, kind in _TYPES.items()}
_SCRAM = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
_NOT_CONTROLLER = 41
_KAFKA_ONLY_TYPES = ("broker-loggers", "client-metrics")
QUOTAS = "quotas"       # clients, ips, or users with clients: client quota entities
_QUOTA_TYPES = ("clients", "ips")
# DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_GROUP_CONFIG
_DYNAMIC_SOURCE = {TOPIC: 1, BROKER: 2, GROUP: 8}
_DYNAMIC_DEFAULT_BROKER = 3                    # DYNAMIC_DEFAULT_BROKER_CONFIG
_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
            3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
            6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "DYNAMIC_CLIENT_METRICS_CONFIG",
            8: "DYNAMIC_GROUP_CONFIG"}
_SET, _DELETE = 0, 1
# Split at commas (and then at '=') that are not inside [...] (Kafka's ConfigCommand).
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return common.run(_execute, _parser(), argv, lambda message: _report(argv, message))


def _report(argv: list[str], message: str) -> None:
    print(f"Error while executing config command with args '{' '.join(argv)}'", file=sys.stderr)
    print(message, file=sys.stderr)


def _parser() -> common.ToolParser:
    parser = common.ToolParser("kafkapy-configs",
                               "Change or describe the configs of topics, brokers and groups.")
    parser.add_argument("--describe", action="store_true", help="list configs")
    parser.add_argument("--alter", action="store_true", help="change configs")
    parser.add_argument("--all", action="store_true", help="describe all configs, not only dynamic")
    parser.add_argument("--entity-type", action="append", dest="entity_types",
                        help="topics, brokers, groups (a consumer or share group's settings, "
                             "e.g. share.auto.offset.reset), users (SCRAM credentials and "
                             "quotas), clients or ips (quotas); users then clients for a "
                             "user's client's quotas")
    parser.add_argument("--entity-name", action="append", dest="entity_names",
                        help="topic name, broker id, group id, user, client id or ip")
    parser.add_argument("--entity-default", action="append_const", const="",
                        dest="entity_names",
                        help="the cluster-wide broker defaults, or the default user, client "
                             "id or ip")
    parser.add_argument("--topic", help="same as --entity-type topics --entity-name TOPIC")
    parser.add_argument("--broker", help="same as --entity-type brokers --entity-name ID")
    parser.add_argument("--broker-defaults", action="store_true",
                        help="same as --entity-type brokers --entity-default")
    parser.add_argument("--group", help="same as --entity-type groups --entity-name GROUP")
    parser.add_argument("--add-config", metavar="k1=v1,k2=[v1,v2]",
                        help="configs to add or update; a list value in square brackets")
    parser.add_argument("--add-config-file", metavar="FILE",
                        help="properties file of configs to add or update")
    parser.add_argument("--delete-config", action="append", default=[], metavar="k1,k2",
                        help="configs to remove (comma-separated, may be repeated)")
    return parser


def _execute(args: argparse.Namespace) -> None:
    kind, name = _entity(args)
    _check_args(args, kind, name)
    admin = common.admin_client(args)
    try:
        if kind == QUOTAS:
            _quotas(admin, name, args)
        elif kind == USER:
            _users(admin, name, args)
        elif args.alter:
            _alter(admin, kind, name, args)
        else:
            _describe(admin, kind, name, args.all)
    finally:
        admin.close()


def _entity(args: argparse.Namespace) -> tuple[int | None, str | None]:
    """(resource type, name); name "" is the broker defaults, None means every entity."""
    if args.topic is not None:
        return TOPIC, args.topic
    if args.broker is not None:
        return BROKER, args.broker
    if args.broker_defaults:
        return BROKER, ""
    if args.group is not None:
        return GROUP, args.group
    types, names = args.entity_types or [], args.entity_names or []
    if not types:
        return None, None
    for entity_type in types:
        if entity_type in _KAFKA_ONLY_TYPES:
            raise UsageError(f"kafkapy-configs does not support --entity-type {entity_type}; "
                             f"it handles topics, brokers, groups, users, clients and ips")
        if entity_type not in _TYPES and entity_type not in _QUOTA_TYPES:
            raise UsageError(f"Invalid entity type {entity_type}, the entity type must be one "
                             "of topics, brokers, users, groups, clients, ips")
    if len(types) > 1 and sorted(types) != ["clients", "users"]:
        raise UsageError("Only 'users' and 'clients' entity types can be specified together")
    if len(names) > len(types):
        raise UsageError("More entity names specified than entity types")
    if len(types) > 1 or types[0] in _QUOTA_TYPES:
        return QUOTAS, (types, names)
    return _TYPES[types[0]], names[0] if names else None


def _check_args(args: argparse.Namespace, kind: int | None, name: str | None) -> None:
    if args.describe == args.alter:
        raise UsageError("Command must include exactly one action: --describe, --alter")
    common.require_bootstrap(args)
    if kind is None:
        raise UsageError("At least one entity type must be specified")
    if kind == QUOTAS:
        types, names = name
        if args.alter and len(names) < len(types):
            raise UsageError("An entity-name or default entity must be specified with --alter "
                             "of users, clients, brokers or ips")
        if args.alter and not (args.add_config or args.add_config_file or args.delete_config):
            raise UsageError("At least one of --add-config, --add-config-file, or "
                             "--delete-config must be specified with --alter")
        return
    if kind == TOPIC and name == "":
        raise UsageError("--entity-default is not supported for topics")
    if kind == GROUP and name == "":
        raise UsageError("--entity-default must not be specified with --describe of groups"
                         if args.describe else
                         "An entity name must be specified with --alter of groups")
    if (kind == USER and name == "" and args.alter
            and not quota_configs.is_quota_alter(["users"], *_changes(args))):
        raise UsageError("The use of --entity-default or --user-defaults is not allowed with "
                         "User SCRAM Credentials using --bootstrap-server.")
    if kind == BROKER and name:
        _check_broker_id(name)
    if args.alter:
        if name is None and kind in (TOPIC, GROUP):
            raise UsageError(f"An entity name must be specified with --alter of {_PLURAL[kind]}")
        if name is None:
            raise UsageError("An entity-name or default entity must be specified with --alter "
                             "of users, clients, brokers or ips")
        if not (args.add_config or args.add_config_file or args.delete_config):
            raise UsageError("At least one of --add-config, --add-config-file, or "
                             "--delete-config must be specified with --alter")
    elif args.add_config or args.add_config_file or args.delete_config:
        raise UsageError("--add-config, --add-config-file and --delete-config only go with --alter")


def _check_broker_id(name: str) -> None:
    if not re.fullmatch(r"-?\d+", name):
        raise UsageError(f"The entity name for brokers must be a valid integer broker id, "
                         f"found: {name}")


def _check_topic_name(name: str) -> None:
    if name in ("", ".", ".."):
        raise UsageError("Topic name is illegal, it can't be empty, '.' or '..'")
    if len(name) > 249:
        raise UsageError("Topic name is illegal, it can't be longer than 249 characters, "
                         f"topic name: {name}")
    if not _LEGAL_TOPIC.fullmatch(name):
        raise UsageError(f"Topic name \"{name}\" is illegal, it contains a character other "
                         "than ASCII alphanumerics, '.', '_' and '-'")


# --describe ---------------------------------------------------------------

def _describe(admin, kind: int, name: str | None, describe_all: bool) -> None:
    if name and not describe_all and not _exists(admin, kind, name):
        print(f"The {_singular(kind)} '{name}' doesn't exist and doesn't have dynamic config.")
        return
    for entity in [name] if name is not None else _all_entities(admin, kind):
        _print_entity(admin, kind, entity, describe_all)


def _exists(admin, kind: int, name: str) -> bool:
    if kind == TOPIC:
        _check_topic_name(name)
        return name in admin.list_topics()
    if kind == GROUP:
        # Kafka's rule: unknown only when neither list names it, a missing list naming all.
        resources = _group_config_resources(admin)
        return (name in _listed_group_ids(admin)
                or resources is None or name in resources)
    return int(name) in _broker_ids(admin)


def _broker_ids(admin) -> list[int]:
    return [b["broker_id"] for b in admin.describe_cluster()["brokers"]]


def _all_entities(admin, kind: int) -> list[str]:
    if kind == TOPIC:
        return sorted(admin.list_topics())
    if kind == GROUP:
        return _group_ids(admin)
    return [str(b) for b in sorted(_broker_ids(admin))] + [""]


def _group_ids(admin) -> list[str]:
    """Every group ListGroups names (any type, every broker) and every GROUP config resource,
    in Kafka's tool's order: each list gathered into a HashSet, the groups' copied into a new
    HashSet, the resources added, that set iterated."""
    listed = _listed_group_ids(admin)
    resources = java_hash_order(_group_config_resources(admin) or [], string_hash)
    return java_hash_order(listed + [r for r in resources if r not in listed], string_hash,
                           hash_set_capacity(len(listed)))


def _listed_group_ids(admin) -> list[str]:
    return java_hash_order([g["group_id"] for g in admin.list_groups()], string_hash)


def _group_config_resources(admin) -> list[str] | None:
    """The groups with settings (ListConfigResources, Kafka 4.1+); None when the broker does
    not serve it (kafkapy, older Kafka) or refuses it, as Kafka's tool treats both."""
    try:
        listed = admin.list_config_resources(["GROUP"])
    except (UnsupportedVersionError, ClusterAuthorizationFailedError):
        return None
    return listed.get("group", [])


def _singular(kind: int) -> str:
    return _PLURAL[kind][:-1]


def _print_entity(admin, kind: int, name: str, describe_all: bool) -> None:
    if kind == BROKER and name == "":
        print("Default configs for brokers in the cluster are:")
    else:
        print(f"{'All' if describe_all else 'Dynamic'} configs for {_singular(kind)} {name} are:")
    for entry in _entries(admin, kind, name, describe_all, synonyms=True):
        synonyms = ", ".join(f"{_SOURCES.get(s.source, s.source)}:{s.name}="
                             f"{common.java_text(s.value)}" for s in entry.synonyms)
        print(f"  {entry.name}={common.java_text(entry.value)} "
              f"sensitive={common.java_text(entry.is_sensitive)} synonyms={{{synonyms}}}")


def _entries(admin, kind: int, name: str, describe_all: bool, synonyms: bool) -> list:
    """The entity's configs, sorted by name; only its dynamic ones unless ``describe_all``."""
    request = DescribeConfigsRequest(resources=[(kind, name, None)], include_synonyms=synonyms,
                                     min_version=1)
    result = _send(admin, request, kind, name).results[0]
    common.check_error(result.error_code, result.error_message)
    source = _dynamic_source(kind, name)
    return sorted((e for e in result.configs if describe_all or e.config_source == source),
                  key=lambda e: e.name)


def _dynamic_source(kind: int, name: str) -> int:
    return _DYNAMIC_DEFAULT_BROKER if kind == BROKER and name == "" else _DYNAMIC_SOURCE[kind]


def _send(admin, request, kind: int, name: str):
    # A broker's own configs must be asked of that broker; anything else of any broker.
    node_id = int(name) if kind == BROKER and name else None
    return common.send(admin, request, node_id)


# --alter ------------------------------------------------------------------

def _alter(admin, kind: int, name: str, args: argparse.Namespace) -> None:
    if kind == TOPIC:
        _check_topic_name(name)
    added, deleted = _changes(args)
    for key in added:
        if not re.fullmatch(r"[$a-zA-Z0-9._-]*", key):
            raise UsageError(f"Invalid character found for config key: {key}")
    entries = _entries(admin, kind, name, False, synonyms=False)
    current = {e.name for e in entries}
    unknown = [k for k in deleted if k not in current]
    if unknown:
        raise UsageError(f"Invalid config(s): {','.join(unknown)}")
    if kind == BROKER:
        request = _broker_alter_request(entries, added, deleted, name)
    else:
        changes = [(k, _DELETE, None) for k in deleted] + [(k, _SET, v) for k, v in added.items()]
        request = IncrementalAlterConfigsRequest(resources=[(kind, name, changes)],
                                                 validate_only=False)
    result = _send(admin, request, kind, name).responses[0]
    common.check_error(result.error_code, result.error_message)
    if name:
        print(f"Completed updating config for {_singular(kind)} {name}.")
    else:
        print("Completed updating default config for brokers in the cluster.")


def _broker_alter_request(entries: list, added: dict[str, str], deleted: list[str], name: str):
    """ConfigCommand's broker path: the whole new dynamic layer in one AlterConfigs."""
    merged = {e.name: e.value for e in entries}
    merged.update(added)
    for key in deleted:
        merged.pop(key, None)
    hidden = [k for k, v in merged.items() if v is None]
    if hidden:
        raise UsageError("All sensitive broker config entries must be specified for --alter, "
                         f"missing entries: Set({', '.join(hidden)})")
    return AlterConfigsRequest(resources=[(BROKER, name, list(merged.items()))],
                               validate_only=False)


# users: SCRAM credentials ---------------------------------------------------

def _quotas(admin, entity: tuple[list, list], args: argparse.Namespace) -> None:
    types, names = entity
    if args.alter:
        quota_configs.alter(admin, types, names, *_changes(args))
    else:
        quota_configs.describe(admin, types, names)


def _changes(args: argparse.Namespace) -> tuple[dict[str, str], list[str]]:
    """--add-config-file and --add-config (the latter winning), and --delete-config."""
    added = {**common.properties_file(args.add_config_file), **_added(args.add_config)}
    deleted = [k.strip() for item in args.delete_config for k in item.split(",") if k.strip()]
    return added, deleted


def _users(admin, name: str | None, args: argparse.Namespace) -> None:
    if args.alter:
        added, deleted = _changes(args)
        if quota_configs.is_quota_alter(["users"], added, deleted):
            quota_configs.alter(admin, ["users"], [name], added, deleted)
        else:
            _alter_user(admin, name, added, deleted)
        return
    quota_configs.describe(admin, ["users"], [name])
    if name != "":        # --entity-default: Kafka's tool describes no SCRAM credentials
        _describe_users(admin, name)


def _describe_users(admin, name: str | None) -> None:
    request = DescribeUserScramCredentialsRequest(
        users=None if name is None else [(name,)], min_version=0, max_version=0)
    answer = common.send(admin, request)
    common.check_error(answer.error_code, answer.error_message)
    names = {code: mech for mech, code in _SCRAM.items()}
    for result in answer.results:
        if result.error_code == 91:        # RESOURCE_NOT_FOUND: Kafka's tool lists nothing
            continue
        if result.error_code:
            print(f"Error retrieving SCRAM credential configs for user-principal "
                  f"'{result.user}': {common.error_text(result.error_code, result.error_message)}")
            continue
        text = ", ".join(f"{names.get(i.mechanism, i.mechanism)}=iterations={i.iterations}"
                         for i in result.credential_infos)
        print(f"SCRAM credential configs for user-principal '{result.user}' are {text}")


def _alter_user(admin, name: str, added: dict[str, str], deleted: list[str]) -> None:
    unknown_added = [k for k in added if k not in _SCRAM]
    if unknown_added:
        raise UsageError("Only quota and SCRAM credential configs can be added for 'users' "
                         "using --bootstrap-server. Unexpected config names: "
                         f"Set({', '.join(unknown_added)})")
    unknown_deleted = [k for k in deleted if k not in _SCRAM]
    if unknown_deleted:
        raise UsageError("Only quota and SCRAM credential configs can be deleted for 'users' "
                         "using --bootstrap-server. Unexpected config names: "
                         f"List({', '.join(unknown_deleted)})")
    upsertions = [_upsertion(name, mechanism, value) for mechanism, value in added.items()]
    deletions = [(name, _SCRAM[mechanism]) for mechanism in deleted]
    request = AlterUserScramCredentialsRequest(deletions=deletions, upsertions=upsertions,
                                               min_version=0, max_version=0)
    answer = _to_controller(admin, request)
    for result in answer.results:
        common.check_error(result.error_code, result.error_message)
    print(f"Completed updating config for user {name}.")


def _to_controller(admin, request, attempts: int = 60):
    """Send to the active controller; NOT_CONTROLLER (a controller moving or not yet
    elected) is retried after a fresh look, as Kafka's admin client retries it."""

    for _ in range(attempts):
        controller = admin.describe_cluster().get("controller_id")
        node = controller if isinstance(controller, int) and controller >= 0 else None
        answer = common.send(admin, request, node)
        if not any(r.error_code == _NOT_CONTROLLER for r in answer.results):
            return answer
        time.sleep(0.5)
    return answer


def _upsertion(name: str, mechanism: str, value: str) -> tuple:
    """ConfigCommand's iterationsAndPasswordBytes, then the Java admin client's salting."""
    match = re.fullmatch(r"(?:iterations=(-?[0-9]*),)?password=(.*)", value, re.DOTALL)
    if match is None:
        raise UsageError(f"Invalid credential property {mechanism.replace('-', '_')}={value}")
    text = match.group(1)
    iterations = int(text) if text not in (None, "", "-1") else 4096
    if iterations < credentials.MIN_ITERATIONS:
        raise UsageError(f"Iterations {iterations} is less than the minimum "
                         f"{credentials.MIN_ITERATIONS} required for {mechanism}")
    salt = credentials.random_string().encode("ascii")
    salted = credentials.salted_password(mechanism, match.group(2), salt, iterations)
    return (name, _SCRAM[mechanism], iterations, salt, salted)


def _added(text: str | None) -> dict[str, str]:
    """``k1=v1,k2=[a,b]`` -> {k1: v1, k2: "a,b"} (Kafka's parseConfigsToBeAdded)."""
    if not text:
        return {}
    added = {}
    items = re.split("," + _OUTSIDE_BRACKETS, text)
    while items and items[-1] == "":  # Java's String.split drops trailing empty parts
        items.pop()
    for item in items:
        pair = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, item)
        if len(pair) != 2:
            raise UsageError('Invalid entity config: all configs to be added must be in the '
                             'format "key=val" or  "key=[val1,val2]" to group values which '
                             'contain commas.')
        added[pair[0].strip()] = re.sub(r"[\[\]]", "", pair[1]).strip()
    return added


if __name__ == "__main__":
    sys.exit(main())
