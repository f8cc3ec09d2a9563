"""Rebuild the reports kept here: real ``bootstrap.json`` files of every schema version this package has
written, made by running ``train_stub.py`` at commits of its own git history.

    python tests/data/reports/rebuild.py          # from the root of a clone with its history
    python tests/data/reports/rebuild.py CASE...  # only these cases (a new schema version's)

Each case checks out one commit into a temporary git worktree and runs it with this venv's python (torch,
Hydra), with the checkout's own ``bootstrap`` package first on the path and this one's taken off it. It
keeps what the readers read: the reports, and a job's ``.hydra/overrides.yaml`` and ``hydra.yaml``. Not
``multirun.yaml``: a clone gives every file the same time, so a sweep's start would not tell its jobs
apart (the tests copy a sweep and write one older than its jobs where they need it).

``tests/unit/test_old_reports.py`` reads every one of them; add a case here when a schema version changes,
and run this script once (it is not run by the tests: it takes a few minutes and needs the history).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

# The first and last commit of each schema version, and what made the reports readers found hard:
# schema 1 wrote `resolved` as text ("auto -> cpu_debug (no CUDA device)"), `threads: null` for a job whose
# checks failed, and `process_group: destroyed` at job end; schema 2 made them an object, a section and
# `teardown`.
FIRST_1 = "0a2f5555d90352debc52ea120d8b870d770cd237"  # Core bootstrap
LAST_1 = "6dc5feb73d00892f9899bd015f787eab0b2c710e"  # Hostile input, second pass
FIRST_2 = "0c802272e61a22dbfaf8d048873f085f85d53f33"  # Architecture: structured resolved
TYPED_2 = "5f0645a694409a4366796655b69d68c6a7ea0ebb"  # Doors: the typed report
DRIFT_2 = "d1ba3077f7b7366aef720918fa54d9793a715609"  # Drift: the agreement's fingerprint
FIRST_3 = "5bf1fb439a3151b1f81a7120514cd064f6ca4991"  # Preflight: the preflight section
LAST_3 = "ea90ff78e8e379ba3a4bde4c88f6534f18c35440"  # Session.flat(): the last before provenance
FIRST_4 = "c247898d5f1cabb2190a803a83f4274250458391"  # Provenance: the provenance section
FIRST_5 = "1565ba17aa53a1219fca1c646215039abb6755d2"  # Preflight: the links between nodes
BAD_NODES_5 = "f5c18f234d47b2b2d1f6d503db15fd5ed4e03ea0"  # Bad nodes: preflight.bad_nodes

# (directory here, commit, how: run | sweep | torchrun, train_stub's overrides)
CASES = [
    ("schema1-first", FIRST_1, "run", []),
    ("schema1-last", LAST_1, "run", []),
    ("schema1-auto-sweep", LAST_1, "sweep", ["env=auto", "train.steps=1,2"]),
    ("schema1-check-failed", LAST_1, "run", ["env=h100"]),
    ("schema1-torchrun", LAST_1, "torchrun", []),
    ("schema2-first", FIRST_2, "run", []),
    ("schema2-auto-sweep", FIRST_2, "sweep", ["env=auto", "train.steps=1,2"]),
    ("schema2-check-failed", FIRST_2, "run", ["env=h100"]),
    ("schema2-typed", TYPED_2, "run", []),
    ("schema2-typed-torchrun", TYPED_2, "torchrun", []),
    ("schema2-drift", DRIFT_2, "run", []),
    ("schema2-drift-auto-sweep", DRIFT_2, "sweep", ["env=auto", "train.steps=1,2"]),
    ("schema2-drift-torchrun", DRIFT_2, "torchrun", []),
    ("schema3-preflight", FIRST_3, "run", ["env.preflight.min_tflops=1000"]),  # measured: a floor, a finding
    ("schema3-preflight-torchrun", FIRST_3, "torchrun", []),  # two ranks compared
    ("schema3-last", LAST_3, "run", []),  # the typed hang, the statuses as enumerations
    ("schema4-provenance", FIRST_4, "run", []),  # git, packages, host: collected after the start
    ("schema5-preflight-torchrun", FIRST_5, "torchrun", []),  # the header, then the links (none on one node)
    ("schema5-bad-nodes", BAD_NODES_5, "run", ["env.preflight.min_tflops=1000"]),  # a floor names this host
]

# Runs train_stub.py of the checkout in WT, with the checkout's package first and this clone's off the path.
RUNNER = """
import os, runpy, sys
here = os.path.realpath(os.environ["REBUILD_CLONE"])
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != here]
sys.path.insert(0, os.environ["REBUILD_WT"])
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
KEPT = ("bootstrap.json", "bootstrap.rank0.json", "bootstrap.rank1.json")


def _run(case: str, commit: str, how: str, overrides: list, work: Path) -> Path:
    tree, out = work / f"wt-{case}", work / f"out-{case}"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(tree), commit],
                   check=True, capture_output=True)
    runner = work / "runner.py"
    runner.write_text(RUNNER)
    env = {**os.environ, "REBUILD_WT": str(tree), "REBUILD_CLONE": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    steps = [] if any(o.startswith("train.steps=") for o in overrides) else ["train.steps=1"]
    stub = [str(runner), "train_stub.py", *(["-m"] if how == "sweep" else []), *steps, *overrides]
    if how == "sweep":
        command = [sys.executable, *stub, f"hydra.sweep.dir={out}"]
    elif how == "torchrun":
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--no-python",
                   sys.executable, *stub, f"hydra.run.dir={out}"]
    else:
        command = [sys.executable, *stub, f"hydra.run.dir={out}"]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    if not out.is_dir():
        raise SystemExit(f"{case}: no output ({done.returncode})\n{done.stderr[-2000:]}")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)
    return out


def _keep(out: Path, target: Path) -> None:
    """The reports, and each job's overrides.yaml and hydra.yaml, in the same layout."""
    for path in sorted(out.rglob("*")):
        relative = path.relative_to(out)
        wanted = path.name in KEPT or (path.parent.name == ".hydra" and path.name in ("overrides.yaml", "hydra.yaml"))
        if path.is_file() and wanted:
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target / relative)


def main(only: list) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for case, commit, how, overrides in CASES:
            if only and case not in only:
                continue
            target = HERE / case
            shutil.rmtree(target, ignore_errors=True)
            _keep(_run(case, commit, how, overrides, work), target)
            print(f"{case}: {sorted(str(p.relative_to(target)) for p in target.rglob('*.json'))}")


if __name__ == "__main__":
    main(sys.argv[1:])
