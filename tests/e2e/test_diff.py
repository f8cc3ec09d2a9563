"""End to end: ``python -m bootstrap diff`` on real train_stub runs, and a real sweep whose jobs ran in
different environments (the summary's note)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import STUB, _main_here, clean_env

TRACEBACK = "Traceback (most recent call last)"
SECRET = "hf_" + "S3cr3tT0k3nV4lu3" * 2
LEFT_OUT = "(times, job number, status and metrics left out; --all shows them)"


def train(tmp_path: Path, name: str, *overrides: str) -> Path:
    """A real train_stub run into tmp_path/name; its directory."""
    out_dir = tmp_path / name
    proc = subprocess.run([sys.executable, str(STUB), f"hydra.run.dir={out_dir}", "train.steps=3", *overrides],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out_dir


def diff_process(*args, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m bootstrap diff ARGS``, a process of its own (the first test's: the command as a user runs it)."""
    return subprocess.run([sys.executable, "-m", "bootstrap", "diff", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=clean_env(), timeout=120)


@pytest.fixture
def bootstrap_diff(capsys, monkeypatch):
    """``bootstrap diff ARGS`` in this process (its code path, minus the interpreter's start: conftest's
    ``_main_here``), on the real runs: exit status, stdout, stderr."""
    from bootstrap.cli import diff

    run = _main_here(diff.main, capsys, monkeypatch)
    return lambda *args, cwd: run(*map(str, args), cwd=cwd)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three real runs: two alike (run separately, same overrides), one with another intra_op and a secret."""
    tmp_path = tmp_path_factory.mktemp("runs")
    return tmp_path, {"same_a": train(tmp_path, "same_a"), "same_b": train(tmp_path, "same_b"),
                      "one_thread": train(tmp_path, "one_thread", "env.threads.intra_op=1",
                                          f"+env.vars.HF_TOKEN={SECRET}")}


def test_two_runs_that_differ_in_intra_op_name_the_threads_and_exit_1(runs):
    tmp_path, run = runs
    proc = diff_process(run["same_a"], run["one_thread"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert "threads and CPUs" in lines and "variables (with their sources)" in lines
    assert any(line.split() == ["intra_op:", "2", "->", "1"] or
               (line.strip().startswith("intra_op:") and line.endswith("-> 1")) for line in lines)
    assert any(line.strip().startswith("OMP_NUM_THREADS:") and line.endswith("-> 1 (override)") for line in lines)
    assert any(line.strip().startswith("HF_TOKEN:") and line.endswith("-> *** (override)") for line in lines)
    assert SECRET not in proc.stdout + proc.stderr and TRACEBACK not in proc.stderr
    assert lines[-1].endswith("differences " + LEFT_OUT)


def test_two_separate_runs_with_the_same_overrides_are_the_same_unless_all(runs, bootstrap_diff):
    tmp_path, run = runs
    proc = bootstrap_diff(run["same_a"], run["same_b"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "no differences " + LEFT_OUT
    every = bootstrap_diff(run["same_a"], run["same_b"], "--all", cwd=tmp_path)
    assert every.returncode == 1 and "what differs between any two runs" in every.stdout
    assert "started_ns:" in every.stdout and "metric samples_per_s:" in every.stdout
    assert str(run["same_a"]) not in every.stdout.split("\n", 2)[2]  # directories never count as a difference


def test_json_output_parses_and_holds_no_secret(runs, bootstrap_diff):
    tmp_path, run = runs
    proc = bootstrap_diff(run["one_thread"], run["same_a"], "--json", cwd=tmp_path)
    assert proc.returncode == 1 and SECRET not in proc.stdout
    answer = json.loads(proc.stdout)
    assert answer["same"] is False and answer["a"] == str(run["one_thread"] / "bootstrap.json")
    threads = {row["name"]: (row["a"], row["b"]) for row in answer["sections"]["threads"]}
    assert threads["intra_op"][0] == "1"
    assert {"name": "HF_TOKEN", "a": "*** (override)", "b": "unset"} in answer["sections"]["variables"]


def test_here_on_a_real_run_finds_nothing_changed_and_names_a_change_asked_for(runs, bootstrap_diff):
    tmp_path, run = runs
    proc = bootstrap_diff(run["same_a"], "--here", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "no differences " + LEFT_OUT
    changed = bootstrap_diff(run["same_a"], "--here", "train.steps=3", "env.threads.intra_op=1", cwd=tmp_path)
    assert changed.returncode == 1 and "OMP_NUM_THREADS:" in changed.stdout, changed.stdout + changed.stderr
    refused = bootstrap_diff(run["one_thread"], "--here", cwd=tmp_path)  # its secret was masked when recorded
    assert refused.returncode == 2 and "holds a masked secret" in refused.stderr
    assert SECRET not in refused.stdout + refused.stderr and TRACEBACK not in refused.stderr


def test_hostile_inputs_exit_2_with_a_one_line_message(runs, bootstrap_diff):
    tmp_path, run = runs
    hostile = tmp_path / "hostile"
    cases = {}
    for name, make, fragment in [
        ("garbage", lambda d: (d / "bootstrap.json").write_bytes(os.urandom(4096)), "bootstrap.json"),
        ("a_directory", lambda d: (d / "bootstrap.json").mkdir(), "not a regular file"),
        ("digits", lambda d: (d / "bootstrap.json").write_text(
            (run["same_a"] / "bootstrap.json").read_text().replace('"gpus": 0', '"gpus": ' + "7" * 400)),
         "found.gpus: not a whole number"),
        ("huge", lambda d: (d / "bootstrap.json").write_bytes(b"[" * (17 * 2**20)), "larger than"),
    ]:
        (hostile / name).mkdir(parents=True)
        make(hostile / name)
        cases[name] = fragment
    for name, fragment in cases.items():
        proc = bootstrap_diff(hostile / name, run["same_a"], cwd=tmp_path)
        assert proc.returncode == 2, (name, proc.stdout, proc.stderr)
        assert proc.stderr.count("\n") == 1 and fragment in proc.stderr, (name, proc.stderr)
        assert TRACEBACK not in proc.stderr and not proc.stdout


def write_app(tmp_path: Path) -> Path:
    """A Hydra app whose task pins its process to one CPU for steadier timings, as benchmarks do."""
    app = tmp_path / "pinning_app"
    (app / "conf").mkdir(parents=True)
    (app / "conf" / "config.yaml").write_text(
        "defaults:\n  - env: cpu_debug\n  - override hydra/callbacks: bootstrap\n  - _self_\nlr: 0.1\n")
    (app / "app.py").write_text(
        "import os\n\nimport hydra\n\n\n"
        "@hydra.main(config_path='conf', config_name='config', version_base='1.3')\n"
        "def main(cfg):\n"
        "    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core; it outlives the task\n"
        "    return {'final_loss': cfg.lr}\n\n\n"
        "if __name__ == '__main__':\n    main()\n")
    return app


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable CPUs to pin one")
def test_a_sweep_whose_later_jobs_ran_on_fewer_cpus_than_the_first_says_so(tmp_path, bootstrap_diff):
    # The basic launcher runs every job in one process. The bootstrap puts back the environment after
    # each job, but not the CPU affinity a task set (it never sets one): jobs 1 and 2 start pinned to the
    # one core job 0's task chose, with fewer threads, though no override of theirs asked for it.
    app, sweep_dir = write_app(tmp_path), tmp_path / "sweep"
    proc = subprocess.run([sys.executable, str(app / "app.py"), "-m", f"hydra.sweep.dir={sweep_dir}",
                           "lr=0.1,0.2,0.3"], capture_output=True, text=True, cwd=app, env=clean_env(), timeout=240)
    assert proc.returncode == 0, proc.stderr
    markdown = (sweep_dir / "sweep_summary.md").read_text()
    assert "Jobs ran in different environments" in markdown, markdown
    note = markdown.split("Jobs ran in different environments")[1]
    usable, first = len(os.sched_getaffinity(0)), min(os.sched_getaffinity(0))
    assert f"- usable CPUs: 1 in jobs 1, 2; {usable} in job 0" in note
    assert f"- CPU affinity: {first} in jobs 1, 2; " in note
    assert "torch:" not in note and "\n- CPUs:" not in note  # only what differs
    proc = bootstrap_diff(sweep_dir / "0", sweep_dir / "1", cwd=tmp_path)
    assert proc.returncode == 1 and "threads and CPUs" in proc.stdout
    assert any(line.strip().startswith("cpus_usable:") and line.endswith("-> 1") for line in proc.stdout.splitlines())
    named = bootstrap_diff(sweep_dir, sweep_dir / "1", cwd=tmp_path)
    assert named.returncode == 2 and f"name one job's directory, e.g. {sweep_dir / '0'}" in named.stderr


def test_a_sweep_whose_jobs_ran_alike_says_nothing_of_environments(tmp_path):
    sweep_dir = tmp_path / "sweep"
    proc = subprocess.run([sys.executable, str(STUB), "-m", f"hydra.sweep.dir={sweep_dir}", "train.steps=2",
                           "env.threads.intra_op=1,2"], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), timeout=240)
    assert proc.returncode == 0, proc.stderr
    markdown = (sweep_dir / "sweep_summary.md").read_text()
    assert markdown.count("completed") == 2 and "different environments" not in markdown


# In-process, as the unit tests of diff, but --here runs git for this machine's provenance: a process.
from unit.test_diff import write  # noqa: E402 - the unit tests' report writer


def test_here_leaves_out_what_the_runs_own_process_set_and_says_so(tmp_path, diff_here):
    a = write(tmp_path / "a", overrides=[], vars__PYTORCH_NVML_BASED_CUDA_CHECK={
        "value": "1", "source": "process", "effective": True, "note": "set by this process"})
    code, out, err = diff_here(a, "--here", "--json")
    result = json.loads(out)
    assert result["left_out"] == ["PYTORCH_NVML_BASED_CUDA_CHECK"], (out, err)
    assert "PYTORCH_NVML_BASED_CUDA_CHECK" not in json.dumps(result["sections"])
    code, out, err = diff_here(a, "--here")
    assert "left out: PYTORCH_NVML_BASED_CUDA_CHECK (set by the run's own process" in out, out + err
    assert "PYTORCH_NVML_BASED_CUDA_CHECK:" not in out
    code, out, err = diff_here(a, write(tmp_path / "b"))  # two runs: a fact like any other, nothing left out
    assert "PYTORCH_NVML_BASED_CUDA_CHECK: 1 (process)" in out and "left out:" not in out, out
