"""Record batches: v2 header view, validation and patching (hot path, ``batch``);
record-level building/decoding for tests, control batches and the cleaner (``record``);
record-level checks where Kafka needs them (``validation``); magic 0/1 message sets
and their up-conversion to v2 (``legacy``)."""
from kafkapy.records.batch import (BatchHeader, RecordError, check_produce_request,
                                   iter_headers, patch_for_append, read_header,
                                   validate_batches, validate_for_append)
from kafkapy.records.record import Record, build_batch, build_control_batch, decode_records

__all__ = ["BatchHeader", "RecordError", "check_produce_request", "iter_headers",
           "patch_for_append", "read_header", "validate_batches", "validate_for_append",
           "Record", "build_batch", "build_control_batch", "decode_records"]
