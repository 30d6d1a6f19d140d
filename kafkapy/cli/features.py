"""``kafkapy-features``: Kafka 3.9's ``bin/kafka-features.sh`` (FeatureCommand) for a
ZooKeeper-mode cluster.

``--bootstrap-server`` (``--command-config`` for client properties) and one command:

- ``describe``: one line per feature the answering broker supports (ApiVersions v4), by
  name: ``Feature: <name>\\tSupportedMinVersion: <n>\\tSupportedMaxVersion: <n>\\t
  FinalizedVersionLevel: <n>\\tEpoch: <epoch or ->`` (a feature not finalized shows 0);
- ``upgrade --feature NAME=LEVEL ... [--dry-run]``, ``downgrade --feature NAME=LEVEL ...
  [--unsafe] [--dry-run]``, ``disable --feature NAME ... [--unsafe] [--dry-run]``: one
  UpdateFeatures request (v1: upgrade type, validate only) to the controller, then one line
  per feature by name: ``<name> was upgraded to <n>.`` / ``<name> can be upgraded to <n>.``
  (dry run) / ``<name> was disabled.``, or ``Could not upgrade <name> to <n>. <message>`` /
  ``Can not ...`` (dry run); any failure ends with ``N out of M operation(s) failed.`` on
  stderr and exit 1.

Bad input as Kafka's: ``Can't parse feature=level string X: equals sign not found.``, ``You
must specify at least one feature to upgrade``, ``Feature X was specified more than once.``
(stderr, exit 1).  Differences from Kafka: no ``--metadata`` (``metadata.version`` exists in
KRaft mode only; a ZooKeeper-mode broker supports no such feature) and no
``--bootstrap-controller`` (there are no KRaft controllers).
"""
from __future__ import annotations

import argparse

import kafka.errors
from kafka.protocol.admin.cluster import UpdateFeaturesRequest
from kafka.protocol.metadata import ApiVersionsRequest

from kafkapy.cli import _common as common
from kafkapy.cli._common import CommandError, UsageError

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def main(argv: list[str] | None = None) -> int:
    return common.run(_execute, _parser(), argv, common.to_stderr)


def _parser() -> common.ToolParser:
    parser = common.ToolParser("kafkapy-features", "This tool manages feature flags in Kafka.")
    commands = parser.add_subparsers(dest="command", required=True,
                                     parser_class=argparse.ArgumentParser)
    commands.add_parser("describe", help="Describes the current active feature flags.")
    for name, what in (("upgrade", "Upgrade one or more feature flags."),
                       ("downgrade", "Downgrade one or more feature flags.")):
        sub = commands.add_parser(name, help=what)
        sub.add_argument("--feature", action="append",
                         help="A feature update, in feature=level format.")
        if name == "downgrade":
            sub.add_argument("--unsafe", action="store_true",
                             help="Perform this downgrade even if it may irreversibly "
                                  "destroy metadata.")
        sub.add_argument("--dry-run", action="store_true",
                         help=f"Validate this {name}, but do not perform it.")
    sub = commands.add_parser("disable", help="Disable one or more feature flags. This is "
                                              "the same as downgrading the version to zero.")
    sub.add_argument("--feature", action="append", help="A feature flag to disable.")
    sub.add_argument("--unsafe", action="store_true",
                     help="Disable this feature flag even if it may irreversibly destroy "
                          "metadata.")
    sub.add_argument("--dry-run", action="store_true",
                     help="Perform a dry-run of this disable operation.")
    return parser


def _execute(args: argparse.Namespace) -> int:
    common.require_bootstrap(args)
    if args.command == "describe":
        return _describe(args)
    updates = _updates(args)
    if not updates:
        raise UsageError(f"You must specify at least one feature to {args.command}")
    return _update(args, updates)


