"""The package's folders show its parts, and they import one way: from the Hydra adapter on top down
to the doors at the bottom. Read from the source, so a lazy import inside a function counts too; an import
under ``if TYPE_CHECKING:`` does not (it names a type for the type checker and never runs)."""
import ast
from pathlib import Path

import pytest

from layout_rule import DATA_TABLES, FACADE, LEVELS, MAX_LINES, PACKAGE


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "conf" not in p.relative_to(PACKAGE).parts)


def _folder(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def _type_checking_only(tree: ast.AST) -> set:
    """The nodes under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): they never run."""
    blocks = [node for node in ast.walk(tree) if isinstance(node, ast.If) and ast.unparse(node.test) in
              ("TYPE_CHECKING", "typing.TYPE_CHECKING")]
    return {id(inner) for block in blocks for statement in block.body for inner in ast.walk(statement)}


def _imported_folders(path: Path, *, type_only: bool = False):
    """Every bootstrap folder this module imports, at any depth of the file (``type_only``: also under
    ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(), str(path))
    skipped = set() if type_only else _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        names = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "bootstrap":
                names = [alias.name for alias in node.names]
            elif node.module.startswith("bootstrap."):
                names = [node.module.split(".")[1]]
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1] for a in node.names if a.name.startswith("bootstrap.")]
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path.relative_to(PACKAGE)}: relative import; name the folder")
        for name in names:
            if name in LEVELS:
                yield node.lineno, name


def test_every_module_sits_in_a_folder_that_has_a_level():
    loose = [p.name for p in PACKAGE.glob("*.py") if p.stem not in FACADE]
    assert not loose, f"modules outside the folders: {loose}"
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} - {"conf"}
    assert folders == set(LEVELS), folders ^ set(LEVELS)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_down_the_folders(path):
    here = _folder(path)
    if here in FACADE:
        return
    upward = [f"line {line}: {here}/ imports {there}/" for line, there in _imported_folders(path)
              if there != here and LEVELS[there] >= LEVELS[here]]
    assert not upward, f"{path.relative_to(PACKAGE)}: " + "; ".join(upward)


def test_an_import_for_the_type_checker_alone_is_no_dependency(tmp_path):
    """A module of a lower folder may name a higher folder's type for the type checker alone."""
    module = tmp_path / "module.py"
    module.write_text("from typing import TYPE_CHECKING\n\nfrom bootstrap.doors import outbound\n\n"
                      "if TYPE_CHECKING:\n    from bootstrap.core.schema import EnvConfig\n")
    assert {folder for _, folder in _imported_folders(module, type_only=True)} == {"doors", "core"}
    assert {folder for _, folder in _imported_folders(module)} == {"doors"}


def test_the_wheel_lists_every_folder():
    text = (PACKAGE.parent / "pyproject.toml").read_text()
    missing = [name for name in LEVELS if f'"bootstrap.{name}"' not in text]
    assert not missing, f"pyproject.toml does not ship {missing}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_outgrows_one_sitting(path):
    name = str(path.relative_to(PACKAGE))
    lines = len(path.read_text().splitlines())
    assert name in DATA_TABLES or lines <= MAX_LINES, f"{name} has {lines} lines (at most {MAX_LINES}): split it by job"
