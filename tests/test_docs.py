"""The README is the front door: keep its commands and its table in step with the code."""

import re
from pathlib import Path

from bootstrap.readers import READERS, UNKNOWN

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_test_command_exactly():
    commands = re.findall(r"```bash\n# 2\. Run the test suite.*\n(.+)\n```", README)
    assert len(commands) == 1
    assert commands[0] in (ROOT / ".ci" / "run").read_text().splitlines()


def test_readme_timing_table_matches_the_code_table():
    section = README.split("## When each setting takes effect", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    expected = [(", ".join(f"`{p}`" for p in r.patterns), r.read_when, r.applied_by) for r in READERS]
    expected.append(("anything else", UNKNOWN.read_when, UNKNOWN.applied_by))
    actual = [tuple(cell.strip() for cell in row.strip("|").split("|")) for row in rows]
    assert [(a, b, c.replace("`", "")) for a, b, c in actual] == [(a, b, c) for a, b, c in expected]


def test_readme_counts_the_rejected_inputs():
    from test_train_stub import BAD_INPUTS

    assert f"feeds {len(BAD_INPUTS)} rejected inputs" in README
