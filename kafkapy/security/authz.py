"""Authorization checks for API handlers: Kafka's AuthHelper.

Every helper starts with ``ctx.services.authorizer is None`` and returns at once when no
authorizer is configured (the broker always has the attribute: None unless
``authorizer.class.name`` names Kafka's AclAuthorizer), so an unconfigured broker pays one
attribute read per call.
The principal and client address come from ``ctx.session`` (the connection's
``kafkapy.api.principal.Session``).

``allowed(ctx, op, type, name)`` -- one resource; ``filter_allowed(ctx, op, type, names)``
-- the subset allowed (Kafka's filterByAuthorized); ``allowed_by_type`` -- Kafka's
authorizeByResourceType; ``cluster(ctx, op)`` -- the CLUSTER resource ``kafka-cluster``.
"""
from __future__ import annotations

from kafkapy.api.principal import PLAINTEXT_SESSION
from kafkapy.security import acls as A

# Re-exported for handlers: ``authz.READ`` etc.
from kafkapy.security.acls import (  # noqa: F401
    ALTER, ALTER_CONFIGS, CLUSTER, CLUSTER_ACTION, CREATE, DELEGATION_TOKEN, DELETE, DESCRIBE,
    DESCRIBE_CONFIGS, GROUP, IDEMPOTENT_WRITE, READ, TOPIC, TRANSACTIONAL_ID, WRITE,
)


def _session(ctx):
    return getattr(ctx, "session", PLAINTEXT_SESSION)


def allowed(ctx, operation: int, resource_type: int, name: str) -> bool:
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(_session(ctx), operation, resource_type, name)


def cluster(ctx, operation: int) -> bool:
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(_session(ctx), operation, A.CLUSTER, A.CLUSTER_NAME)


def filter_allowed(ctx, operation: int, resource_type: int, names) -> set:
    """The names (a set) the principal may ``operation``; each distinct name checked once."""
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return set(names)
    session = _session(ctx)
    return {n for n in set(names) if authorizer.authorize(session, operation, resource_type, n)}


def allowed_by_type(ctx, operation: int, resource_type: int) -> bool:
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize_by_resource_type(_session(ctx), operation, resource_type)


def authorized_operations(ctx, resource_type: int, name: str, all_ops) -> set:
    """The operations of ``all_ops`` (codes) allowed on the resource (Kafka's
    authorizedOperations); every one without an authorizer."""
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return set(all_ops)
    session = _session(ctx)
    return {op for op in all_ops if authorizer.authorize(session, op, resource_type, name)}
