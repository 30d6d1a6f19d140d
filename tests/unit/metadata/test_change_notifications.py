"""ChangeNotificationListener (Kafka's ZkNodeChangeNotificationListener) on an embedded store:
order, once-only, skip_existing, a failing handler not stopping the others, the purge."""
from __future__ import annotations

import time

from kafkapy.metadata.change_notifications import CHANGE_EXPIRATION_MS, ChangeNotificationListener

ROOT = "/changes"
PREFIX = "change_"


def notify(store, data: bytes) -> None:
    store.create(f"{ROOT}/{PREFIX}", data, sequence=True, makepath=True)


def test_each_notification_once_in_order_and_a_failure_skipped(store):
    seen = []

    def handle(path, data):
        if data == b"bad":
            raise ValueError("unreadable")
        seen.append(data)
    notify(store, b"a")
    listener = ChangeNotificationListener(store, ROOT, PREFIX, handle)
    listener.start()
    notify(store, b"bad")
    notify(store, b"b")
    store.create(f"{ROOT}/other", b"x")            # not a notification: ignored
    listener.process_changes()
    listener.process_changes()
    assert seen == [b"a", b"b"]
    assert listener.last_change == 2


def test_skip_existing_and_purge_of_old_ones(store):
    seen = []
    now = [0.0]
    notify(store, b"old")
    listener = ChangeNotificationListener(store, ROOT, PREFIX, lambda p, d: seen.append(d),
                                          now_ms=lambda: now[0])
    now[0] = store.exists(f"{ROOT}/{PREFIX}0000000000").ctime
    listener.start(skip_existing=True)
    assert seen == [] and listener.last_change == 0
    now[0] += CHANGE_EXPIRATION_MS + 1
    time.sleep(0.005)    # ctime is in ms: "new" must be younger than "old" to outlive it
    notify(store, b"new")
    listener.process_changes()
    assert seen == [b"new"]
    assert store.get_children(ROOT) == [f"{PREFIX}0000000001"]
