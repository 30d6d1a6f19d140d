"""AlterPartition requests as a broker sends them to the controller."""
from __future__ import annotations

from kafkapy.metadata.topics import parse_topic_id
from kafkapy.protocol.inter_broker import AlterPartitionRequest


TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


_T = AlterPartitionRequest.TopicData


_P = _T.PartitionData


_B = _P.BrokerState


def request(broker_id, broker_epoch, parts, topic_id=None, version=3):
    """``parts``: (partition, leader_epoch, new_isr, partition_epoch)."""
    tid = parse_topic_id(TOPIC_ID) if topic_id is None else topic_id
    return AlterPartitionRequest[version](broker_id=broker_id, broker_epoch=broker_epoch, topics=[
        _T(topic_name="t", topic_id=tid, partitions=[
            _P(partition_index=p, leader_epoch=le, new_isr=list(isr),
               new_isr_with_epochs=[_B(broker_id=b, broker_epoch=-1) for b in isr],
               leader_recovery_state=0, partition_epoch=pe)
            for p, le, isr, pe in parts])])
