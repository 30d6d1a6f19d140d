"""kafkapy-delegation-tokens: Kafka's kafka-delegation-tokens.sh (DelegationTokenCommand).

``--bootstrap-server`` and ``--command-config`` (the client's security settings: tokens
are served only over an authenticated connection) are required, and exactly one action:

- ``--create --max-life-time-period MS [--renewer-principal User:x ...]
  [--owner-principal User:y]``: prints the call, ``Created delegation token with tokenId :
  <id>`` and the token's row;
- ``--renew --hmac B64 --renew-time-period MS``: ``Completed renew operation. New expiry
  date : <date>``;
- ``--expire --hmac B64 --expiry-time-period MS`` (-1: at once): ``Completed expire
  operation. New expiry date : <date>``;
- ``--describe [--owner-principal User:x ...]``: ``Total number of tokens : n`` and a row
  each.  Without an owner Kafka's tool sends an empty owner list, which the broker answers
  with no tokens; this tool does the same.

Rows are Kafka's ``%-15s %-30s %-15s %-15s %-25s %-15s %-15s %-15s`` of TOKENID, HMAC
(base64), OWNER, REQUESTER, RENEWERS (``[User:a, User:b]``), ISSUEDATE, EXPIRYDATE and
MAXDATE (``yyyy-MM-dd'T'HH:mm``, local time).  A broker error goes to stderr as the Java
exception text (``org.apache.kafka.common.errors.DelegationTokenDisabledException: ...``),
exit 1.
"""
from __future__ import annotations

import argparse
import base64
import binascii
import sys
import time

from kafkapy.api.principal import KafkaPrincipal
from kafkapy.cli import _common as common
from kafkapy.protocol.delegation_token_apis import (CreateDelegationTokenRequest,
                                                    DescribeDelegationTokenRequest,
                                                    ExpireDelegationTokenRequest,
                                                    RenewDelegationTokenRequest)

_ACTIONS = ("create", "renew", "expire", "describe")
_LISTING = "--create, --renew, --expire or --describe"
_ROW = "\n%-15s %-30s %-15s %-15s %-25s %-15s %-15s %-15s\n"
# Kafka's option descriptions.
_HELP = {
    "create": "Create a new delegation token. Use --renewer-principal option to pass renewer "
              "principals.",
    "renew": "Renew delegation token. Use --renew-time-period option to set renew time period.",
    "expire": "Expire delegation token. Use --expiry-time-period option to expire the token.",
    "describe": "Describe delegation tokens for the given principals. Use --owner-principal "
                "to pass owner/renewer principals. If --owner-principal option is not "
                "supplied, all the user-owned tokens and tokens where the user has Describe "
                "permissions will be returned.",
    "max-life-time-period": "Max life period for the token in milliseconds. If the value is "
                            "-1, then token max life time will default to the server side "
                            "config value of (delegation.token.max.lifetime.ms).",
    "renew-time-period": "Renew time period in milliseconds. If the value is -1, then the "
                         "renew time period will default to the server side config value of "
                         "(delegation.token.expiry.time.ms).",
    "expiry-time-period": "Expiry time period in milliseconds. If the value is -1, then the "
                          "token will get invalidated immediately.",
}


def _parser() -> common.ToolParser:
    parser = common.ToolParser(
        "kafkapy-delegation-tokens",
        "This tool helps to create, renew, expire, or describe delegation tokens.")
    for action in _ACTIONS:
        parser.add_argument(f"--{action}", action="store_true", help=_HELP[action])
    principal = "is a Kafka principal. They should be in principalType:name format."
    parser.add_argument("--owner-principal", action="append", default=[],
                        help=f"owner {principal}")
    parser.add_argument("--renewer-principal", action="append", default=[],
                        help=f"renewer {principal}")
    parser.add_argument("--max-life-time-period", type=int, help=_HELP["max-life-time-period"])
    parser.add_argument("--renew-time-period", type=int, help=_HELP["renew-time-period"])
    parser.add_argument("--expiry-time-period", type=int, help=_HELP["expiry-time-period"])
    parser.add_argument("--hmac", help="HMAC of the delegation token")
    return parser


def _check_args(args: argparse.Namespace, action: str) -> None:
    """Kafka's checkArgs: required options per action, then the ones an action refuses."""
    required = {"create": ("max_life_time_period",), "renew": ("hmac", "renew_time_period"),
                "expire": ("hmac", "expiry_time_period"), "describe": ()}[action]
    missing = [n for n in ("bootstrap_server", "command_config", *required)
               if getattr(args, n) in (None, [])]
    if missing:
        raise common.UsageError(f'Missing required argument "[{missing[0].replace("_", "-")}]"')
    invalid = {"create": ("hmac", "renew_time_period", "expiry_time_period"),
               "renew": ("renewer_principal", "max_life_time_period", "expiry_time_period",
                         "owner_principal"),
               "expire": ("max_life_time_period", "renew_time_period", "owner_principal"),
               "describe": ("renew_time_period", "max_life_time_period", "hmac",
                            "expiry_time_period")}[action]
    for name in invalid:
        if getattr(args, name) not in (None, []):
            raise common.UsageError(f'Option "{action}" can\'t be used with option '
                                    f'"{name.replace("_", "-")}"')


