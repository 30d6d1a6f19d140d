"""ApiVersions (18): the advertised ranges, features, and a malformed client name."""
from __future__ import annotations

from tests.conformance.cases import for_api
from tests.conformance.cases.common import case


@for_api(18)
def api_versions(v: int):
    yield case("ordinary", {"client_software_name": "conformance",
                            "client_software_version": "1.0"})
    if v >= 3:
        yield case("bad-software-name", {"client_software_name": "-bad name",
                                         "client_software_version": "1.0"})
        yield case("empty-software-name", {"client_software_name": "",
                                           "client_software_version": ""})
