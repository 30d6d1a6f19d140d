"""What a run found: differences per case, and which response fields were compared.

``RESULTS`` maps case id -> differences (empty when both answers agreed).  ``COMPARED``
holds (api key, field path) for every response field that some case compared (present in
Kafka's normalised answer).  ``write()`` puts the differences in ``REPORT_PATH`` and the
uncovered fields, derived from Kafka's JSON schemas in ``../shared/kafka-protocol/messages``,
in ``COVERAGE_PATH``.
"""
from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from pathlib import Path

from kafkapy.protocol.messages import RESPONSES
from tests.support.broker_process import ROOT

# /tmp/team is where the engineers fixing differences read it; elsewhere (CI) under .cache.
_DEFAULT_DIR = Path("/tmp/team") if Path("/tmp/team").is_dir() else ROOT / ".cache" / "conformance"
REPORT_PATH = Path(os.environ.get("CONFORMANCE_REPORT", _DEFAULT_DIR / "conformance-report.txt"))
COVERAGE_PATH = REPORT_PATH.with_name("conformance-uncovered-fields.txt")
# A run of only some cases (-k) writes here, so it never hides the last full run's report.
PARTIAL_PATH = REPORT_PATH.with_name("conformance-report-partial.txt")
SCHEMA_DIR = ROOT.parent / "shared" / "kafka-protocol" / "messages"

RESULTS: dict[str, list] = {}
VERSIONS: dict[int, set[int]] = defaultdict(set)
COMPARED: set[tuple[int, str]] = set()


def record(case, differences: list, kafka_tree) -> None:
    RESULTS[case.id] = differences
    VERSIONS[case.api_key].add(case.version)
    for path in _paths(kafka_tree):
        COMPARED.add((case.api_key, path))


def _paths(tree, prefix: str = ""):
    if isinstance(tree, dict):
        for key, value in tree.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            yield from _paths(value, path)
    elif isinstance(tree, list):
        for item in tree:
            yield from _paths(item, prefix)


def _load_schema(api_key: int) -> dict | None:
    name = RESPONSES[api_key].name
    path = SCHEMA_DIR / f"{name}.json"
    if not path.exists():
        return None
    text = "\n".join(line for line in path.read_text().splitlines()
                     if not line.strip().startswith("//"))
    return json.loads(text)


def _in_versions(spec: str, version: int) -> bool:
    if spec == "none":
        return False
    lo, _, hi = spec.partition("-")
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    return int(lo) <= version <= int(hi or lo)


def schema_fields(api_key: int, version: int) -> list[str]:
    """Leaf field paths (kafka-python's snake names) of the response at ``version``."""
    schema = _load_schema(api_key)
    if schema is None:
        return []
    common = {s["name"]: s for s in schema.get("commonStructs", [])}
    return list(_walk(schema["fields"], RESPONSES[api_key]._struct, version, common, ""))


def _walk(fields, struct, version, common, prefix):
    by_json = {(f._json or {}).get("name"): f for f in struct._fields}
    for spec in fields:
        if not _in_versions(spec.get("versions", "0+"), version):
            continue
        ours = by_json.get(spec["name"]) or _by_suffix(struct, _snake(spec["name"]))
        name = ours.name if ours is not None else _snake(spec["name"])
        path = f"{prefix}.{name}" if prefix else name
        children = spec.get("fields")
        inner = spec["type"].removeprefix("[]")
        if children is None and inner in common:
            children = common[inner]["fields"]
        if children and ours is not None:
            yield from _walk(children, ours, version, common, path)
        else:
            yield path


def _by_suffix(struct, snake: str):
    """kafka-python sometimes shortens a name (TopicAuthorizedOperations ->
    authorized_operations): the longest of its field names that ends the schema's name."""
    found = [f for f in struct._fields if snake.endswith(f.name)]
    return max(found, key=lambda f: len(f.name)) if found else None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def uncovered() -> dict[str, dict[str, list[int]]]:
    """API name -> field path -> advertised versions where it exists but was never compared."""
    out: dict[str, dict[str, list[int]]] = {}
    for api_key, versions in sorted(VERSIONS.items()):
        missing: dict[str, list[int]] = defaultdict(list)
        for version in sorted(versions):
            for path in schema_fields(api_key, version):
                if (api_key, path) not in COMPARED:
                    missing[path].append(version)
        if missing:
            out[RESPONSES[api_key].name] = dict(missing)
    return out


def _versions_text(versions: list[int]) -> str:
    return f"v{versions[0]}" + (f"-{versions[-1]}" if len(versions) > 1 else "")


def write(full: bool) -> None:
    """The difference report (and, for a full run, the uncovered fields)."""
    target = REPORT_PATH if full else PARTIAL_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = [summary(target), ""]
    from tests.conformance.known import KNOWN_DIFFERENCES
    for case_id, differences in sorted(RESULTS.items()):
        mark = " [known]" if case_id in KNOWN_DIFFERENCES else ""
        for d in differences:
            lines.append(f"{case_id}{mark}\t{d.path}\tkafka={d.kafka!r}\tkafkapy={d.ours!r}")
    target.write_text("\n".join(lines) + "\n")
    if not full:
        return
    cov = []
    for api, fields in uncovered().items():
        for path, versions in fields.items():
            cov.append(f"{api}\t{path}\t{_versions_text(versions)}")
    COVERAGE_PATH.write_text("\n".join(cov) + "\n")


def summary(target: Path = REPORT_PATH) -> str:
    failing = {c: d for c, d in RESULTS.items() if d}
    fields = sum(len(d) for d in failing.values())
    dropped = sum(1 for d in failing.values() for x in d if x.path == "<connection>")
    versions = sum(len(v) for v in VERSIONS.values())
    gaps = sum(len(f) for f in uncovered().values())
    return (f"conformance: {len(RESULTS)} cases, {len(VERSIONS)} APIs, {versions} versions; "
            f"{len(failing)} cases differ ({fields} fields, {dropped} one-sided drops); "
            f"{gaps} response fields uncovered; report {target}")
