"""The one way out (bootstrap/outbound.py): nothing else in the package prints or writes, and
whatever passes through it leaves masked and printable.

1. Static: every module is read for calls that print or write; only outbound.py may make them.
2. Hypothesis: hostile text (planted secrets, terminal escapes, forged lines) through every door.
3. Real processes: a task whose own error holds secrets, alone and as one of two torchrun ranks,
   and a sweep under hydra-ray-launcher with a secret override.
"""
import json
import subprocess
import sys
from pathlib import Path

from hypothesis import strategies as st

from bootstrap.doors import outbound

from conftest import ROOT, STUB, clean_env

secrets = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7e, blacklist_characters="*\\"),
                  min_size=outbound.MIN_SECRET_LEN, max_size=30)
# -- 3. real processes ---------------------------------------------------------------------------
APP = ROOT / "tests" / "secret_app" / "app.py"
PLANTED = "PLANTED"  # every planted secret holds it (see tests/secret_app)
SHELL_SECRET = {"TEAM_SECRET_VALUE": "sv_PLANTED_from_the_shell"}


def _written(directory: Path) -> dict:
    """Every file the run left, but Hydra's own records of the command line (.hydra/, multirun.yaml)."""
    return {p: p.read_text("utf-8", "replace") for p in directory.rglob("*")
            if p.is_file() and ".hydra" not in p.parts and p.name != "multirun.yaml"}


def test_a_tasks_own_error_leaves_no_secret_in_anything_written(tmp_path):
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, str(APP), f"hydra.run.dir={run_dir}"], cwd=tmp_path, text=True,
                          capture_output=True, env=clean_env(**SHELL_SECRET), timeout=120)
    assert proc.returncode == 1
    report = json.loads((run_dir / "bootstrap.json").read_text())
    assert report["job"]["status"] == "failed"
    error = report["job"]["error"]
    assert "postgres://trainer:***@db.internal" in error and "shell secret ***" in error
    assert "config password ***" in error and "\\x1b]0;retitled" in error
    files = _written(run_dir)
    assert (run_dir / "app.log") in files and "about to fail" in files[run_dir / "app.log"]
    for path, text in files.items():
        assert PLANTED not in text and "\x1b" not in text, path


def test_a_tasks_own_error_under_torchrun_stays_masked_in_every_rank_and_the_summary(tmp_path):
    run_dir = tmp_path / "run"
    torchrun = [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc_per_node=2"]
    proc = subprocess.run([*torchrun, str(APP), f"hydra.run.dir={run_dir}", "fail_rank=1",
                           "env.distributed.timeout_s=20"], cwd=tmp_path, text=True, capture_output=True,
                          env=clean_env(**SHELL_SECRET), timeout=240)
    assert proc.returncode != 0
    reports = [json.loads((run_dir / f"bootstrap.rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["job"]["status"] for r in reports] == ["failed", "failed"]
    assert "rank 1 failed first" in reports[0]["job"]["error"]  # the peer's error travelled, masked
    for path, text in _written(run_dir).items():
        assert PLANTED not in text, path
    root_cause = (proc.stdout + proc.stderr).split("Root Cause")[1]
    assert "rank 1 failed" in root_cause and PLANTED not in root_cause


def test_every_command_prints_its_help_on_stdout():
    for command in ("doctor", "hang", "tune", "lint"):
        proc = subprocess.run([sys.executable, "-m", "bootstrap", command, "--help"], capture_output=True, text=True,
                              cwd=ROOT, env=clean_env(), timeout=60)
        assert proc.returncode == 0 and "usage:" in proc.stdout and proc.stderr == "", command
