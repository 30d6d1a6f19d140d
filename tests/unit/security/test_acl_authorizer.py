"""AclAuthorizer matching and storage, on the embedded metadata store.

Facts ported from Kafka's AclAuthorizerTest: DENY beats ALLOW; wildcard resource ``*``,
principal ``User:*`` and host ``*``; prefixed patterns; DESCRIBE implied by
READ/WRITE/DELETE/ALTER and DESCRIBE_CONFIGS by ALTER_CONFIGS, nothing else implied; ALL;
super users; allow.everyone.if.no.acl.found only where no ACL applies at all;
authorizeByResourceType; znode bytes and change notifications as Kafka writes them;
another authorizer on the same store follows the notifications.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkapy.api.principal import KafkaPrincipal, Session
from kafkapy.config.broker import acl_authorizer_settings
from kafkapy.config.errors import ConfigError
from kafkapy.security import acls as A
from kafkapy.security.authorizer import AclAuthorizer, parse_super_users


def _session(name: str = "alice", host: str = "192.168.1.1") -> Session:
    return Session(KafkaPrincipal("User", name), host)


def _acl(principal, op, permission=A.ALLOW, host="*"):
    return A.AclEntry(principal, host, op, permission)


def _add(authz, rt, name, *entries, pt=A.LITERAL):
    results = authz.create_acls([A.AclBinding(A.Pattern(rt, name, pt), e) for e in entries])
    assert all(code == 0 for code, _ in results), results


@pytest.fixture
def authz(store):
    a = AclAuthorizer(store)
    a.start()
    return a


def test_deny_beats_allow(authz):
    _add(authz, A.TOPIC, "t", _acl("User:alice", A.READ), _acl("User:alice", A.READ, A.DENY, "192.168.1.1"))
    assert not authz.authorize(_session(), A.READ, A.TOPIC, "t")
    assert authz.authorize(_session(host="10.0.0.9"), A.READ, A.TOPIC, "t")


def test_wildcards(authz):
    _add(authz, A.TOPIC, "*", _acl("User:*", A.WRITE))
    assert authz.authorize(_session("bob"), A.WRITE, A.TOPIC, "anything")
    assert not authz.authorize(_session("bob"), A.READ, A.TOPIC, "anything")
    _add(authz, A.TOPIC, "x", _acl("User:*", A.WRITE, A.DENY))
    assert not authz.authorize(_session("bob"), A.WRITE, A.TOPIC, "x")


def test_prefixed(authz):
    _add(authz, A.GROUP, "team-", _acl("User:alice", A.READ), pt=A.PREFIXED)
    assert authz.authorize(_session(), A.READ, A.GROUP, "team-1")
    assert authz.authorize(_session(), A.READ, A.GROUP, "team-")
    assert not authz.authorize(_session(), A.READ, A.GROUP, "team")
    _add(authz, A.GROUP, "team-x", _acl("User:alice", A.READ, A.DENY), pt=A.PREFIXED)
    assert not authz.authorize(_session(), A.READ, A.GROUP, "team-xy")


def test_implied_operations(authz):
    for op, implies in ((A.READ, True), (A.WRITE, True), (A.DELETE, True), (A.ALTER, True),
                        (A.CREATE, False), (A.ALTER_CONFIGS, False)):
        name = f"t{op}"
        _add(authz, A.TOPIC, name, _acl("User:alice", op))
        assert authz.authorize(_session(), A.DESCRIBE, A.TOPIC, name) is implies, op
    _add(authz, A.TOPIC, "cfg", _acl("User:alice", A.ALTER_CONFIGS))
    assert authz.authorize(_session(), A.DESCRIBE_CONFIGS, A.TOPIC, "cfg")
    # a DENY of READ does not deny DESCRIBE
    _add(authz, A.TOPIC, "d", _acl("User:alice", A.WRITE), _acl("User:alice", A.READ, A.DENY))
    assert authz.authorize(_session(), A.DESCRIBE, A.TOPIC, "d")


def test_all_operation(authz):
    _add(authz, A.CLUSTER, A.CLUSTER_NAME, _acl("User:alice", A.ALL))
    for op in (A.CREATE, A.ALTER, A.CLUSTER_ACTION, A.IDEMPOTENT_WRITE, A.DESCRIBE):
        assert authz.authorize(_session(), op, A.CLUSTER, A.CLUSTER_NAME)
    _add(authz, A.CLUSTER, A.CLUSTER_NAME, _acl("User:alice", A.ALL, A.DENY, "192.168.1.1"))
    assert not authz.authorize(_session(), A.DESCRIBE, A.CLUSTER, A.CLUSTER_NAME)


def test_allow_everyone_if_no_acl_found(store):
    a = AclAuthorizer(store, allow_if_no_acls=True)
    a.start()
    assert a.authorize(_session(), A.READ, A.TOPIC, "t")
    _add(a, A.TOPIC, "t", _acl("User:bob", A.READ))
    assert not a.authorize(_session(), A.READ, A.TOPIC, "t")    # some ACL applies: not everyone
    b = AclAuthorizer(store)
    b.start()
    assert not b.authorize(_session(), A.READ, A.TOPIC, "u")


def test_super_users(store):
    assert parse_super_users(" User:a ; User:b;") == {"User:a", "User:b"}
    a = AclAuthorizer(store, super_users=parse_super_users("User:alice"))
    a.start()
    _add(a, A.TOPIC, "t", _acl("User:alice", A.ALL, A.DENY))
    assert a.authorize(_session(), A.READ, A.TOPIC, "t")


def test_authorize_by_resource_type(authz):
    s = _session()
    assert not authz.authorize_by_resource_type(s, A.WRITE, A.TOPIC)
    _add(authz, A.TOPIC, "p", _acl("User:alice", A.WRITE), pt=A.PREFIXED)
    assert authz.authorize_by_resource_type(s, A.WRITE, A.TOPIC)
    _add(authz, A.TOPIC, "p", _acl("User:alice", A.WRITE, A.DENY), pt=A.PREFIXED)
    assert not authz.authorize_by_resource_type(s, A.WRITE, A.TOPIC)   # dominated
    _add(authz, A.TOPIC, "q", _acl("User:alice", A.WRITE))
    assert authz.authorize_by_resource_type(s, A.WRITE, A.TOPIC)
    _add(authz, A.TOPIC, "*", _acl("User:*", A.WRITE, A.DENY))
    assert not authz.authorize_by_resource_type(s, A.WRITE, A.TOPIC)


def test_znodes_and_notifications(store, authz):
    _add(authz, A.TOPIC, "foo", _acl("User:alice", A.READ), _acl("User:bob", A.DESCRIBE, A.DENY, "10.0.0.1"))
    assert store.get("/kafka-acl/Topic/foo")[0] == (
        b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"Read"},'
        b'{"principal":"User:bob","permissionType":"Deny","host":"10.0.0.1","operation":"Describe"}],'
        b'"version":1}')
    _add(authz, A.TOPIC, "pre", _acl("User:alice", A.ALL), pt=A.PREFIXED)
    assert store.get("/kafka-acl-extended/prefixed/Topic/pre")[0] == (
        b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"All"}],'
        b'"version":1}')
    assert store.get("/kafka-acl-changes/acl_changes_0000000000")[0] == b"TOPIC:foo"
    assert store.get("/kafka-acl-extended-changes/acl_changes_0000000000")[0] == (
        b'{"version":1,"resourceType":"TOPIC","name":"pre","patternType":"PREFIXED"}')
    for rt in ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User"):
        assert store.exists(f"/kafka-acl/{rt}") and store.exists(f"/kafka-acl-extended/prefixed/{rt}")


def test_other_broker_follows_changes(store, authz):
    other = AclAuthorizer(store)
    other.start()
    assert not other.authorize(_session(), A.READ, A.TOPIC, "t")
    _add(authz, A.TOPIC, "t", _acl("User:alice", A.READ))
    other.process_changes()     # what its watch schedules
    assert other.authorize(_session(), A.READ, A.TOPIC, "t")
    deleted = authz.delete_acls([A.AclFilter(A.R_ANY, None, A.P_ANY, None, None, A.OP_ANY, A.PERM_ANY)])
    assert [b.pattern.name for b, _, _ in deleted[0]] == ["t"]
    assert not store.exists("/kafka-acl/Topic/t")
    other.process_changes()
    assert not other.authorize(_session(), A.READ, A.TOPIC, "t")


def test_filters(authz):
    _add(authz, A.TOPIC, "foo", _acl("User:alice", A.READ))
    _add(authz, A.TOPIC, "*", _acl("User:bob", A.READ))
    _add(authz, A.TOPIC, "fo", _acl("User:carol", A.READ), pt=A.PREFIXED)
    match = A.AclFilter(A.TOPIC, "foo", A.P_MATCH, None, None, A.OP_ANY, A.PERM_ANY)
    assert {b.entry.principal for b in authz.acls(match)} == {"User:alice", "User:bob", "User:carol"}
    literal = A.AclFilter(A.TOPIC, "foo", A.LITERAL, None, None, A.OP_ANY, A.PERM_ANY)
    assert {b.entry.principal for b in authz.acls(literal)} == {"User:alice"}
    by_principal = A.AclFilter(A.R_ANY, None, A.P_ANY, "User:bob", None, A.READ, A.ALLOW)
    assert [b.pattern.name for b in authz.acls(by_principal)] == ["*"]


def test_create_validation(authz):
    bad = A.AclBinding(A.Pattern(A.TOPIC, "a/b", A.LITERAL), _acl("User:a", A.READ))
    unknown = A.AclBinding(A.Pattern(A.TOPIC, "a", A.LITERAL), _acl("User:a", A.OP_UNKNOWN))
    assert [code for code, _ in authz.create_acls([bad, unknown])] == [42, 42]


def test_codes_and_names():
    assert A.camel("DESCRIBE_CONFIGS") == "DescribeConfigs"
    assert A.parse_enum(A.OPERATION_ENUM, "IdempotentWrite") == A.IDEMPOTENT_WRITE
    assert A.parse_enum(A.OPERATION_ENUM, "describe_configs") == A.DESCRIBE_CONFIGS
    assert A.decode_change(A.LITERAL_CHANGES, b"TOPIC:a:b") == A.Pattern(A.TOPIC, "a:b", A.LITERAL)


def test_settings_errors(store):
    with pytest.raises(ConfigError, match="super.users"):
        acl_authorizer_settings(SimpleNamespace(originals={"super.users": "alice"}))
    with pytest.raises(ConfigError, match="allow.everyone.if.no.acl.found"):
        acl_authorizer_settings(SimpleNamespace(originals={"allow.everyone.if.no.acl.found": "yes"}))
    a = AclAuthorizer(store, *acl_authorizer_settings(SimpleNamespace(
        originals={"super.users": "User:a;User:b", "allow.everyone.if.no.acl.found": "true"})))
    assert a.super_users == {"User:a", "User:b"} and a.allow_if_no_acls
