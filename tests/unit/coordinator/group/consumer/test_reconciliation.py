"""One member's reconciliation step (Kafka's CurrentAssignmentBuilder): revoke first, then
take only partitions no other member owns, stable at the target epoch."""
from __future__ import annotations

import uuid

import pytest

from kafkapy.coordinator.group.consumer.reconciliation import FencedMember, reconcile
from kafkapy.coordinator.group.consumer.types import Member, MemberState, Subscription, assignment

T = uuid.UUID(int=1)
U = uuid.UUID(int=2)
SUB = Subscription("c", "/h", topic_names=("t",))


def member(epoch, assigned=(), pending=(), state=MemberState.STABLE, previous=-1):
    return Member("m", SUB, epoch, previous, state, assignment(assigned), assignment(pending))


def free(_topic, _partition):
    return -1


def test_a_reconciled_member_stays_as_it_is():
    m = member(3, [(T, {0, 1})])
    assert reconcile(m, 3, assignment([(T, {0, 1})]), free, None) is m


def test_new_partitions_are_taken_at_the_target_epoch():
    m = member(3, [(T, {0})])
    out = reconcile(m, 4, assignment([(T, {0, 1})]), free, assignment([(T, {0})]))
    assert (out.state, out.member_epoch, out.previous_member_epoch) == (MemberState.STABLE, 4, 3)
    assert out.assigned == assignment([(T, {0, 1})]) and out.pending_revocation == {}


def test_partitions_to_revoke_keep_the_member_at_its_epoch_until_it_reports_them_gone():
    m = member(3, [(T, {0, 1})])
    target = assignment([(T, {1}), (U, {0})])
    revoking = reconcile(m, 4, target, free, assignment([(T, {0, 1})]))
    assert revoking.state is MemberState.UNREVOKED_PARTITIONS
    assert revoking.member_epoch == 3
    assert revoking.assigned == assignment([(T, {1})])
    assert revoking.pending_revocation == assignment([(T, {0})])
    # still reporting partition 0: nothing moves
    assert reconcile(revoking, 4, target, free, assignment([(T, {0, 1})])) is revoking
    # not reporting at all counts as still owning
    assert reconcile(revoking, 4, target, free, None) is revoking
    done = reconcile(revoking, 4, target, free, assignment([(T, {1})]))
    assert (done.state, done.member_epoch) == (MemberState.STABLE, 4)
    assert done.assigned == target and done.pending_revocation == {}


def test_a_partition_still_owned_elsewhere_is_not_given_until_released():
    owners = {(T, 1): 5}

    def epoch_of(topic, partition):
        return owners.get((topic, partition), -1)

    m = member(3, [(T, {0})])
    target = assignment([(T, {0, 1})])
    waiting = reconcile(m, 6, target, epoch_of, assignment([(T, {0})]))
    assert (waiting.state, waiting.member_epoch) == (MemberState.UNRELEASED_PARTITIONS, 6)
    assert waiting.assigned == assignment([(T, {0})])
    owners.clear()
    taken = reconcile(waiting, 6, target, epoch_of, assignment([(T, {0})]))
    assert (taken.state, taken.assigned) == (MemberState.STABLE, target)


def test_revocation_reported_already_gone_moves_on_at_once():
    """The member already dropped the partitions the target takes away (it reported
    owning only what it keeps): no UNREVOKED step."""
    m = member(2, [(T, {0, 1})])
    out = reconcile(m, 3, assignment([(T, {1})]), free, assignment([(T, {1})]))
    assert (out.state, out.member_epoch, out.assigned) == (
        MemberState.STABLE, 3, assignment([(T, {1})]))


@pytest.mark.parametrize("owned", [None, assignment([(T, {0})])])
def test_an_unknown_state_fences_unless_the_member_owns_nothing(owned):
    m = member(3, [(T, {0})], state=MemberState.UNKNOWN)
    with pytest.raises(FencedMember):
        reconcile(m, 4, assignment([(T, {0})]), free, owned)
    out = reconcile(m, 4, assignment([(T, {0})]), free, {})
    assert (out.state, out.member_epoch) == (MemberState.STABLE, 4)
