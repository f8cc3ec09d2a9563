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


def _preset_vars(name: str) -> dict:
    """A shipped preset's variables, with those of the presets it extends."""
    import yaml

    data = yaml.safe_load((ROOT / "conf" / "env" / f"{name}.yaml").read_text())
    merged = {}
    for parent in data.get("defaults", []):
        if isinstance(parent, str) and not parent.startswith(("/", "_")):
            merged.update(_preset_vars(parent))
    merged.update(data.get("vars") or {})
    return merged


def test_readme_presets_table_lists_each_presets_variables():
    section = README.split("## Presets", 1)[1].split("\n#", 1)[0]
    for name in ("cpu_debug", "cpu_debug_detail", "a100", "h100"):
        row = next(line for line in section.splitlines() if line.startswith(f"| `{name}`"))
        listed = dict(item.strip("`").split("=", 1) for item in re.findall(r"`[A-Z_]+=[^`]*`", row.split("|")[-2]))
        if name == "h100":
            assert "as `a100`" in row and _preset_vars("h100") == _preset_vars("a100")
            continue
        assert listed == {k: str(v) for k, v in _preset_vars(name).items()}, name
