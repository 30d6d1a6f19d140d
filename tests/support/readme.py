"""Reading README.md as the README tests do: its sections, shell blocks and logical lines, and
the replica-moving commands of its walkthrough."""
from __future__ import annotations

import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


README = ROOT / "README.md"


def section(heading: str) -> str:
    text = README.read_text()
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"README.md has no '## {heading}' section"
    return m.group(1)


def sh_blocks(heading: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", section(heading), re.S | re.M)


def logical_lines(block: str) -> list[str]:
    """The block's commands: continuation lines joined, blank and comment lines dropped."""
    joined = re.sub(r"\\\n\s*", "", block)
    return [line.strip() for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def moving_replicas_commands() -> tuple[list[str], list[str]]:
    """The "Moving replicas" section's sh block: (variable assignments, commands); each
    command runs after the assignments (also run on the cluster fixture, by
    tests/cli/test_reassign_partitions.py)."""
    (block,) = sh_blocks("Moving replicas")
    lines = logical_lines(block)
    assignments = [line for line in lines if re.match(r"^[A-Za-z_]\w*=", line)]
    return assignments, [line for line in lines if line not in assignments]