def _principals(values: list[str]) -> list[KafkaPrincipal]:
    try:
        return [KafkaPrincipal.parse(v.strip()) for v in values]
    except ValueError as err:
        raise common.UsageError(str(err)) from None


def _date(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M", time.localtime(ms / 1000))


def _list(principals) -> str:
    return "[" + ", ".join(str(p) for p in principals) + "]"


def _check(code: int) -> None:
    if code:
        raise common.CommandError(common.java_exception_text(code))


def _print_tokens(rows) -> None:
    """rows: (id, hmac, owner, requester, renewers, issue, expiry, max)."""
    out = _ROW % ("TOKENID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUEDATE",
                  "EXPIRYDATE", "MAXDATE")
    for token_id, hmac, owner, requester, renewers, issued, expiry, max_ts in rows:
        out += _ROW % (token_id, base64.b64encode(bytes(hmac)).decode(), owner, requester,
                       _list(renewers), _date(issued), _date(expiry), _date(max_ts))
    sys.stdout.write(out)


def _create(admin, args) -> None:
    renewers = _principals(args.renewer_principal)
    owners = _principals(args.owner_principal)
    print(f"Calling create token operation with renewers :{_list(renewers)} , "
          f"max-life-time-period :{args.max_life_time_period}")
    owner = owners[0] if owners else None
    request = CreateDelegationTokenRequest(
        owner_principal_type=owner.principal_type if owner else None,
        owner_principal_name=owner.name if owner else None,
        renewers=[CreateDelegationTokenRequest.CreatableRenewers(
            principal_type=r.principal_type, principal_name=r.name) for r in renewers],
        max_lifetime_ms=args.max_life_time_period)
    response = common.send(admin, request)
    _check(response.error_code)
    print(f"Created delegation token with tokenId : {response.token_id}")
    requester = getattr(response, "token_requester_principal_name", None)
    requester_text = (f"{response.token_requester_principal_type}:{requester}"
                      if requester else f"{response.principal_type}:{response.principal_name}")
    _print_tokens([(response.token_id, response.hmac,
                    f"{response.principal_type}:{response.principal_name}", requester_text,
                    renewers, response.issue_timestamp_ms, response.expiry_timestamp_ms,
                    response.max_timestamp_ms)])


def _hmac(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as err:
        raise common.UsageError(f"Illegal base64 HMAC: {err}") from None


def _renew(admin, args) -> None:
    print(f"Calling renew token operation with hmac :{args.hmac} , "
          f"renew-time-period :{args.renew_time_period}")
    response = common.send(admin, RenewDelegationTokenRequest(
        hmac=_hmac(args.hmac), renew_period_ms=args.renew_time_period))
    _check(response.error_code)
    sys.stdout.write("Completed renew operation. New expiry date : "
                     f"{_date(response.expiry_timestamp_ms)}")


def _expire(admin, args) -> None:
    print(f"Calling expire token operation with hmac :{args.hmac} , "
          f"expire-time-period :{args.expiry_time_period}")
    response = common.send(admin, ExpireDelegationTokenRequest(
        hmac=_hmac(args.hmac), expiry_time_period_ms=args.expiry_time_period))
    _check(response.error_code)
    sys.stdout.write("Completed expire operation. New expiry date : "
                     f"{_date(response.expiry_timestamp_ms)}")


def _describe(admin, args) -> None:
    owners = _principals(args.owner_principal)
    if owners:
        print(f"Calling describe token operation for owners: {_list(owners)}")
    else:
        print("Calling describe token operation for current user.")
    response = common.send(admin, DescribeDelegationTokenRequest(owners=[
        DescribeDelegationTokenRequest.DescribeDelegationTokenOwner(
            principal_type=o.principal_type, principal_name=o.name) for o in owners]))
    _check(response.error_code)
    sys.stdout.write(f"Total number of tokens : {len(response.tokens)}")
    _print_tokens([
        (t.token_id, t.hmac, f"{t.principal_type}:{t.principal_name}",
         f"{t.token_requester_principal_type}:{t.token_requester_principal_name}"
         if getattr(t, "token_requester_principal_name", None)
         else f"{t.principal_type}:{t.principal_name}",
         [f"{r.principal_type}:{r.principal_name}" for r in t.renewers],
         t.issue_timestamp, t.expiry_timestamp, t.max_timestamp) for t in response.tokens])


def _body(args: argparse.Namespace) -> int:
    action = common.single_action(args, _ACTIONS, _LISTING)
    _check_args(args, action)
    admin = common.admin_client(args)
    try:
        {"create": _create, "renew": _renew, "expire": _expire, "describe": _describe}[action](
            admin, args)
    finally:
        admin.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    return common.run(_body, _parser(), argv, common.to_stderr)


if __name__ == "__main__":
    sys.exit(main())
