"""Differences kept on purpose, each with its reason; their cases are xfail(strict=True).

Only for answers where matching Kafka would be wrong or meaningless (for example where Kafka
itself answers UNKNOWN_SERVER_ERROR for a request it cannot handle).  Any other difference
must be fixed in kafkapy, not listed here.  Keys are exact case ids.
"""
from __future__ import annotations

KNOWN_DIFFERENCES: dict[str, str] = {
    "Produce-v9-null-records": "Kafka 3.9 hits a NullPointerException on null records of a "
                               "partition it would append to and never answers (the "
                               "connection stalls); kafkapy closes the connection.",
    "OffsetFetch-v8-no-groups":
        "Kafka 3.9 never answers an OffsetFetch v8+ naming no groups (nothing completes its "
        "combined result over zero groups); kafkapy answers with an empty group list.",
    **{f"ElectLeaders-v{v}-invalid-election-type":
       "Kafka 3.9 answers UNKNOWN_SERVER_ERROR (its enum lookup throws); kafkapy answers "
       "INVALID_REQUEST naming the election type." for v in (1, 2)},
    **{f"IncrementalAlterConfigs-v{v}-invalid-operation":
       "Kafka 3.9 answers UNKNOWN_SERVER_ERROR (its enum lookup throws); kafkapy answers "
       "INVALID_REQUEST naming the operation." for v in (0, 1)},
    **{f"Produce-v{v}-garbage-size-overflow":
       "Kafka 3.9 adds the 12-byte entry overhead to a size field of 2^31-1 in an int, gets "
       "a negative batch size (IllegalArgumentException) and fails the whole request with "
       "UNKNOWN_SERVER_ERROR; kafkapy reads the entry as longer than the bytes sent, as any "
       "partial entry: INVALID_RECORD from v3, nothing appended before."
       for v in range(12)},
    **{f"Produce-v{v}-short-v2-batch":
       "Kafka 3.9 reads the producer id past the end of a v2 batch shorter than its header "
       "(IndexOutOfBoundsException) and fails the whole request with UNKNOWN_SERVER_ERROR; "
       "kafkapy refuses that partition with CORRUPT_MESSAGE." for v in range(12)},
    **{f"IncrementalAlterConfigs-v{v}-logger-other-broker":
       "Kafka 3.9's BROKER_LOGGER check quotes its own node id as the one received "
       "('Expected 1, but received 1'); kafkapy uses the same words with the id it received."
       for v in (0, 1)},
}


# APIs Kafka 3.9 advertises that kafkapy does not serve yet (the README's "Not yet" list);
# ApiVersions cases compare every other entry, so an API missing from this list and from
# kafkapy still fails.
NOT_YET_SERVED: dict[int, str] = {
    38: "CreateDelegationToken: delegation tokens", 39: "RenewDelegationToken: delegation tokens",
    40: "ExpireDelegationToken: delegation tokens",
    41: "DescribeDelegationToken: delegation tokens",
    49: "AlterClientQuotas: client quotas",
    57: "UpdateFeatures: feature changes through the controller",
    58: "Envelope: forwarding to a controller",
    68: "ConsumerGroupHeartbeat: KIP-848 consumer groups",
    69: "ConsumerGroupDescribe: KIP-848 consumer groups",
}


def drop_not_yet_served(api_key: int, kafka_tree):
    """Kafka's ApiVersions answer without the entries of ``NOT_YET_SERVED``."""
    if api_key != 18 or not isinstance(kafka_tree, dict) or not kafka_tree.get("api_keys"):
        return kafka_tree
    kept = [e for e in kafka_tree["api_keys"] if e.get("api_key") not in NOT_YET_SERVED]
    return {**kafka_tree, "api_keys": kept}
