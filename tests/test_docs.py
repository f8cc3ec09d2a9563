"""The docs follow the code: the README's commands, the tables in docs/, every link and every test named.

The README is the front door; the reference lives in docs/*.md and the maintainer's
material in CONTRIBUTING.md. Each test reads the page that holds the text it checks.
"""

import re
from pathlib import Path

import pytest

from bootstrap.readers import READERS, UNKNOWN

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]


def _page(name: str) -> str:
    return (DOCS / name).read_text()


def test_ci_runs_the_readme_test_command_exactly():
    commands = re.findall(r"```bash\n# 2\. Run the test suite.*\n(.+)\n```", README)
    assert len(commands) == 1
    assert commands[0] in (ROOT / ".ci" / "run").read_text().splitlines()


def test_readme_timing_table_matches_the_code_table():
    section = _page("settings.md").split("## When each setting takes effect", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    expected = [(", ".join(f"`{p}`" for p in r.patterns), r.read_when, r.applied_by) for r in READERS]
    expected.append(("anything else", UNKNOWN.read_when, UNKNOWN.applied_by))
    actual = [tuple(cell.strip() for cell in row.strip("|").split("|")) for row in rows]
    assert [(a, b, c.replace("`", "")) for a, b, c in actual] == [(a, b, c) for a, b, c in expected]


def test_readme_counts_the_rejected_inputs():
    from test_train_stub import BAD_INPUTS

    assert f"feeds {len(BAD_INPUTS)} rejected inputs" in _page("errors.md")


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
    for name in ("presets", "settings", "distributed", "hangs", "sweeps", "lint", "report", "errors"):
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
    missing = [f for f in re.findall(r"\btests/\w+\.py\b", text) if not (ROOT / f).is_file()]
    for file, name in re.findall(r"\b(tests/\w+\.py)::(test_\w+)", text):
        path = ROOT / file
        if not path.is_file() or not re.search(rf"^\s*def {name}\(", path.read_text(), re.MULTILINE):
            missing.append(f"{file}::{name}")
    assert not missing, missing
