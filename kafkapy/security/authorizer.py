"""Kafka 3.9's ZooKeeper-mode ``kafka.security.authorizer.AclAuthorizer``.

ACLs live in the metadata store in Kafka's znodes (``kafkapy.security.acls``); every
broker keeps a cache of them: loaded at start-up, then kept current by following
``/kafka-acl-changes`` and ``/kafka-acl-extended-changes`` (a notification names one
resource pattern, whose znode is re-read), as Kafka's ZkNodeChangeNotificationListener.
Writes (CreateAcls / DeleteAcls on any broker) update the resource znode conditionally on
its zk version (retrying on a conflict), then create the change notification.

Decision (Kafka's authorizeAction): super users (``super.users``, ``;``-separated) pass;
the ACLs that apply are those of the literal resource, of the literal wildcard ``*`` and of
every prefixed pattern the name starts with; none at all -> ``allow.everyone.if.no.acl.found``;
else denied when a DENY entry matches (principal or ``User:*``, host or ``*``, the
operation or ALL), allowed when an ALLOW entry matches the operation or one implying it
(DESCRIBE by READ/WRITE/DELETE/ALTER, DESCRIBE_CONFIGS by ALTER_CONFIGS) or ALL.

Following the notifications (order, watches, new sessions, the 15-minute purge) is
``kafkapy.metadata.change_notifications``, one listener per root.

Invariants: the cache changes only on the event loop (watch callbacks schedule a pass);
``authorize`` never touches the store.
"""
from __future__ import annotations

import structlog
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkapy.api.principal import KafkaPrincipal
from kafkapy.metadata.change_notifications import ChangeNotificationListener
from kafkapy.protocol.errors import ErrorCode
from kafkapy.security import acls as A
from kafkapy.security.acls import AclBinding, AclEntry, AclFilter, Pattern

_log = structlog.get_logger("kafkapy.authorizer")
CLASS_NAME = "kafka.security.authorizer.AclAuthorizer"
_IMPLIED = {A.DESCRIBE: (A.DESCRIBE, A.READ, A.WRITE, A.DELETE, A.ALTER),
            A.DESCRIBE_CONFIGS: (A.DESCRIBE_CONFIGS, A.ALTER_CONFIGS)}
_WRITE_RETRIES = 20


def parse_super_users(text: str | None) -> frozenset[str]:
    """``User:a;User:b`` -> their text forms (Kafka parses each with parseKafkaPrincipal)."""
    out = set()
    for part in (text or "").split(";"):
        part = part.strip()
        if part:
            out.add(str(KafkaPrincipal.parse(part)))
    return frozenset(out)


