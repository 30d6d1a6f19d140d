"""kafkapy-features' input errors, as Kafka's FeatureCommand words them (stderr, exit 1),
before any connection is made."""
from __future__ import annotations

import pytest

from kafkapy.cli import features

B = ["--bootstrap-server", "127.0.0.1:1"]


@pytest.mark.parametrize("args, message", [
    (["upgrade", "--feature", "transaction.version"],
     "Can't parse feature=level string transaction.version: equals sign not found."),
    (["downgrade", "--feature", "transaction.version=x"],
     "Can't parse feature=level string transaction.version=x: unable to parse x as a short."),
    (["upgrade", "--feature", "a=40000"],
     "Can't parse feature=level string a=40000: unable to parse 40000 as a short."),
    (["upgrade"], "You must specify at least one feature to upgrade"),
    (["disable"], "You must specify at least one feature to disable"),
    (["upgrade", "--feature", "a=1", "--feature", "a=2"], "Feature a was specified more than once."),
    (["disable", "--feature", "a", "--feature", "a"], "Feature a was specified more than once."),
], ids=["no-equals", "not-a-number", "not-a-short", "upgrade-nothing", "disable-nothing",
        "upgrade-twice", "disable-twice"])
def test_bad_input(capsys, args, message):
    assert features.main(B + args) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", message + "\n")


def test_a_command_is_required(capsys):
    with pytest.raises(SystemExit) as exited:
        features.main(B)
    assert exited.value.code == 1
    assert "command" in capsys.readouterr().err
