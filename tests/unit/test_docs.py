"""The docs follow the code: the README's commands, the blocks and tables the code writes, every link, module
and test named.

The README is the front door; the reference lives in docs/*.md and the maintainer's material
(the tests that prove each promise, benchmarks) in CONTRIBUTING.md. Each test reads the page that
holds the text it checks. The blocks marked ``<!-- generated: NAME -->`` in a page are written by
``tests/docs_examples.py``: run ``python tests/docs_examples.py`` to rewrite them.
"""
import ast
import importlib
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

import docs_examples

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
USER_PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
PAGES = [*USER_PAGES, CONTRIBUTING]


def _page(name: str) -> str:
    return (DOCS / name).read_text()


def test_ci_runs_the_readme_test_command_exactly():
    commands = re.findall(r"```bash\n# 2\. Run the test suite.*\n(.+)\n```", README)
    assert len(commands) == 1
    assert commands[0] in (ROOT / ".ci" / "run").read_text().splitlines()


def test_the_readme_is_a_front_door_under_10_kb_with_its_two_commands():
    assert len(README.encode()) < 10_000, "move reference material from the README to docs/"
    assert re.search(r"```bash\n# 1\. Train the stub model.*\n.+ && python train_stub\.py\n```", README)


# -- what the code writes ------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(docs_examples.BLOCKS))
def test_each_generated_block_is_what_the_code_writes(name):
    page, write = docs_examples.BLOCKS[name]
    held = docs_examples.blocks_in((ROOT / page).read_text())
    assert name in held, f"{page} lost its '<!-- generated: {name} -->' block"
    assert held[name] == write(), f"{page}: the {name} block is stale; run python tests/docs_examples.py"


def test_the_doctor_example_is_the_real_doctors_output_line_for_line(doctor_here, tmp_path):
    # issue 45: the generated example was 11 lines shorter than the doctor's real output (no config: line, no
    # Preflight section). Only the facts of the machine may differ: the lines, their order and their labels may not.
    real = doctor_here("env=h100", cwd=tmp_path)
    assert real.returncode == 1, real.stderr
    example = docs_examples.doctor_text(("env=h100",)).splitlines()
    shown = real.stdout.rstrip("\n").splitlines()
    assert len(shown) == len(example), "\n".join(shown)
    for said, written in zip(shown, example, strict=True):
        assert said.split(":")[0].split()[:1] == written.split(":")[0].split()[:1], (said, written)


def test_the_report_example_reads_back_and_the_fields_table_names_each_field():
    from bootstrap.doors.records import Report

    example = json.loads(docs_examples.report_example().split("\n", 1)[1].rsplit("```", 1)[0])
    assert Report.from_json(example).to_json() == example
    table = _page("report.md").split("## The fields", 1)[1].split("\n## ", 1)[0]
    fields = [*example, *(f"distributed.{key}" for key in example["distributed"])]
    unnamed = [f for f in fields if not re.search(rf"`({re.escape(f)}|{re.escape(f.split('.')[-1])})[`.]", table)]
    assert not unnamed, f"docs/report.md's fields table does not say what these are: {unnamed}"


