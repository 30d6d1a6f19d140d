"""Kafka's ACL model: resource types, operations, pattern and permission types, bindings
and filters, and the znode bytes Kafka's ZooKeeper-mode AclAuthorizer writes.

Codes are Kafka's wire codes (org.apache.kafka.common.acl / resource).  Znodes (Kafka
3.9's ZkData, captured from kafka-acls.sh against a real ZooKeeper):

* literal patterns: ``/kafka-acl/<Type>/<name>``; prefixed:
  ``/kafka-acl-extended/prefixed/<Type>/<name>`` (``<Type>`` is ``Topic``, ``Group``,
  ``Cluster``, ``TransactionalId``, ``DelegationToken``, ``User``);
  data ``{"acls":[{"principal":"User:a","permissionType":"Allow","host":"*",
  "operation":"Read"},...],"version":1}`` (Jackson over a java.util.HashMap: that key
  order; entries in insertion order, as Kafka's small Scala sets keep them);
* change notifications, sequential ``acl_changes_NNNNNNNNNN``: literal under
  ``/kafka-acl-changes`` with data ``TOPIC:foo`` (the enum name), others under
  ``/kafka-acl-extended-changes`` with data
  ``{"version":1,"resourceType":"TOPIC","name":"pre","patternType":"PREFIXED"}``.

Invariants: a binding is immutable and hashable; ``encode_acls(decode_acls(b)) == b``
for bytes Kafka wrote.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from kafkapy.metadata import paths

# -- codes ---------------------------------------------------------------------------
# Resource types.
R_UNKNOWN, R_ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = range(8)
# Operations.
(OP_UNKNOWN, OP_ANY, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION,
 DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS) = range(15)
# Pattern types.
P_UNKNOWN, P_ANY, P_MATCH, LITERAL, PREFIXED = range(5)
# Permission types.
PERM_UNKNOWN, PERM_ANY, DENY, ALLOW = range(4)

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"

RESOURCE_ENUM = {R_UNKNOWN: "UNKNOWN", R_ANY: "ANY", TOPIC: "TOPIC", GROUP: "GROUP",
                 CLUSTER: "CLUSTER", TRANSACTIONAL_ID: "TRANSACTIONAL_ID",
                 DELEGATION_TOKEN: "DELEGATION_TOKEN", USER: "USER"}
# The path form (SecurityUtils.resourceTypeName).
RESOURCE_ZK = {TOPIC: "Topic", GROUP: "Group", CLUSTER: "Cluster", TRANSACTIONAL_ID: "TransactionalId",
               DELEGATION_TOKEN: "DelegationToken", USER: "User"}
OPERATION_ENUM = {OP_UNKNOWN: "UNKNOWN", OP_ANY: "ANY", ALL: "ALL", READ: "READ", WRITE: "WRITE",
                  CREATE: "CREATE", DELETE: "DELETE", ALTER: "ALTER", DESCRIBE: "DESCRIBE",
                  CLUSTER_ACTION: "CLUSTER_ACTION", DESCRIBE_CONFIGS: "DESCRIBE_CONFIGS",
                  ALTER_CONFIGS: "ALTER_CONFIGS", IDEMPOTENT_WRITE: "IDEMPOTENT_WRITE",
                  CREATE_TOKENS: "CREATE_TOKENS", DESCRIBE_TOKENS: "DESCRIBE_TOKENS"}
PATTERN_ENUM = {P_UNKNOWN: "UNKNOWN", P_ANY: "ANY", P_MATCH: "MATCH", LITERAL: "LITERAL", PREFIXED: "PREFIXED"}
PERMISSION_ENUM = {PERM_UNKNOWN: "UNKNOWN", PERM_ANY: "ANY", DENY: "DENY", ALLOW: "ALLOW"}


def camel(enum_name: str) -> str:
    """READ -> Read, DESCRIBE_CONFIGS -> DescribeConfigs (Kafka's SecurityUtils names)."""
    return "".join(part.capitalize() for part in enum_name.split("_"))


def parse_enum(table: dict[int, str], text: str) -> int:
    """Kafka's fromString: case-insensitive, underscores optional (``DescribeConfigs``)."""
    key = text.replace("_", "").upper()
    for code, name in table.items():
        if name.replace("_", "") == key:
            return code
    return 0  # UNKNOWN


# What each resource type supports (AclEntry.supportedOperations); ALL goes anywhere.
SUPPORTED_OPERATIONS = {
    TOPIC: frozenset({READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS}),
    GROUP: frozenset({READ, DESCRIBE, DELETE}),
    CLUSTER: frozenset({CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE,
                        ALTER, DESCRIBE}),
    TRANSACTIONAL_ID: frozenset({DESCRIBE, WRITE}),
    DELEGATION_TOKEN: frozenset({DESCRIBE}),
    USER: frozenset({CREATE_TOKENS, DESCRIBE_TOKENS}),
}


@dataclass(frozen=True, slots=True)
class AclEntry:
    """An access control entry: who, from where, what, allow or deny."""
    principal: str
    host: str
    operation: int
    permission: int


@dataclass(frozen=True, slots=True)
class Pattern:
    resource_type: int
    name: str
    pattern_type: int


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: Pattern
    entry: AclEntry

    def is_unknown(self) -> bool:
        return (self.pattern.resource_type == R_UNKNOWN or self.pattern.pattern_type == P_UNKNOWN
                or self.entry.operation == OP_UNKNOWN or self.entry.permission == PERM_UNKNOWN)


@dataclass(frozen=True, slots=True)
class AclFilter:
    """AclBindingFilter: None / ANY match everything in their field; pattern type MATCH
    matches every pattern that would apply to the named resource."""
    resource_type: int
    name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches_pattern(self, p: Pattern) -> bool:
        if self.resource_type != R_ANY and self.resource_type != p.resource_type:
            return False
        if self.pattern_type in (P_ANY, P_MATCH) and self.name is None:
            return True
        if self.pattern_type == P_MATCH:
            if p.pattern_type == LITERAL:
                return p.name == self.name or p.name == WILDCARD
            if p.pattern_type == PREFIXED:
                return self.name.startswith(p.name)
            return False
        if self.pattern_type != P_ANY and self.pattern_type != p.pattern_type:
            return False
        return self.name is None or self.name == p.name

    def matches_entry(self, e: AclEntry) -> bool:
        return ((self.principal is None or self.principal == e.principal)
                and (self.host is None or self.host == e.host)
                and (self.operation == OP_ANY or self.operation == e.operation)
                and (self.permission == PERM_ANY or self.permission == e.permission))

    def matches_at_most_one(self) -> bool:
        """A filter naming one exact pattern (Kafka's ResourcePatternFilter.matchesAtMostOne)."""
        return (self.resource_type not in (R_ANY, R_UNKNOWN) and self.name is not None
                and self.pattern_type in (LITERAL, PREFIXED))


# -- znodes --------------------------------------------------------------------------
ACL_ROOT = paths.KAFKA_ACL
EXTENDED_ROOT = paths.KAFKA_ACL_EXTENDED
LITERAL_CHANGES = paths.KAFKA_ACL_CHANGES
EXTENDED_CHANGES = paths.KAFKA_ACL_EXTENDED_CHANGES
CHANGE_PREFIX = "acl_changes_"


def store_root(pattern_type: int) -> str:
    return ACL_ROOT if pattern_type == LITERAL else f"{EXTENDED_ROOT}/{PATTERN_ENUM[pattern_type].lower()}"


def type_path(pattern_type: int, resource_type: int) -> str:
    return f"{store_root(pattern_type)}/{RESOURCE_ZK[resource_type]}"


def resource_path(p: Pattern) -> str:
    return f"{type_path(p.pattern_type, p.resource_type)}/{p.name}"


def all_type_paths() -> list[str]:
    """Every ``<store>/<Type>`` node Kafka creates at authorizer start-up (createAclPaths)."""
    return [type_path(pt, rt) for pt in (LITERAL, PREFIXED) for rt in RESOURCE_ZK]


def encode_acls(entries) -> bytes:
    acls = [{"principal": e.principal, "permissionType": camel(PERMISSION_ENUM[e.permission]),
             "host": e.host, "operation": camel(OPERATION_ENUM[e.operation])} for e in entries]
    return json.dumps({"acls": acls, "version": 1}, separators=(",", ":"), ensure_ascii=False).encode()


def decode_acls(data: bytes | None) -> list[AclEntry]:
    if not data:
        return []
    doc = json.loads(data)
    return [AclEntry(a["principal"], a["host"], parse_enum(OPERATION_ENUM, a["operation"]),
                     parse_enum(PERMISSION_ENUM, a["permissionType"]))
            for a in doc.get("acls", [])]


def change_path(pattern_type: int) -> str:
    return LITERAL_CHANGES if pattern_type == LITERAL else EXTENDED_CHANGES


def encode_change(p: Pattern) -> bytes:
    if p.pattern_type == LITERAL:
        return f"{RESOURCE_ENUM[p.resource_type]}:{p.name}".encode()
    return json.dumps({"version": 1, "resourceType": RESOURCE_ENUM[p.resource_type], "name": p.name,
                       "patternType": PATTERN_ENUM[p.pattern_type]},
                      separators=(",", ":"), ensure_ascii=False).encode()


def decode_change(root: str, data: bytes) -> Pattern:
    text = data.decode()
    if root == LITERAL_CHANGES:
        kind, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected a string in format ResourceType:ResourceName but got {text}")
        return Pattern(parse_enum(RESOURCE_ENUM, kind), name, LITERAL)
    doc = json.loads(text)
    return Pattern(parse_enum(RESOURCE_ENUM, doc["resourceType"]), doc["name"],
                   parse_enum(PATTERN_ENUM, doc["patternType"]))


def describe_pattern(p: Pattern) -> str:
    """Kafka's ResourcePattern.toString."""
    return (f"ResourcePattern(resourceType={RESOURCE_ENUM[p.resource_type]}, name={p.name}, "
            f"patternType={PATTERN_ENUM[p.pattern_type]})")


def describe_entry(e: AclEntry) -> str:
    """Kafka's AccessControlEntry.toString."""
    return (f"(principal={e.principal}, host={e.host}, operation={OPERATION_ENUM[e.operation]}, "
            f"permissionType={PERMISSION_ENUM[e.permission]})")
