"""``kafkapy-server-stop``: Kafka's ``bin/kafka-server-stop.sh`` for kafkapy brokers.

Finds the running kafkapy broker processes of this machine and sends each the signal named
by ``$SIGNAL`` (default ``TERM``, which starts the broker's controlled shutdown). Without
options every broker is signalled; ``--process-role=ROLE`` / ``--node-id=N`` signal only the
brokers whose configuration says so (when both are given, Kafka's line "When both node-id
and process-role are provided, the value for node-id will take precedence" is printed and
the node id decides). No broker at all: "No kafka server to stop", exit 1; a broker this user
may not signal: kill's "kill: (PID) - Operation not permitted" on stderr, exit 1.

Invariants (what keeps the tool from signalling anything else):
- a process is a kafkapy broker only when its own argument vector (``/proc/PID/cmdline``,
  not a ``ps`` line that could be confused by spaces) is one of the broker's entry points:
  ``python -m kafkapy PROPS ...``, ``kafkapy-server-start PROPS ...`` (run directly or as
  ``python .../kafkapy-server-start``); a process mentioning kafkapy anywhere else (an editor,
  a test runner, this tool) does not match;
- the tool never signals itself;
- a broker's node id is ``node.id``, else ``broker.id``, from its properties file *and* its
  ``--override key=value`` arguments (what the broker itself uses); its process role is
  ``process.roles``. Relative properties paths are resolved against the broker's own
  working directory (``/proc/PID/cwd``).

Differences from Kafka's script: overrides count (Kafka's script reads only the file); a
broker whose properties cannot be read is skipped with Kafka's message on stderr instead of
ending the whole run; both ``--node-id N`` and ``--node-id=N`` are accepted. Linux only
(``/proc``), like the script's ``ps ax`` branch.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from kafkapy.config.properties import load_properties, parse_override

_PROC = Path("/proc")
_SERVER_START = "kafkapy-server-start"
_BOTH_GIVEN = ("When both node-id and process-role are provided, the value for node-id "
               "will take precedence")
_NO_CONFIG = ("Can not find the configuration file in the current directory. Please make sure "
              "the kafka stop process and the start process are called in the same directory.")


@dataclass(frozen=True)
class BrokerProcess:
    """A running broker: its pid, its working directory and its arguments after the entry."""
    pid: int
    cwd: str
    args: tuple[str, ...]

    def settings(self) -> dict[str, str]:
        """Its properties file with its ``--override`` pairs applied; OSError if unreadable."""
        props_path, overrides = _split_args(self.args)
        if props_path is None:
            raise OSError("no properties file")
        settings = load_properties(os.path.join(self.cwd, props_path))
        settings.update(overrides)
        return settings


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.node_id is not None and args.process_role is not None:
        print(_BOTH_GIVEN)
    brokers = find_brokers()
    if not brokers:
        print("No kafka server to stop")
        return 1
    try:
        signum = _signal_number(os.environ.get("SIGNAL", "TERM"))
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    failed = False
    for broker in brokers:
        if _chosen(broker, args):
            failed |= not _signal(broker.pid, signum)
    return 1 if failed else 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        print(message, file=sys.stderr)
        self.print_usage(sys.stderr)
        sys.exit(1)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkapy-server-stop",
                     description="Stop the kafkapy brokers running on this machine "
                                 "(signal $SIGNAL, default TERM: a controlled shutdown).")
    parser.add_argument("--process-role", metavar="ROLE",
                        help="stop only the brokers whose process.roles is ROLE")
    parser.add_argument("--node-id", metavar="ID",
                        help="stop only the broker whose node.id (or broker.id) is ID; "
                             "takes precedence over --process-role")
    return parser


def find_brokers() -> list[BrokerProcess]:
    """Every kafkapy broker process visible in /proc, by pid."""
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(entry / "cwd")
        except OSError:             # gone meanwhile, or not ours to look at
            continue
        args = broker_args([a.decode(errors="surrogateescape") for a in argv if a])
        if args is not None:
            found.append(BrokerProcess(int(entry.name), cwd, tuple(args)))
    return sorted(found, key=lambda b: b.pid)


def broker_args(argv: list[str]) -> list[str] | None:
    """The arguments after a kafkapy broker entry point, or None when ``argv`` is not one."""
    if not argv:
        return None
    if os.path.basename(argv[0]) == _SERVER_START:
        return argv[1:]
    if not os.path.basename(argv[0]).startswith("python"):
        return None
    rest = argv[1:]
    while rest and rest[0].startswith("-") and rest[0] != "-m":
        rest = rest[1:]         # interpreter flags such as -u, -X dev
    if rest[:2] == ["-m", "kafkapy"]:
        return rest[2:]
    if rest and os.path.basename(rest[0]) == _SERVER_START:
        return rest[1:]
    return None


def _split_args(args: tuple[str, ...]) -> tuple[str | None, dict[str, str]]:
    """The properties path and the ``--override`` pairs of a broker's arguments."""
    path, overrides, i = None, {}, 0
    while i < len(args):
        arg = args[i]
        if arg == "--override" and i + 1 < len(args):
            key, value = parse_override(args[i + 1])
            overrides[key] = value
            i += 2
            continue
        if arg.startswith("--override="):
            key, value = parse_override(arg.removeprefix("--override="))
            overrides[key] = value
        elif path is None and not arg.startswith("-"):
            path = arg
        i += 1
    return path, overrides


def _chosen(broker: BrokerProcess, args: argparse.Namespace) -> bool:
    if args.node_id is None and args.process_role is None:
        return True
    try:
        settings = broker.settings()
    except (OSError, ValueError):
        print(_NO_CONFIG, file=sys.stderr)
        return False
    if args.node_id is not None:
        node_id = settings.get("node.id", settings.get("broker.id"))
        return node_id is not None and node_id.strip() == args.node_id
    return settings.get("process.roles", "").strip() == args.process_role


def _signal_number(name: str) -> int:
    text = name.strip().upper()
    if text.isdigit():
        return int(text)
    try:
        return int(getattr(signal, text if text.startswith("SIG") else f"SIG{text}"))
    except AttributeError:
        raise ValueError(f"kafkapy-server-stop: invalid signal specification: {name}") from None


def _signal(pid: int, signum: int) -> bool:
    """Signal ``pid``; False (said on stderr, as kill(1) says it) when not allowed."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass                    # it stopped by itself meanwhile
    except PermissionError:
        print(f"kill: ({pid}) - Operation not permitted", file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
