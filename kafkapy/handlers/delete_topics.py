"""DeleteTopics (key 20): delete topics by name (v0-5) or by name or id (v6).

Versions 0-6 (Kafka 3.9), answered as Kafka's ZooKeeper-mode KafkaApis does:
- a broker that is not the active controller -> every topic NOT_CONTROLLER.
- delete.topic.enable=false -> every topic TOPIC_DELETION_DISABLED
  (INVALID_REQUEST below v3, which predates that error).
- v6 naming one topic by both name and id -> an error response: every topic of
  the request INVALID_REQUEST.
- An unknown id -> UNKNOWN_TOPIC_ID (name null); neither name nor id (a null
  name with the zero id) -> TOPIC_AUTHORIZATION_FAILED, as Kafka's authorizer
  check answers a null name; an unknown name -> UNKNOWN_TOPIC_OR_PARTITION.
- Each result echoes the id the request gave (the zero id for a topic named
  by name).
The topic is marked for deletion (``/admin/delete_topics/T``, ``services.admin``);
the controller deletes it through its watch, and the answer waits until this
broker's metadata cache no longer has it (Kafka's DelayedDeleteTopics), else
REQUEST_TIMED_OUT at timeout_ms; with timeout_ms <= 0 Kafka does not wait and
answers REQUEST_TIMED_OUT at once, and so does kafkapy.

The topics are marked in the order of Kafka's toDelete set (a Scala mutable.HashSet), each
counting the partitions this broker's cache knows of it in the client's controller
mutation quota (``quota.controller_mutation``): from v5 the quota is strict (once it is
exhausted the next topics are answered THROTTLING_QUOTA_EXCEEDED), below v5 permissive.
The answer carries the quota's throttle time, and the connection is muted for it.
"""
from __future__ import annotations

from kafkapy.handlers import _mutation_quota as mutation_quota
from kafkapy.jvm import scala_mutable_hash_order, string_hash
from kafkapy.security import authz
from kafkapy.protocol.errors import ErrorCode, KafkaError
from kafkapy.protocol.messages import RESPONSES

API_KEY = 20
MIN_VERSION = 0
MAX_VERSION = 6
STRICT_QUOTA_SINCE = 5      # older versions: the controller mutation quota is permissive

_R = RESPONSES[API_KEY]
_Result = _R.DeletableTopicResult


async def handle(ctx, request):
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id if t.topic_id is not None and t.topic_id.int else None)
                  for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    if not ctx.services.controller.is_active:
        return _respond(ctx, [_Result(name=n, topic_id=i, error_code=ErrorCode.NOT_CONTROLLER,
                                      error_message=None) for n, i in wanted])
    if not ctx.services.config["delete.topic.enable"]:
        error = (ErrorCode.TOPIC_DELETION_DISABLED if ctx.api_version >= 3
                 else ErrorCode.INVALID_REQUEST)
        return _respond(ctx, [_Result(name=n, topic_id=i, error_code=error, error_message=None)
                              for n, i in wanted])
    if any(name is not None and topic_id is not None for name, topic_id in wanted):
        return _respond(ctx, [_Result(name=n, topic_id=i, error_code=ErrorCode.INVALID_REQUEST,
                                      error_message=None) for n, i in wanted])
    # Every topic is checked before any is deleted, so a topic named twice is found
    # (and answered without error) both times, as in Kafka.
    results = [_check(ctx, name, topic_id) for name, topic_id in wanted]
    quota = mutation_quota.quota_for(ctx, STRICT_QUOTA_SINCE)
    errors: dict[str, int] = {}
    # In the order of Kafka's toDelete (a Scala mutable.HashSet): which topics the controller
    # mutation quota lets through depends on it.
    deletable = scala_mutable_hash_order(
        dict.fromkeys(r.name for r in results if r.error_code == 0), string_hash)
    for name in deletable:
        try:
            ctx.services.admin.delete_topic(name, quota)
        except KafkaError as err:
            errors[name] = err.code
    marked = [name for name in deletable if name not in errors]
    if request.timeout_ms <= 0:
        # Kafka does not wait for the deletion then, and says so.
        errors.update(dict.fromkeys(marked, ErrorCode.REQUEST_TIMED_OUT))
    elif marked:
        late = await ctx.services.admin.wait_for_deletion(marked, request.timeout_ms)
        errors.update(dict.fromkeys(late, ErrorCode.REQUEST_TIMED_OUT))
    for r in results:
        if r.error_code == 0 and r.name in errors:
            r.error_code = errors[r.name]
    return _respond(ctx, results, mutation_quota.throttle(ctx, quota))


def _respond(ctx, results, throttle_ms: int = 0):
    return ctx.response(throttle_time_ms=throttle_ms, responses=results)


def _check(ctx, name, topic_id):
    services = ctx.services
    if topic_id is not None:
        name = services.cache.topic_name(topic_id)
        if name is None:
            return _Result(name=None, topic_id=topic_id, error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                           error_message=None)
    if name is None:
        return _Result(name=None, topic_id=None,
                       error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=None)
    if not authz.allowed(ctx, authz.DELETE, authz.TOPIC, name):
        return _Result(name=name if topic_id is None else None, topic_id=topic_id,
                       error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=None)
    if services.cache.topic(name) is None:
        return _Result(name=name, topic_id=topic_id,
                       error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=None)
    return _Result(name=name, topic_id=topic_id, error_code=0, error_message=None)
