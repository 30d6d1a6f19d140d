"""The controller mutation quota of a CreateTopics, CreatePartitions or DeleteTopics request
(not an API module itself): which quota the request records in, and its answer's throttle.

``quota_for(ctx, strict_since)``: strict from ``strict_since`` on (CreateTopics 6,
CreatePartitions 3, DeleteTopics 5), permissive below or when None (a topic Metadata
auto-creates), for the request's principal and client id (Kafka's
ControllerMutationQuotaManager.newQuotaFor).  ``throttle(ctx, quota)``,
called once the answer is ready: its throttle_time_ms, the larger of the mutation
quota's and the request quota's (the request's time recorded here), counted in the
larger one's sensor, and the connection muted that long after the answer (Kafka's
sendResponseMaybeThrottleWithControllerQuota).
"""
from __future__ import annotations

from kafkapy.quota import request as request_quota
from kafkapy.quota.client import session_user


def quota_for(ctx, strict_since: int | None = None):
    strict = strict_since is not None and ctx.api_version >= strict_since
    return ctx.services.controller_mutation.quota_for(
        session_user(ctx.session), ctx.client_id or "", strict=strict)


def throttle(ctx, quota) -> int:
    return request_quota.throttle_with(ctx.services.client_quotas.request, ctx,
                                       quota.throttle_time_ms(), quota.throttled)
