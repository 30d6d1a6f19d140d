"""The conformance cases of this run: every case generated for the API versions kafkapy
advertises."""
from __future__ import annotations

from kafkapy.handlers import build_registry
from tests.conformance.cases import all_cases


ADVERTISED = {s.key: (s.min_version, s.max_version) for s in build_registry().values()}


CASES = all_cases(ADVERTISED)