def _updates(args: argparse.Namespace) -> dict[str, tuple[int, int]]:
    """name -> (level, upgrade type), as FeatureCommand builds them."""
    if args.command == "upgrade":
        kind = UPGRADE
    else:
        kind = UNSAFE_DOWNGRADE if args.unsafe else SAFE_DOWNGRADE
    updates: dict[str, tuple[int, int]] = {}
    for item in args.feature or ():
        name, level = (item, 0) if args.command == "disable" else _name_and_level(item)
        if name in updates:
            raise UsageError(f"Feature {name} was specified more than once.")
        updates[name] = (level, kind)
    return updates


def _name_and_level(text: str) -> tuple[str, int]:
    name, equals, level = text.partition("=")
    if not equals:
        raise UsageError(f"Can't parse feature=level string {text}: equals sign not found.")
    try:
        value = int(level.strip())
        if not -32768 <= value <= 32767:
            raise ValueError(level)
    except ValueError:
        raise UsageError(f"Can't parse feature=level string {text}: unable to parse "
                         f"{level.strip()} as a short.") from None
    return name.strip(), value


def _describe(args: argparse.Namespace) -> int:
    admin = common.admin_client(args)
    try:
        response = common.send(admin, ApiVersionsRequest(
            client_software_name="kafkapy-features", client_software_version="1",
            min_version=4))
    finally:
        admin.close()
    common.check_error(response.error_code)
    finalized = {f.name: f.max_version_level for f in response.finalized_features or ()}
    epoch = response.finalized_features_epoch
    epoch_text = str(epoch) if epoch is not None and epoch >= 0 else "-"
    for feature in sorted(response.supported_features or (), key=lambda f: f.name):
        print(f"Feature: {feature.name}\tSupportedMinVersion: {feature.min_version}\t"
              f"SupportedMaxVersion: {feature.max_version}\t"
              f"FinalizedVersionLevel: {finalized.get(feature.name, 0)}\tEpoch: {epoch_text}")
    return 0


def _update(args: argparse.Namespace, updates: dict[str, tuple[int, int]]) -> int:
    request = UpdateFeaturesRequest(
        timeout_ms=60000, validate_only=args.dry_run, min_version=1, max_version=1,
        feature_updates=[UpdateFeaturesRequest.FeatureUpdateKey(
            feature=name, max_version_level=level, allow_downgrade=kind != UPGRADE,
            upgrade_type=kind) for name, (level, kind) in updates.items()])
    admin = common.admin_client(args)
    try:
        response = admin._manager.run(_to_controller, admin, request)
    finally:
        admin.close()
    errors = _errors(response, updates)
    failures = 0
    for name in sorted(updates):
        level = updates[name][0]
        what = f"disable {name}" if args.command == "disable" else (
            f"{args.command} {name} to {level}")
        if errors.get(name) is not None:
            failures += 1
            print(f"{'Can not' if args.dry_run else 'Could not'} {what}. {errors[name]}")
        else:
            done = "disabled." if args.command == "disable" else f"{args.command}d to {level}."
            print(f"{name}{' can be ' if args.dry_run else ' was '}{done}")
    if failures:
        raise CommandError(f"{failures} out of {len(updates)} operation(s) failed.")
    return 0


async def _to_controller(admin, request):
    return await admin._send_request_to_controller(
        request, get_errors_fn=lambda r: [kafka.errors.for_code(r.error_code)],
        raise_errors=False)


def _errors(response, updates) -> dict[str, str | None]:
    """Each feature's failure message (None: done), as Kafka's admin client completes
    its futures: a top-level error fails all; a feature left out of the answer fails."""
    if response.error_code:
        message = response.error_message or common.kafka_error_message(response.error_code)
        return {name: message for name in updates}
    errors: dict[str, str | None] = {
        name: f"The controller response did not contain a result for feature {name}"
        for name in updates}
    for result in response.results or ():
        if result.feature in errors:
            errors[result.feature] = None if result.error_code == 0 else (
                result.error_message or common.kafka_error_message(result.error_code))
    return errors
