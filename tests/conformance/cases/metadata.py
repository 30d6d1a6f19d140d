"""Metadata (3): named, all, by id, unknown, auto-created, invalid names, authorised ops."""
from __future__ import annotations

from tests.conformance.cases import for_api
from tests.conformance.cases.common import UNKNOWN_TOPIC_ID, case, tid
from tests.conformance.state import COMPACT, MISSING, MULTI, PLAIN, TOPICS, refresh_topic_ids


def _topics(*names):
    return [{"name": n, "topic_id": None} for n in names]


def _settled(topic):
    def after(side):
        side.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False},
                  retry_codes=(1,), code=lambda r: int(r.topics[0].error_code != 0 or any(
                      p.leader_id < 0 for p in r.topics[0].partitions)))
        refresh_topic_ids(side)
    return after


@for_api(3)
def metadata(v: int):
    base = {"allow_auto_topic_creation": False}
    yield case("named", dict(base, topics=_topics(PLAIN, MULTI, COMPACT)))
    yield case("empty-list", dict(base, topics=[]))
    if v >= 1:
        yield case("all-topics", dict(base, topics=None))
    if v >= 4:
        yield case("unknown-topic", dict(base, topics=_topics(MISSING)))
        yield case("invalid-name", dict(base, topics=_topics("bad name!")))
    # Kafka spreads a new topic to its metadata cache asynchronously: wait for it, so
    # the next "all topics" case sees the same topics on both brokers.
    yield case("auto-create", {"allow_auto_topic_creation": True,
                               "topics": _topics(f"conf-auto-v{v}")},
               after=_settled(f"conf-auto-v{v}"))
    if v >= 8:
        yield case("authorized-ops", dict(base, topics=_topics(PLAIN),
                                          include_topic_authorized_operations=True,
                                          include_cluster_authorized_operations=True))
    if v >= 10:
        yield case("by-topic-id", lambda s: dict(base, topics=[
            {"topic_id": tid(s, PLAIN), "name": None}]))
        yield case("unknown-topic-id", dict(base, topics=[
            {"topic_id": UNKNOWN_TOPIC_ID, "name": None}]))
        yield case("name-and-id", lambda s: dict(base, topics=[
            {"topic_id": tid(s, PLAIN), "name": PLAIN}]))
    _ = TOPICS
