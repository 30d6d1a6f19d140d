"""Delegation token messages kafka-python lacks, from Kafka 3.9's schemas in ``protocol/``.

CreateDelegationToken (38, v0-3), RenewDelegationToken (39, v0-2), ExpireDelegationToken
(40, v0-2) and DescribeDelegationToken (41, v0-3).  The JSON files are Kafka 3.9's,
unchanged, so the wire bytes are Kafka's; importing this module registers the classes in
``messages.REQUESTS`` / ``RESPONSES``.
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from kafkapy.protocol import messages
from kafkapy.protocol.schema_package import ensure_schema_package

_SCHEMAS = ensure_schema_package()


class CreateDelegationTokenRequest(ApiMessage, load_json=_SCHEMAS): pass
class CreateDelegationTokenResponse(ApiMessage, load_json=_SCHEMAS): pass
class RenewDelegationTokenRequest(ApiMessage, load_json=_SCHEMAS): pass
class RenewDelegationTokenResponse(ApiMessage, load_json=_SCHEMAS): pass
class ExpireDelegationTokenRequest(ApiMessage, load_json=_SCHEMAS): pass
class ExpireDelegationTokenResponse(ApiMessage, load_json=_SCHEMAS): pass
class DescribeDelegationTokenRequest(ApiMessage, load_json=_SCHEMAS): pass
class DescribeDelegationTokenResponse(ApiMessage, load_json=_SCHEMAS): pass


for _request, _response in ((CreateDelegationTokenRequest, CreateDelegationTokenResponse),
                            (RenewDelegationTokenRequest, RenewDelegationTokenResponse),
                            (ExpireDelegationTokenRequest, ExpireDelegationTokenResponse),
                            (DescribeDelegationTokenRequest, DescribeDelegationTokenResponse)):
    messages.register(_request, _response)
