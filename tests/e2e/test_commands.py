"""The installed commands: ``bootstrap`` (every subcommand) and ``bootstrap-doctor``, as a user types them,
and none of them prints torch's NumPy warning when numpy cannot be imported (torch's CPU wheel does not
need it, so a fresh venv from the README has none)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.cli.commands import COMMANDS

from conftest import ROOT, clean_env

BIN = Path(sys.executable).parent
REPORTS = ROOT / "tests" / "data" / "reports"


@pytest.fixture(scope="module")
def no_numpy(tmp_path_factory) -> dict:
    """An environment in which ``import numpy`` fails as it does where numpy is not installed."""
    shadow = tmp_path_factory.mktemp("no_numpy")
    (shadow / "numpy.py").write_text('raise ModuleNotFoundError("No module named \'numpy\'", name="numpy")\n')
    return clean_env(PYTHONPATH=str(shadow))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Two runs to compare, a directory without dumps and a sweep, copied from real reports."""
    root = tmp_path_factory.mktemp("runs")
    shutil.copytree(REPORTS / "schema3-preflight", root / "a")
    shutil.copytree(REPORTS / "schema3-preflight-torchrun", root / "b")
    shutil.copytree(REPORTS / "schema2-auto-sweep", root / "sweep")
    return root


def _command(runs: Path) -> dict:
    """Each subcommand with arguments that make it do its work (and import torch where it does)."""
    return {
        "doctor": ["doctor"],
        "diff": ["diff", str(runs / "a"), "--here"],
        "hang": ["hang", str(runs / "b")],
        "lint": ["lint"],
        "tune": ["tune", str(runs)],
        "summary": ["summary", str(runs / "sweep")],
        "schema": ["schema"],
        "dryrun": ["dryrun", "--world", "16", "--nodes", "2", "--out", str(runs / "dryrun"), "env=cpu_debug"],
        "nodes": ["nodes", str(runs / "bad_nodes.jsonl"), "--exclude", "node3", "--why", "a test"],
    }


def _run(args, env, cwd=ROOT):
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=180)


def test_every_subcommand_is_exercised_here(runs):
    assert set(_command(runs)) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_installed_command_runs_without_numpy_and_prints_no_numpy_warning(name, runs, no_numpy):
    done = _run([str(BIN / "bootstrap"), *_command(runs)[name]], no_numpy)
    output = done.stdout + done.stderr
    assert "NumPy" not in output and "numpy" not in output.lower().replace("random/numpy", ""), output[-2000:]
    assert "Traceback" not in output, output[-2000:]
    assert done.returncode in (0, 1, 2), output[-2000:]
    if name == "schema":
        assert json.loads(done.stdout)["title"] == "bootstrap.json"
    if name == "doctor":
        assert done.returncode == 0 and "Variables" in done.stdout
    if name == "summary":
        assert done.returncode == 0 and "| **1** |" in done.stdout
    if name == "nodes":
        assert done.returncode == 0 and "node3 excluded by hand by " in done.stdout


def test_bootstrap_doctor_and_python_dash_m_are_the_same_command(no_numpy):
    installed = _run([str(BIN / "bootstrap-doctor"), "--json"], no_numpy)
    module = _run([sys.executable, "-m", "bootstrap", "doctor", "--json"], no_numpy)
    assert installed.returncode == module.returncode == 0, installed.stderr + module.stderr
    assert "NumPy" not in installed.stderr + module.stderr
    keep = ("preset", "vars", "threads", "checks")
    assert {k: json.loads(installed.stdout)[k] for k in keep} == {k: json.loads(module.stdout)[k] for k in keep}


def test_an_unknown_command_says_what_there_is_and_help_is_not_an_error(no_numpy):
    done = _run([str(BIN / "bootstrap"), "train"], no_numpy)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "unknown command train" in done.stderr and all(name in done.stderr for name in COMMANDS)
    near = _run([str(BIN / "bootstrap"), "doctr"], no_numpy)
    assert near.returncode == 2 and "did you mean bootstrap doctor?" in near.stderr, near.stderr
    helped = _run([str(BIN / "bootstrap"), "--help"], no_numpy)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: bootstrap COMMAND") and helped.stderr == ""
    for name, (_, purpose) in COMMANDS.items():  # a purpose per command
        assert f"  {name}" in helped.stdout and purpose in helped.stdout


def test_a_command_piped_into_a_reader_that_leaves_ends_without_a_traceback(no_numpy):
    # `bootstrap schema | head`: head leaves after its lines; the command must not print BrokenPipeError's traceback
    done = subprocess.run(f"'{BIN / 'bootstrap'}' schema | head -1", shell=True, capture_output=True, text=True,
                          env=no_numpy, cwd=ROOT, timeout=180)
    assert done.stdout.strip() == "{" and "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, \
        done.stderr