def test_contributing_counts_the_rejected_inputs():
    import importlib.util

    path = next(Path(__file__).resolve().parents[2].rglob("test_train_stub.py"))  # an e2e test's table of inputs
    spec = importlib.util.spec_from_file_location("train_stub_inputs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    BAD_INPUTS = module.BAD_INPUTS
    assert f"feeds {len(BAD_INPUTS)} rejected inputs" in CONTRIBUTING.read_text()


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


def test_the_presets_table_lists_each_presets_variables():
    section = _page("presets.md").split("## The shipped presets", 1)[1].split("\n#", 1)[0]
    for name in ("cpu_debug", "cpu_debug_detail", "a100", "h100"):
        row = next(line for line in section.splitlines() if line.startswith(f"| `{name}`"))
        listed = dict(item.strip("`").split("=", 1) for item in re.findall(r"`[A-Z_]+=[^`]*`", row.split("|")[-2]))
        if name == "h100":
            assert "as `a100`" in row and _preset_vars("h100") == _preset_vars("a100")
            continue
        assert listed == {k: str(v) for k, v in _preset_vars(name).items()}, name


# -- links and names ---------------------------------------------------------------------------
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The page without its code blocks, where `[x](y)` and `# x` are code, not links and headings."""
    return _FENCE.sub("", text)


def _links(page: Path):
    """Every relative link target on the page: (path, anchor or None)."""
    for target in _LINK.findall(re.sub(r"`[^`\n]*`", "", _prose(page.read_text()))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        yield path, anchor or None


def _anchors(page: Path) -> set:
    """The anchors GitHub makes for a page's headings: lower case, punctuation dropped, spaces as '-'."""
    anchors, seen = set(), {}
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _prose(page.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def test_the_docs_pages_exist_and_the_readme_links_each_one():
    for name in ("api", "presets", "settings", "distributed", "hangs", "sweeps", "lint", "report", "errors"):
        assert (DOCS / f"{name}.md").is_file(), name
        assert f"](docs/{name}.md)" in README, name
    assert "](CONTRIBUTING.md)" in README


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_that_exists(page):
    broken = [path for path, _ in _links(page) if path and not (page.parent / path).exists()]
    assert not broken, broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_to_a_heading_finds_it(page):
    missing = []
    for path, anchor in _links(page):
        target = (page.parent / path) if path else page
        if anchor and target.suffix == ".md" and target.exists() and anchor not in _anchors(target):
            missing.append(f"{path}#{anchor}")
    assert not missing, missing


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_test_named_in_the_docs_exists(page):
    """`tests/test_x.py::test_name` in a page names a test that is there (tests get renamed)."""
    text = page.read_text()
    missing = [f for f in re.findall(r"\btests/[\w/]+\.py\b", text) if not (ROOT / f).is_file()]
    for file, name in re.findall(r"\b(tests/[\w/]+\.py)::(test_\w+)", text):
        path = ROOT / file
        if not path.is_file() or not re.search(rf"^\s*def {name}\(", path.read_text(), re.MULTILINE):
            missing.append(f"{file}::{name}")
    assert not missing, missing


_MODULE_PATH = re.compile(r"\bbootstrap/[\w/]+\.py\b")
_DOTTED = re.compile(r"`(bootstrap(?:\.[A-Za-z_]\w*)+)[`(]")


def _defined_in_source(module: list, attributes: list) -> bool:
    """The module's file exists and defines the first attribute (a class, a function, a name), anywhere in it."""
    path = ROOT.joinpath(*module).with_suffix(".py")
    if not path.is_file():
        return False
    if not attributes:
        return True
    tree = ast.parse(path.read_text())
    names = {node.name for node in ast.walk(tree) if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    names |= {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) for target in node.targets
              if isinstance(target, ast.Name)}
    return attributes[0] in names


def _resolves(dotted: str) -> bool:
    """``bootstrap.doors.records.Report``: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        except ImportError:  # an integration whose tracker (an extra) is not installed: read its source instead
            if _defined_in_source(parts[:cut], parts[cut:]):
                return True
            continue
        try:
            for attribute in parts[cut:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_named_in_the_docs_exists(page):
    """`bootstrap/core/plan.py` and `bootstrap.doors.records.Report` in a page name what is there (modules move)."""
    text = page.read_text()
    missing = [path for path in _MODULE_PATH.findall(text) if not (ROOT / path).is_file()]
    missing += [name for name in _DOTTED.findall(text) if not name.endswith((".json", ".log")) and not _resolves(name)]
    assert not missing, missing


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_pages_leave_the_tests_to_contributing(page):
    """Which test proves what is maintainer material: it lives in CONTRIBUTING.md."""
    named = sorted(set(re.findall(r"\btests/[\w/]+\.py\b", page.read_text())))
    assert not named, named


def test_no_two_test_files_define_the_same_test_name():
    """The docs cite a test as `tests/<file>.py::<name>`; one name is one test, wherever the files move."""
    files = defaultdict(list)
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                files[node.name].append(str(path.relative_to(ROOT)))
    assert not {name: where for name, where in files.items() if len(where) > 1}