class AclAuthorizer:
    def __init__(self, store, super_users: frozenset[str] = frozenset(),
                 allow_if_no_acls: bool = False) -> None:
        self._store = store
        self.super_users = super_users
        self.allow_if_no_acls = allow_if_no_acls
        # pattern -> entries (insertion order, as Kafka keeps them in the znode)
        self._cache: dict[Pattern, tuple[AclEntry, ...]] = {}
        # (resource type, name) -> entries, one dict per pattern type: the lookup index
        self._literal: dict[tuple[int, str], tuple[AclEntry, ...]] = {}
        self._prefixed: dict[tuple[int, str], tuple[AclEntry, ...]] = {}
        self._listeners: list[ChangeNotificationListener] = []

    # -- decisions ---------------------------------------------------------------------
    def matching(self, resource_type: int, name: str) -> list[AclEntry]:
        out = list(self._literal.get((resource_type, name), ()))
        if name != A.WILDCARD:
            out.extend(self._literal.get((resource_type, A.WILDCARD), ()))
        if self._prefixed:
            for end in range(len(name) + 1):
                out.extend(self._prefixed.get((resource_type, name[:end]), ()))
        return out

    def authorize(self, session, operation: int, resource_type: int, name: str) -> bool:
        principal = str(session.principal)
        if principal in self.super_users:
            return True
        entries = self.matching(resource_type, name)
        if not entries:
            return self.allow_if_no_acls
        host = session.client_address
        if any(e.permission == A.DENY and _applies(e, principal, host, (operation,)) for e in entries):
            return False
        ops = _IMPLIED.get(operation, (operation,))
        return any(e.permission == A.ALLOW and _applies(e, principal, host, ops) for e in entries)

    def authorize_by_resource_type(self, session, operation: int, resource_type: int) -> bool:
        """Kafka's authorizeByResourceType: may the principal do ``operation`` on at least one
        resource of the type (an ALLOW not dominated by a DENY)?"""
        principal = str(session.principal)
        if principal in self.super_users:
            return True
        host = session.client_address
        names = {(perm, pt): set() for perm in (A.ALLOW, A.DENY) for pt in (A.LITERAL, A.PREFIXED)}
        for pattern, entries in self._cache.items():
            if pattern.resource_type != resource_type:
                continue
            for e in entries:
                if _applies(e, principal, host, (operation,)) and e.permission in (A.ALLOW, A.DENY):
                    names[(e.permission, pattern.pattern_type)].add(pattern.name)
        deny_lit, deny_pre = names[(A.DENY, A.LITERAL)], names[(A.DENY, A.PREFIXED)]
        if A.WILDCARD in deny_lit:
            return False
        if self.allow_if_no_acls:
            return True

        def dominated(name: str) -> bool:
            return any(name[:end] in deny_pre for end in range(len(name) + 1))
        if any(not dominated(p) for p in names[(A.ALLOW, A.PREFIXED)]):
            return True
        return any(lit == A.WILDCARD or (lit not in deny_lit and not dominated(lit))
                   for lit in names[(A.ALLOW, A.LITERAL)])

    # -- listing ---------------------------------------------------------------------
    def acls(self, flt: AclFilter) -> list[AclBinding]:
        return [AclBinding(p, e) for p, entries in self._cache.items() if flt.matches_pattern(p)
                for e in entries if flt.matches_entry(e)]

    # -- writes (CreateAcls / DeleteAcls) ------------------------------------------------
    def create_acls(self, bindings: list[AclBinding]) -> list[tuple[int, str | None]]:
        """One (error code, message) per binding; bindings of one pattern go in one write."""
        results: list[tuple[int, str | None] | None] = [None] * len(bindings)
        by_pattern: dict[Pattern, list[int]] = {}
        for i, b in enumerate(bindings):
            if b.is_unknown() or b.pattern.pattern_type not in (A.LITERAL, A.PREFIXED):
                results[i] = (ErrorCode.INVALID_REQUEST, "Failed to create ACL")
            elif "/" in b.pattern.name:
                results[i] = (ErrorCode.INVALID_REQUEST, "Failed to create ACL")
            else:
                by_pattern.setdefault(b.pattern, []).append(i)
        for pattern, indexes in by_pattern.items():
            new = [bindings[i].entry for i in indexes]
            try:
                self._update(pattern, lambda cur, new=new: cur + [e for e in dict.fromkeys(new) if e not in cur])
                outcome = (ErrorCode.NO_ERROR, None)
            except Exception as err:  # the store failed: every binding of the pattern fails
                _log.exception("writing ACLs failed", pattern=str(pattern))
                outcome = (ErrorCode.UNKNOWN, str(err) or None)
            for i in indexes:
                results[i] = outcome
        return results  # type: ignore[return-value]

    def delete_acls(self, filters: list[AclFilter]) -> list[list[tuple[AclBinding, int, str | None]]]:
        """Per filter, the bindings it deleted (each binding counted for its first filter)."""
        patterns = list(self._cache)
        for f in filters:
            if f.matches_at_most_one():
                p = Pattern(f.resource_type, f.name, f.pattern_type)
                if p not in self._cache:
                    patterns.append(p)
        out: list[list] = [[] for _ in filters]
        for pattern in patterns:
            matching = [(i, f) for i, f in enumerate(filters) if f.matches_pattern(pattern)]
            if not matching:
                continue
            deleted: dict[AclEntry, int] = {}

            def change(cur, matching=matching, deleted=deleted):
                deleted.clear()
                for e in cur:
                    for i, f in matching:
                        if f.matches_entry(e):
                            deleted.setdefault(e, i)
                            break
                return [e for e in cur if e not in deleted]
            try:
                self._update(pattern, change)
                error = (ErrorCode.NO_ERROR, None)
            except Exception as err:
                _log.exception("deleting ACLs failed", pattern=str(pattern))
                error = (ErrorCode.UNKNOWN, str(err) or None)
            for e, i in deleted.items():
                out[i].append((AclBinding(pattern, e), *error))
        return out

    def _update(self, pattern: Pattern, change) -> None:
        """Kafka's updateResourceAcls: read, change, write conditionally; a notification
        when the stored set changed."""
        store, path = self._store, A.resource_path(pattern)
        for _ in range(_WRITE_RETRIES):
            try:
                data, stat = store.get(path)
                current, version = A.decode_acls(data), stat.version
            except NoNodeError:
                current, version = [], None
            new = change(list(current))
            if new == current:
                self._set_cache(pattern, current)
                return
            try:
                if not new:
                    store.delete(path, version=version)
                elif version is None:
                    store.create(path, A.encode_acls(new), makepath=True)
                else:
                    store.set(path, A.encode_acls(new), version=version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue        # another broker wrote it first: re-read
            self._set_cache(pattern, new)
            store.create(f"{A.change_path(pattern.pattern_type)}/{A.CHANGE_PREFIX}",
                         A.encode_change(pattern), sequence=True, makepath=True)
            return
        raise RuntimeError(f"Failed to update ACLs for {A.describe_pattern(pattern)} after retries")

    # -- cache -----------------------------------------------------------------------
    def _set_cache(self, pattern: Pattern, entries) -> None:
        index = self._literal if pattern.pattern_type == A.LITERAL else self._prefixed
        key = (pattern.resource_type, pattern.name)
        if entries:
            self._cache[pattern] = tuple(entries)
            index[key] = tuple(entries)
        else:
            self._cache.pop(pattern, None)
            index.pop(key, None)

    def _reload(self, pattern: Pattern) -> None:
        try:
            data, _ = self._store.get(A.resource_path(pattern))
            entries = A.decode_acls(data)
        except NoNodeError:
            entries = []
        self._set_cache(pattern, entries)

    def load(self) -> None:
        """Create Kafka's ACL paths and read every stored ACL."""
        store = self._store
        for path in (*A.all_type_paths(), A.LITERAL_CHANGES, A.EXTENDED_CHANGES):
            store.ensure_path(path)
        for pattern_type in (A.LITERAL, A.PREFIXED):
            for resource_type in A.RESOURCE_ZK:
                for name in store.get_children(A.type_path(pattern_type, resource_type)):
                    self._reload(Pattern(resource_type, name, pattern_type))

    def start(self) -> None:
        """Follow the change notifications (from the newest present), then load the cache."""
        if self._listeners:
            return
        self._listeners = [ChangeNotificationListener(self._store, root, A.CHANGE_PREFIX,
                                                      self._on_change)
                           for root in (A.LITERAL_CHANGES, A.EXTENDED_CHANGES)]
        # Listener position first, then the load: no change can fall in between.
        for listener in self._listeners:
            listener.start(skip_existing=True)
        self.load()

    def stop(self) -> None:
        for listener in self._listeners:
            listener.stop()

    def process_changes(self) -> None:
        """One pass over both roots (what their children watches schedule)."""
        for listener in self._listeners:
            listener.process_changes()

    def _on_change(self, path: str, data: bytes) -> None:
        """A notification names one resource pattern: re-read its znode."""
        self._reload(A.decode_change(path.rsplit("/", 1)[0], data))


def _applies(e: AclEntry, principal: str, host: str, operations) -> bool:
    return ((e.principal == principal or e.principal == A.WILDCARD_PRINCIPAL)
            and (e.host == host or e.host == A.WILDCARD_HOST)
            and (e.operation == A.ALL or e.operation in operations))
