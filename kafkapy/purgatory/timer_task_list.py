"""Timer buckets: doubly linked lists of timer task entries.

A ``TimerTaskList`` is one slot of a timing wheel.  Every entry in it expires
within the same tick window, and the list carries that window's start as its
``expiration_ms`` (``-1`` while the bucket is not scheduled).

Invariants:
- An entry is in at most one list; ``entry.list`` names it (``None`` if none).
- A list is circular around a sentinel ``root`` entry, so add and remove are O(1)
  with no special cases for the ends.
- An entry is *cancelled* once its task no longer points back at it (the task was
  cancelled or re-added elsewhere); cancelled entries are never linked by ``add``.
- The shared ``TaskCounter`` counts the entries linked into all lists of one timer.
"""
from __future__ import annotations

from typing import Any, Callable


class TaskCounter:
    """Number of entries linked into the buckets of one timer."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class TimerTaskEntry:
    """The link between a task and the bucket that holds it."""

    __slots__ = ("task", "expiration_ms", "list", "next", "prev")

    def __init__(self, task: Any, expiration_ms: int) -> None:
        self.task = task
        self.expiration_ms = expiration_ms
        self.list: TimerTaskList | None = None
        self.next: TimerTaskEntry | None = None
        self.prev: TimerTaskEntry | None = None
        if task is not None:
            # Binding the new entry unlinks any older one: a task is scheduled once.
            old = task._entry
            if old is not None and old.list is not None:
                old.list.remove(old)
            task._entry = self

    @property
    def cancelled(self) -> bool:
        return self.task._entry is not self

    def remove(self) -> None:
        """Unlink from whatever list holds this entry (no-op if none)."""
        if self.list is not None:
            self.list.remove(self)


class TimerTaskList:
    """One bucket: a circular doubly linked list of entries plus its expiration."""

    __slots__ = ("root", "expiration_ms", "_counter")

    def __init__(self, counter: TaskCounter) -> None:
        root = TimerTaskEntry(None, -1)
        root.next = root
        root.prev = root
        self.root = root
        self.expiration_ms = -1
        self._counter = counter

    def set_expiration(self, expiration_ms: int) -> bool:
        """Set the bucket's expiration; True when it changed (the bucket needs queueing)."""
        changed = self.expiration_ms != expiration_ms
        self.expiration_ms = expiration_ms
        return changed

    def is_empty(self) -> bool:
        return self.root.next is self.root

    def add(self, entry: TimerTaskEntry) -> None:
        """Append at the tail, first unlinking it from any other list."""
        if entry.list is not None:
            entry.list.remove(entry)
        if entry.task._entry is not entry:  # cancelled
            return
        tail = self.root.prev
        entry.next = self.root
        entry.prev = tail
        entry.list = self
        tail.next = entry
        self.root.prev = entry
        self._counter.value += 1

    def remove(self, entry: TimerTaskEntry) -> None:
        if entry.list is not self:
            return
        entry.next.prev = entry.prev
        entry.prev.next = entry.next
        entry.next = None
        entry.prev = None
        entry.list = None
        self._counter.value -= 1

    def flush(self, reinsert: Callable[[TimerTaskEntry], None]) -> None:
        """Unlink every entry, in insertion order, handing each to ``reinsert``;
        then mark the bucket unscheduled so its next use re-queues it."""
        root = self.root
        while root.next is not root:
            head = root.next
            self.remove(head)
            reinsert(head)
        self.expiration_ms = -1

    def tasks(self) -> list[Any]:
        """The live tasks, head first (for tests and debugging)."""
        out = []
        node = self.root.next
        while node is not self.root:
            out.append(node.task)
            node = node.next
        return out
