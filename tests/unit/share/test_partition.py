"""SharePartition on a mock clock: acquisition, acknowledgement, locks, delivery limits,
backoff, dead-letter pending state, read_committed and the persisted state."""
from __future__ import annotations

import pytest

from kafkapy.clock import MockClock
from kafkapy.coordinator.share.persister import ShareState, StateBatch
from kafkapy.protocol.errors import ErrorCode
from kafkapy.coordinator.share.batches import combine
from kafkapy.share.partition import (
    AcknowledgementBatch,
    AcquiredRecords,
    AcquireMode,
    ArchivedRecords,
    REJECTED_MARK,
    FetchedBatch,
    InFlightRange,
    RecordState,
    SharePartition,
    SharePartitionState,
    persister_error,
    redelivery_delay_ms,
)

LOCK_MS = 30_000
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = (RecordState.AVAILABLE, RecordState.ACQUIRED,
                                               RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
ACCEPT, RELEASE, REJECT, GAP, RENEW = 1, 2, 3, 0, 4


def make(clock: MockClock | None = None, *, start: int = 0, batches=(), limit: int = 5,
         max_in_flight: int = 200, **kwargs) -> SharePartition:
    partition = SharePartition("g", "topic-id", "t", 0, clock=clock or MockClock(),
                               max_in_flight_records=max_in_flight, delivery_count_limit=limit,
                               lock_duration_ms=LOCK_MS, **kwargs)
    error = partition.maybe_initialize(
        ShareState(error=0, state_epoch=3, start_offset=start, batches=tuple(batches)),
        resolve_reset=lambda: pytest.fail("no reset expected"))
    assert error == 0
    return partition


def ack(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, tuple(types))


def states(partition: SharePartition) -> list[tuple[int, int, RecordState, int]]:
    return [(r.first_offset, r.last_offset, r.state, r.delivery_count)
            for r in partition.in_flight()]


# -- initialization ---------------------------------------------------------------


def test_initialize_resolves_an_unset_start_offset_through_the_reset_callback():
    partition = SharePartition("g", "id", "t", 0, clock=MockClock(), max_in_flight_records=200,
                               delivery_count_limit=5, lock_duration_ms=LOCK_MS)
    assert partition.state is SharePartitionState.EMPTY
    assert partition.maybe_initialize(ShareState(error=0, state_epoch=7, start_offset=-1),
                                      resolve_reset=lambda: 42) == 0
    assert partition.state is SharePartitionState.ACTIVE
    assert (partition.start_offset, partition.end_offset, partition.state_epoch) == (42, 42, 7)
    assert partition.next_fetch_offset() == 42


def test_initialize_moves_the_start_offset_up_to_the_log_start_offset():
    partition = SharePartition("g", "id", "t", 0, clock=MockClock(), max_in_flight_records=200,
                               delivery_count_limit=5, lock_duration_ms=LOCK_MS)
    partition.maybe_initialize(ShareState(error=0, start_offset=10), resolve_reset=lambda: 0,
                               log_start_offset=25)
    assert partition.start_offset == 25


@pytest.mark.parametrize("persisted, answered", [
    (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_ID_NOT_FOUND),
    (ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN),
])
def test_a_failed_read_leaves_the_partition_failed_with_kafkas_error(persisted, answered):
    assert persister_error(persisted) == answered
    partition = SharePartition("g", "id", "t", 0, clock=MockClock(), max_in_flight_records=200,
                               delivery_count_limit=5, lock_duration_ms=LOCK_MS)
    assert partition.maybe_initialize(ShareState(error=persisted), resolve_reset=lambda: 0) == answered
    assert partition.state is SharePartitionState.FAILED
    assert partition.acquire("m", [(0, 9)], max_records=10) == []
    assert not partition.can_acquire()


def test_a_fenced_partition_acquires_nothing_and_refuses_acknowledgements():
    partition = make()
    partition.acquire("m", [(0, 9)], max_records=10)
    partition.fence()
    assert partition.acquire("m", [(10, 19)], max_records=10) == []
    assert partition.acknowledge("m", [ack(0, 9, ACCEPT)]).error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert partition.maybe_initialize(ShareState(error=0), resolve_reset=lambda: 0) == \
        ErrorCode.LEADER_NOT_AVAILABLE


# -- acquire ----------------------------------------------------------------------


def test_new_batches_are_acquired_whole_with_delivery_count_one():
    clock = MockClock()
    partition = make(clock)
    acquired = partition.acquire("m1", [(0, 4), (5, 9)], max_records=100)
    assert acquired == [AcquiredRecords(0, 9, 1)]
    assert (partition.start_offset, partition.end_offset) == (0, 9)
    assert partition.next_fetch_offset() == 10 and partition.next_new_offset == 10
    assert partition.acquired_count == 10 and partition.in_flight_count == 10
    assert partition.in_flight() == [InFlightRange(0, 9, ACQUIRED, 1, "m1", None)]
    assert partition.next_deadline() == clock.monotonic_ms() + LOCK_MS


def test_batch_size_splits_answers_at_log_batch_boundaries():
    partition = make()
    acquired = partition.acquire("m", [(0, 2), (3, 5), (6, 8), (9, 11)], max_records=100,
                                 batch_size=5)
    assert acquired == [AcquiredRecords(0, 5, 1), AcquiredRecords(6, 11, 1)]


def test_batch_optimized_mode_keeps_the_whole_log_batch_past_max_records():
    partition = make()
    assert partition.acquire("m", [(0, 9), (10, 19)], max_records=3) == [AcquiredRecords(0, 9, 1)]
    assert partition.next_fetch_offset() == 10


def test_batch_optimized_reacquisition_stops_at_the_log_batch_past_max_records():
    partition = make()
    partition.acquire("m", [(0, 9), (10, 19)], max_records=100)
    partition.acknowledge("m", [ack(0, 19, RELEASE)])
    assert partition.acquire("m", [(0, 9), (10, 19)], max_records=3) == [AcquiredRecords(0, 9, 2)]


def test_record_limit_mode_acquires_exactly_max_records_and_leaves_the_rest_available():
    partition = make()
    acquired = partition.acquire("m", [(0, 9), (10, 19)], max_records=3,
                                 mode=AcquireMode.RECORD_LIMIT)
    assert acquired == [AcquiredRecords(0, 2, 1)]
    assert states(partition) == [(0, 2, ACQUIRED, 1), (3, 9, AVAILABLE, 0)]
    assert partition.next_fetch_offset() == 3
    again = partition.acquire("m2", [(0, 9)], max_records=4, mode=AcquireMode.RECORD_LIMIT,
                              fetch_offset=3)
    assert again == [AcquiredRecords(3, 6, 1)]


def test_a_fetch_starting_inside_an_in_flight_batch_reacquires_only_available_offsets():
    partition = make()
    partition.acquire("m1", [(0, 9)], max_records=100)
    partition.acknowledge("m1", [ack(0, 9, ACCEPT, ACCEPT, RELEASE, ACCEPT, ACCEPT,
                                     ACCEPT, RELEASE, ACCEPT, ACCEPT, ACCEPT)])
    assert partition.next_fetch_offset() == 2
    acquired = partition.acquire("m2", [(0, 9), (10, 12)], max_records=100, fetch_offset=2)
    assert acquired == [AcquiredRecords(2, 2, 2), AcquiredRecords(6, 6, 2),
                        AcquiredRecords(10, 12, 1)]
    assert partition.start_offset == 2


def test_max_in_flight_records_bounds_new_offsets_but_not_reacquisition():
    partition = make(max_in_flight=10)
    partition.acquire("m", [(0, 9)], max_records=100)
    assert not partition.can_acquire()
    assert partition.acquire("m", [(10, 19)], max_records=100) == []
    partition.acknowledge("m", [ack(4, 5, RELEASE)])
    assert partition.can_acquire()
    assert partition.next_fetch_offset() == 4
    assert partition.acquire("m2", [(0, 9), (10, 19)], max_records=100, fetch_offset=4) == \
        [AcquiredRecords(4, 5, 2)]
    assert partition.end_offset == 9


def test_the_in_flight_window_caps_the_count_of_new_offsets():
    partition = make(max_in_flight=15)
    partition.acquire("m", [(0, 9)], max_records=100)
    assert partition.acquire("m", [(10, 14), (15, 19)], max_records=100) == \
        [AcquiredRecords(10, 14, 1)]
    assert partition.end_offset == 14


def test_offsets_missing_from_the_log_are_archived():
    partition = make()
    partition.acquire("m", [(0, 4)], max_records=100)
    # 5-7 compacted away: the read from 5 starts at 8
    assert partition.acquire("m", [(8, 9)], max_records=100, fetch_offset=5) == \
        [AcquiredRecords(8, 9, 1)]
    assert states(partition)[1] == (5, 7, ARCHIVED, 0)
    partition.acknowledge("m", [ack(0, 4, ACCEPT), ack(8, 9, ACCEPT)])
    assert partition.start_offset == 10


def test_available_offsets_before_the_first_fetched_batch_are_archived():
    partition = make()
    partition.acquire("m", [(0, 4), (5, 9)], max_records=100)
    partition.acknowledge("m", [ack(0, 9, RELEASE)])
    # 0-4 compacted away since: the read from 0 answers the batch at 5
    acquired = partition.acquire("m", [(5, 9)], max_records=100, fetch_offset=0)
    assert acquired == [AcquiredRecords(5, 9, 2)]
    assert partition.start_offset == 5


def test_read_committed_archives_aborted_transactions_and_keeps_committed_ones():
    batches = [
        FetchedBatch(0, 2, producer_id=7, is_transactional=True),     # aborted
        FetchedBatch(3, 3, producer_id=7, is_transactional=True, is_control=True,
                     is_abort_marker=True),
        FetchedBatch(4, 6, producer_id=8, is_transactional=True),     # committed
        FetchedBatch(7, 9),                                           # not transactional
    ]
    partition = make()
    acquired = partition.acquire("m", batches, max_records=100, aborted_transactions=[(7, 0)])
    assert acquired == [AcquiredRecords(3, 9, 1)]
    assert partition.start_offset == 3
    assert states(partition) == [(3, 9, ACQUIRED, 1)]

    uncommitted = make()
    assert uncommitted.acquire("m", batches, max_records=100) == [AcquiredRecords(0, 9, 1)]


# -- acknowledge ------------------------------------------------------------------


def test_accept_completes_records_and_moves_the_start_offset():
    partition = make()
    partition.acquire("m", [(0, 9)], max_records=100)
    transition = partition.acknowledge("m", [ack(0, 9, ACCEPT)])
    assert (transition.error, transition.changed, transition.available) == (0, True, False)
    assert (partition.start_offset, partition.end_offset) == (10, 10)
    assert partition.in_flight() == [] and partition.state_batches() == []
    assert partition.next_deadline() is None
    assert partition.next_fetch_offset() == 10


def test_partial_acks_within_a_batch():
    partition = make()
    partition.acquire("m", [(0, 9)], max_records=100)
    partition.acknowledge("m", [ack(5, 9, ACCEPT)])
    assert partition.start_offset == 0
    assert partition.delivery_complete_count == 5
    assert states(partition) == [(0, 4, ACQUIRED, 1), (5, 9, ACKNOWLEDGED, 1)]
    partition.acknowledge("m", [ack(0, 4, ACCEPT)])
    assert (partition.start_offset, partition.delivery_complete_count) == (10, 0)


def test_one_type_per_offset():
    partition = make()
    partition.acquire("m", [(0, 4)], max_records=100)
    transition = partition.acknowledge("m", [ack(0, 4, ACCEPT, RELEASE, REJECT, GAP, RENEW)])
    assert transition.error == 0
    assert states(partition) == [(1, 1, AVAILABLE, 1), (2, 3, ARCHIVED, 1), (4, 4, ACQUIRED, 1)]
    assert partition.start_offset == 1


def test_release_makes_records_acquirable_again_with_delivery_count_plus_one():
    partition = make()
    partition.acquire("m1", [(0, 9)], max_records=100)
    transition = partition.acknowledge("m1", [ack(0, 9, RELEASE)])
    assert transition.available and transition.changed
    assert partition.next_fetch_offset() == 0
    assert partition.acquire("m2", [(0, 9)], max_records=100) == [AcquiredRecords(0, 9, 2)]
    assert partition.in_flight()[0].member_id == "m2"


def test_reject_archives_without_a_dead_letter_when_those_are_off():
    partition = make()
    partition.acquire("m", [(0, 9)], max_records=100)
    transition = partition.acknowledge("m", [ack(0, 9, REJECT)])
    assert transition.dead_letters == []
    assert partition.start_offset == 10


def test_acks_of_records_not_acquired_by_the_member_change_nothing():
    partition = make()
    partition.acquire("m1", [(0, 9)], max_records=100)
    partition.acquire("m2", [(10, 19)], max_records=100)
    before = partition.in_flight()
    result = partition.acknowledge("m1", [ack(0, 9, ACCEPT), ack(10, 12, ACCEPT)])
    assert result.error == ErrorCode.INVALID_RECORD_STATE and not result.changed
    assert partition.in_flight() == before
    partition.acknowledge("m1", [ack(6, 7, ACCEPT)])
    assert partition.acknowledge("m1", [ack(5, 7, ACCEPT)]).error == ErrorCode.INVALID_RECORD_STATE
    assert partition.acquired_count == 18


def test_acks_with_nothing_in_flight_are_invalid_record_state():
    partition = make(start=5)
    assert partition.acknowledge("m", [ack(5, 6, ACCEPT)]).error == ErrorCode.INVALID_RECORD_STATE
    assert partition.acknowledge("m", [ack(0, 4, ACCEPT)]).error == 0   # below SPSO: skipped


@pytest.mark.parametrize("batches", [
    [AcknowledgementBatch(5, 4, (1,))],              # first > last
    [AcknowledgementBatch(0, 3, ())],                # no type
    [AcknowledgementBatch(0, 3, (1, 1))],            # wrong number of types
    [AcknowledgementBatch(0, 3, (9,))],              # unknown type
    [AcknowledgementBatch(0, 3, (1,)), AcknowledgementBatch(3, 4, (1,))],   # overlap
    [AcknowledgementBatch(8, 12, (1,))],             # past SPEO
])
def test_malformed_acks_are_invalid_request(batches):
    partition = make()
    partition.acquire("m", [(0, 9)], max_records=100)
    assert partition.acknowledge("m", batches).error == ErrorCode.INVALID_REQUEST
    assert partition.acquired_count == 10


def test_renew_extends_the_lock_and_needs_no_write():
    clock = MockClock()
    partition = make(clock)
    partition.acquire("m", [(0, 9)], max_records=100)
    clock.advance(LOCK_MS - 1)
    transition = partition.acknowledge("m", [ack(0, 9, RENEW)])
    assert (transition.error, transition.changed) == (0, False)
    clock.advance(1)
    assert not partition.expire_locks().changed
    assert partition.acquired_count == 10
    assert partition.next_deadline() == clock.monotonic_ms() + LOCK_MS - 1
    clock.advance(LOCK_MS)
    assert partition.expire_locks().changed
    assert states(partition) == [(0, 9, AVAILABLE, 1)]


# -- locks, releases and the delivery count limit --------------------------------


def test_an_expired_lock_makes_records_available_with_their_delivery_count():
    clock = MockClock()
    partition = make(clock)
    partition.acquire("m", [(0, 9)], max_records=100)
    clock.advance(LOCK_MS - 1)
    assert partition.expire_locks() == partition.expire_locks()   # nothing yet
    assert partition.acquired_count == 10
    clock.advance(1)
    transition = partition.expire_locks()
    assert transition.changed and transition.available
    assert states(partition) == [(0, 9, AVAILABLE, 1)]
    assert partition.next_deadline() is None
    assert partition.acknowledge("m", [ack(0, 9, ACCEPT)]).error == ErrorCode.INVALID_RECORD_STATE


def test_release_acquired_returns_a_members_records_with_one_delivery_less():
    partition = make()
    partition.acquire("m1", [(0, 4)], max_records=100)
    partition.acquire("m2", [(5, 9)], max_records=100)
    transition = partition.release_acquired("m1")
    assert transition.changed and transition.available
    assert states(partition) == [(0, 4, AVAILABLE, 0), (5, 9, ACQUIRED, 1)]
    assert not partition.release_acquired("m3").changed


def test_the_delivery_count_limit_archives_on_release_and_expiry():
    clock = MockClock()
    partition = make(clock, limit=2)
    partition.acquire("m", [(0, 4)], max_records=100)
    partition.acknowledge("m", [ack(0, 4, RELEASE)])
    assert partition.acquire("m", [(0, 4)], max_records=100) == [AcquiredRecords(0, 4, 2)]
    clock.advance(LOCK_MS)
    transition = partition.expire_locks()
    assert transition.changed and not transition.available and transition.dead_letters == []
    assert partition.start_offset == 5 and partition.in_flight() == []


def test_dead_letter_candidates_stay_pending_until_confirmed():
    clock = MockClock()
    partition = make(clock, limit=2, dead_letters=True)
    partition.acquire("m", [(0, 9)], max_records=100)
    partition.acknowledge("m", [ack(0, 9, RELEASE)])
    partition.acquire("m", [(0, 9)], max_records=100)
    rejected = partition.acknowledge("m", [ack(0, 1, REJECT)])
    assert rejected.dead_letters == [ArchivedRecords(0, 1, 2, "rejected")]
    released = partition.acknowledge("m", [ack(2, 4, RELEASE), ack(5, 9, ACCEPT)])
    assert released.dead_letters == [ArchivedRecords(2, 4, 2, "delivery_count_limit")]
    assert partition.start_offset == 0
    assert partition.pending_dead_letter_count == 5
    assert partition.pending_dead_letters() == [ArchivedRecords(0, 1, 2, "rejected"),
                                                ArchivedRecords(2, 4, 2, "delivery_count_limit")]
    assert partition.next_fetch_offset() == 10
    assert partition.acquire("m", [(0, 9)], max_records=100, fetch_offset=0) == []
    assert partition.state_batches() == [StateBatch(0, 1, 0, REJECTED_MARK + 2),
                                         StateBatch(2, 4, 0, 2), StateBatch(5, 9, 2, 2)]
    assert partition.confirm_dead_lettered(0, 1).changed
    assert partition.start_offset == 2
    assert partition.confirm_dead_lettered(2, 4).changed
    assert partition.start_offset == 10
    assert not partition.confirm_dead_lettered(2, 4).changed


def test_an_expired_lock_at_the_limit_is_a_dead_letter_candidate():
    clock = MockClock()
    partition = make(clock, limit=1, dead_letters=True)
    partition.acquire("m", [(0, 2)], max_records=100)
    clock.advance(LOCK_MS)
    transition = partition.expire_locks()
    assert transition.dead_letters == [ArchivedRecords(0, 2, 1, "delivery_count_limit")]


def test_records_near_the_limit_are_delivered_in_smaller_groups_then_alone():
    partition = make(limit=5)   # throttling from delivery count 3 on
    partition.acquire("m", [(0, 15)], max_records=100)
    for _ in range(2):
        partition.acknowledge("m", [ack(0, 15, RELEASE)])
        partition.acquire("m", [(0, 15)], max_records=100)
    partition.acknowledge("m", [ack(0, 15, RELEASE)])   # 0-15 delivered 3 times
    assert partition.acquire("m", [(0, 15)], max_records=100) == [AcquiredRecords(0, 7, 4)]
    assert partition.acquire("m", [(0, 15)], max_records=100, fetch_offset=8) == \
        [AcquiredRecords(8, 11, 4)]
    partition.acknowledge("m", [ack(0, 11, RELEASE)])   # 0-11 delivered 4 times: last attempt
    assert partition.acquire("m", [(0, 15)], max_records=100) == [AcquiredRecords(0, 0, 5)]


def test_a_throttled_record_is_not_added_to_a_response_already_holding_records():
    partition = make(limit=3)   # throttling from delivery count 2 on
    partition.acquire("m", [(0, 4)], max_records=100)
    partition.acknowledge("m", [ack(0, 4, ACCEPT, ACCEPT, RELEASE, ACCEPT, ACCEPT)])
    partition.acquire("m", [(0, 4)], max_records=100, fetch_offset=2)
    partition.acquire("m", [(5, 9)], max_records=100)
    partition.acknowledge("m", [ack(2, 2, RELEASE), ack(5, 9, RELEASE)])
    # 2 was delivered twice (last attempt), 5-9 once: 2 goes alone
    assert partition.acquire("m", [(0, 4), (5, 9)], max_records=100, fetch_offset=2) == \
        [AcquiredRecords(2, 2, 3)]
    assert partition.acquire("m", [(5, 9)], max_records=100) == [AcquiredRecords(5, 9, 2)]


# -- backoff ------------------------------------------------------------------------


def test_redelivery_delay_doubles_up_to_the_cap():
    assert [redelivery_delay_ms(n, 200, 1000) for n in (1, 2, 3, 4)] == [200, 400, 800, 1000]
    assert redelivery_delay_ms(3, 0, 1000) == 0
    assert redelivery_delay_ms(70, 200, 1000) == 1000
    assert redelivery_delay_ms(3, 200, 0) == 800


def test_backoff_holds_released_records_back_while_others_flow():
    clock = MockClock()
    partition = make(clock, limit=10, backoff_ms=200, backoff_max_ms=60_000)
    expected_delays = []
    for delivery in (1, 2, 3):
        acquired = partition.acquire("m", [(0, 0)], max_records=1, fetch_offset=0)
        assert acquired == [AcquiredRecords(0, 0, delivery)]
        released_at = clock.monotonic_ms()
        transition = partition.acknowledge("m", [ack(0, 0, RELEASE)])
        assert transition.changed and not transition.available
        assert partition.next_deadline() == released_at + 200 * 2 ** (delivery - 1)
        # other offsets flow meanwhile: the next read starts past the held-back record
        assert partition.next_fetch_offset() == partition.end_offset + 1
        new = partition.end_offset + 1
        assert partition.acquire("m", [(new, new)], max_records=1) == \
            [AcquiredRecords(new, new, 1)]
        assert partition.acquire("m", [(0, 0), (new, new)], max_records=5, fetch_offset=0) == []
        clock.advance(200 * 2 ** (delivery - 1) - 1)
        assert not partition.expire_locks().available
        assert partition.acquire("m", [(0, 0)], max_records=1, fetch_offset=0) == []
        clock.advance(1)
        assert partition.expire_locks().available
        assert partition.next_fetch_offset() == 0
        expected_delays.append(clock.monotonic_ms() - released_at)
    assert expected_delays == [200, 400, 800]


def test_backoff_applies_to_expired_locks_too():
    clock = MockClock()
    partition = make(clock, backoff_ms=200, backoff_max_ms=300)
    partition.acquire("m", [(0, 0)], max_records=1)
    partition.acknowledge("m", [ack(0, 0, RELEASE)])
    clock.advance(200)
    partition.expire_locks()
    partition.acquire("m", [(0, 0)], max_records=1)
    clock.advance(LOCK_MS)
    partition.expire_locks()
    assert partition.next_deadline() == clock.monotonic_ms() + 300   # 400 capped at 300


# -- the start offset, the log start and the persisted state ----------------------


def test_the_start_offset_waits_for_the_first_incomplete_record():
    partition = make()
    partition.acquire("m", [(0, 4), (5, 9)], max_records=100)
    partition.acknowledge("m", [ack(5, 9, ACCEPT)])
    assert partition.start_offset == 0
    partition.acknowledge("m", [ack(0, 3, ACCEPT)])
    assert partition.start_offset == 4
    partition.acknowledge("m", [ack(4, 4, GAP)])
    assert partition.start_offset == 10 and partition.in_flight() == []


def test_a_moved_log_start_offset_drops_the_offsets_below_it():
    partition = make()
    partition.acquire("m", [(0, 9)], max_records=100)
    partition.acknowledge("m", [ack(0, 9, RELEASE)])
    partition.acquire("m", [(0, 4)], max_records=100)
    assert partition.update_log_start_offset(3).changed
    assert partition.start_offset == 3
    assert states(partition) == [(3, 4, ACQUIRED, 2), (5, 9, AVAILABLE, 1)]
    assert partition.acknowledge("m", [ack(0, 4, ACCEPT)]).error == 0
    assert partition.start_offset == 5
    assert not partition.update_log_start_offset(2).changed
    assert partition.update_log_start_offset(50).changed
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (50, 50, 50)


def test_the_persisted_state_round_trips_through_a_new_leader():
    clock = MockClock()
    partition = make(clock, start=100)
    partition.acquire("m1", [(100, 109), (110, 119)], max_records=100)
    partition.acknowledge("m1", [ack(100, 101, RELEASE), ack(103, 104, ACCEPT),
                                 ack(105, 106, REJECT), ack(110, 119, RELEASE)])
    partition.acquire("m2", [(110, 119)], max_records=100)
    batches = partition.state_batches()
    assert batches == [StateBatch(100, 101, 0, 1), StateBatch(102, 102, 0, 0),
                       StateBatch(103, 104, 2, 1), StateBatch(105, 106, 4, 1),
                       StateBatch(107, 109, 0, 0), StateBatch(110, 119, 0, 1)]
    assert partition.delivery_complete_count == 4

    leader = SharePartition("g", "topic-id", "t", 0, clock=clock, max_in_flight_records=200,
                            delivery_count_limit=5, lock_duration_ms=LOCK_MS)
    assert leader.maybe_initialize(
        ShareState(error=0, state_epoch=3, start_offset=partition.start_offset,
                   batches=tuple(batches)), resolve_reset=lambda: 0) == 0
    assert leader.state_batches() == batches
    assert (leader.start_offset, leader.end_offset) == (100, 119)
    assert leader.delivery_complete_count == 4
    assert leader.next_fetch_offset() == 100
    acquired = leader.acquire("m3", [(100, 109), (110, 119)], max_records=100)
    assert acquired == [AcquiredRecords(100, 101, 2), AcquiredRecords(102, 102, 1),
                        AcquiredRecords(107, 109, 1), AcquiredRecords(110, 119, 2)]


def test_loading_fills_gaps_and_skips_leading_complete_batches():
    partition = make(start=10, batches=[StateBatch(10, 14, 2, 1), StateBatch(20, 24, 4, 3),
                                        StateBatch(25, 29, 0, 2), StateBatch(5, 12, 2, 1)])
    assert partition.start_offset == 15
    assert states(partition) == [(15, 19, AVAILABLE, 0), (20, 24, ARCHIVED, 3),
                                 (25, 29, AVAILABLE, 2)]
    assert partition.acquire("m", [(15, 19), (20, 29)], max_records=100) == \
        [AcquiredRecords(15, 19, 1), AcquiredRecords(25, 29, 3)]


def test_loading_makes_records_at_the_limit_pending_dead_letters():
    batches = [StateBatch(0, 1, 0, 5), StateBatch(2, 3, 0, 4)]
    with_dlq = make(limit=5, dead_letters=True, batches=batches)
    assert with_dlq.pending_dead_letters() == [ArchivedRecords(0, 1, 5, "delivery_count_limit")]
    assert with_dlq.acquire("m", [(0, 3)], max_records=100) == [AcquiredRecords(2, 2, 5)]   # last try: alone
    without = make(limit=5, batches=batches)
    assert without.pending_dead_letters() == []
    assert without.next_fetch_offset() == 0


def test_a_pending_reject_keeps_its_reason_and_count_through_a_new_leader():
    clock = MockClock()
    partition = make(clock, limit=5, dead_letters=True)
    partition.acquire("m", [(0, 3)], max_records=100)
    partition.acknowledge("m", [ack(0, 1, REJECT)])
    partition.acknowledge("m", [ack(2, 3, RELEASE)])
    partition.acquire("m", [(0, 3)], max_records=100)
    partition.acknowledge("m", [ack(2, 3, RELEASE)])
    batches = partition.state_batches()
    assert all(b.delivery_count >= 5 for b in batches if b.first_offset == 0)   # Kafka archives it

    leader = make(clock, limit=5, dead_letters=True, batches=batches)
    assert leader.pending_dead_letters() == [ArchivedRecords(0, 1, 1, "rejected")]
    assert leader.acquire("m2", [(0, 3)], max_records=100) == [AcquiredRecords(2, 3, 3)]


def test_a_confirmed_dead_letter_outranks_its_pending_state_in_the_share_coordinator():
    partition = make(MockClock(), limit=5, dead_letters=True)
    partition.acquire("m", [(0, 4)], max_records=100)
    partition.acknowledge("m", [ack(1, 2, REJECT), ack(3, 4, ACCEPT)])    # 0 still acquired
    pending = partition.state_batches()
    partition.confirm_dead_lettered(1, 2)
    confirmed = partition.state_batches()
    combined = combine(pending, confirmed, partition.start_offset)
    assert [(b.first_offset, b.last_offset, b.delivery_state) for b in combined] == \
        [(0, 0, int(AVAILABLE)), (1, 2, int(ARCHIVED)), (3, 4, int(ACKNOWLEDGED))]
