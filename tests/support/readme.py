"""Reading README.md as the README tests do: its sections, fenced blocks (``sh``, ``python``) and
logical lines, the README's ports replaced by a test's own, and the replica-moving commands of its
walkthrough."""
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
    return fenced_blocks(heading, "sh")


def fenced_blocks(heading: str, language: str) -> list[str]:
    """The section's blocks fenced as ```` ```<language> ````, in order."""
    return re.findall(rf"^```{re.escape(language)}\n(.*?)^```", section(heading), re.S | re.M)


def localize(text: str, ports: dict[str, int]) -> str:
    """``text`` with each README port (a key of ``ports``, e.g. "9092") replaced by its value
    where it follows a colon, as in ``127.0.0.1:9092`` (not in names such as
    ``data/broker-9093``)."""
    for readme_port, port in ports.items():
        text = re.sub(rf"(?<=:){readme_port}\b", str(port), text)
    return text


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
