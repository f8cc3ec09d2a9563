"""CONTRIBUTING.md's recipes, followed: each lists every file its change touches, checked against an example that
was made that way (``Files it touches (checked against `EXAMPLE`):``, then one bullet per file).

Each listed file exists and holds the example (a bullet's ``(as `X`)`` names its own, where the file changes only
for some of its kind); every file of the repository that names the example is listed; and the files that hold every
one of its kind hold each. So a recipe that misses a file, or names one that is gone, fails here."""

import re
from pathlib import Path
from typing import Dict, List, Optional, Pattern, Tuple

import pytest

from bootstrap.cli.commands import COMMANDS
from bootstrap.distributed.launcher import LAUNCHERS
from bootstrap.doors.torch_settings import SETTINGS

ROOT = Path(__file__).resolve().parents[2]

# example -> (the recipe's heading starts so, how a file names the example)
RECIPES: Dict[str, Tuple[str, Pattern[str]]] = {
    "detect_anomaly": ("Add a preset setting", re.compile(r"\bdetect_anomaly\b")),
    "kubeflow": ("Add a launcher", re.compile(r"kubeflow", re.IGNORECASE)),  # README and docs say "Kubeflow"
    "submitit": ("Add a launcher", re.compile(r"submitit")),  # a launcher found at run time
    "TORCH_NCCL_BLOCKING_WAIT": ("Add a known variable", re.compile(r"\bTORCH_NCCL_BLOCKING_WAIT\b")),
    "schema": ("Add a CLI command", re.compile(r"\bbootstrap schema\b")),
}
# A listed file the example cannot be in, and why.
NOT_YET = {("kubeflow", "CHANGELOG.md"): "the launchers came before the changelog: the next one is its first entry"}
# Files that name an example but that its kind of change does not touch, and why. None: not checked this way
# (submitit is also Hydra's launcher plugin, named all over the sweeps' code and docs).
OTHER_MENTIONS: Dict[str, Optional[Dict[str, str]]] = {
    "detect_anomaly": {}, "TORCH_NCCL_BLOCKING_WAIT": {}, "submitit": None,
    "kubeflow": {"tests/unit/test_verdict.py": "walks one launcher's refusal through the job, the doctor and the dry run",
                 "tests/unit/test_errors_table.py": "walks every row of docs/errors.md, the Kubeflow one among them"},
    "schema": {"bootstrap/doors/json_schema.py": "builds what the command prints",
               "pyproject.toml": "ships the file that the command's output matches"},
}
HEADER = re.compile(r"^Files .*\(checked against `([^`]+)`.*\):$")
BULLET = re.compile(r"^- `([^`]+)`(?: \(as `([^`]+)`\))?")


def recipes(text: str) -> Dict[str, Tuple[str, List[Tuple[str, Optional[str]]]]]:
    """example -> (the recipe's heading, its (file, own example) bullets), as CONTRIBUTING.md lists them."""
    found: Dict[str, Tuple[str, List[Tuple[str, Optional[str]]]]] = {}
    heading, example = "", None
    for line in text.splitlines():
        if line.startswith("#"):
            heading, example = line.lstrip("#").strip(), None
        elif header := HEADER.match(line):
            example = header.group(1)
            assert example not in found, f"two lists checked against {example}"
            found[example] = (heading, [])
        elif example and line.startswith("- "):
            bullet = BULLET.match(line)
            assert bullet, f"{heading}: a file's bullet starts with its path in backticks: {line!r}"
            found[example][1].append((bullet.group(1), bullet.group(2)))
        elif example and not line.startswith("  "):  # a bullet's continuation is indented; anything else ends it
            example = None
    return found


LISTED = recipes((ROOT / "CONTRIBUTING.md").read_text())


def source_files() -> List[Path]:
    """The repository's own text files: not the recorded reports and logs of tests/data, nor what runs leave, nor
    this test."""
    roots = [ROOT / name for name in ("bootstrap", "conf", "docs", "tests", "bench", "hydra_plugins")]
    files = [p for p in ROOT.iterdir() if p.is_file() and p.suffix in (".md", ".toml", ".py")]
    for root in roots:
        files += [p for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".md", ".yaml", ".json", ".sh")
                  and not {"__pycache__", "outputs", "multirun"} & set(p.relative_to(ROOT).parts)
                  and not p.is_relative_to(ROOT / "tests" / "data") and p != Path(__file__).resolve()]
    return files


def test_each_recipe_has_its_list_checked_against_its_example():
    assert {example: heading.split(" (")[0] for example, (heading, _) in LISTED.items()} == \
        {example: prefix for example, (prefix, _) in RECIPES.items()}
    assert all(files for _, files in LISTED.values())


@pytest.mark.parametrize("example", sorted(RECIPES))
def test_every_file_a_recipe_lists_exists_and_shows_its_example(example):
    pattern = RECIPES[example][1]
    problems = []
    for name, own in LISTED[example][1]:
        path = ROOT / name
        if not path.is_file():
            problems.append(f"{name}: no such file")
        elif (example, name) not in NOT_YET and not (own in path.read_text() if own else pattern.search(
                path.read_text())):
            problems.append(f"{name}: {own or example} is not in it")
    assert not problems, f"{RECIPES[example][0]}: {problems}"


@pytest.mark.parametrize("example", sorted(e for e, others in OTHER_MENTIONS.items() if others is not None))
def test_every_file_that_names_the_example_is_in_its_recipe(example):
    pattern, others = RECIPES[example][1], OTHER_MENTIONS[example] or {}
    listed = {name for name, _ in LISTED[example][1]} | {"CONTRIBUTING.md"}
    naming = {str(p.relative_to(ROOT)) for p in source_files() if pattern.search(p.read_text(errors="replace"))}
    assert naming - listed - set(others) == set(), f"{RECIPES[example][0]}: these files change too; list them"
    assert set(others) <= naming, "an exception for a file that no longer names the example"


# The files that hold every one of a kind (not the example alone), and how each names one.
EVERY = [
    ("detect_anomaly", [s.name for s in SETTINGS], lambda name: re.compile(rf"\b{name}\b"),
     ["bootstrap/core/schema.py", "bootstrap/doors/torch_settings.py", "conf/env/a100.yaml", "conf/env/cpu_debug.yaml",
      "docs/presets.md", "docs/report.md", "bootstrap/bootstrap.schema.json", "tests/unit/test_records.py"]),
    ("kubeflow", [row.name for row in LAUNCHERS], lambda name: re.compile(rf"\(`{name}`"),
     ["docs/distributed.md", "CONTRIBUTING.md"]),
    ("schema", list(COMMANDS), lambda name: re.compile(rf"bootstrap {name}\b|\"{name}\": |`{name}`"),
     ["bootstrap/cli/commands.py", "tests/e2e/test_commands.py", "README.md", "CHANGELOG.md"]),
]


@pytest.mark.parametrize("example, kind, pattern, files", EVERY, ids=[e[0] for e in EVERY])
def test_the_files_that_list_every_one_of_a_kind_list_each(example, kind, pattern, files):
    assert set(files) <= {name for name, _ in LISTED[example][1]}, "each is in the recipe's list"
    missing = [f"{name}: {one}" for name in files for one in kind if not pattern(one).search((ROOT / name).read_text())]
    assert not missing


def test_each_command_is_a_module_of_the_cli():
    assert [name for name, (module, _) in COMMANDS.items()
            if not (ROOT / "bootstrap" / "cli" / f"{module}.py").is_file()] == []
