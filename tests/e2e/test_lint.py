"""The variable lint: each finding kind from plain inputs, the table against torch itself, the shipped
presets, `bootstrap lint` on hostile directories, and env.lint=error stopping a real job."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, clean_env

TRACEBACK = "Traceback (most recent call last)"
# The environment block of the Megatron retelling in ../shared/seed: read by nothing.
SEED_NAMES = ["NCCL_MAX_RW_PAIRS", "GPU_DIRECT_FAST_PATH", "TF32_FLUSH_TO_ZERO", "DISABLE_CUDA_AFFINITY",
              "TVM_NUM_THREADS", "NUMA_BIND", "DD_BIDIRECTIONAL_INFERENCE"]


# -- our presets, and `bootstrap lint` -----------------------------------------------------------
def lint_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "bootstrap", "lint", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=clean_env(), timeout=120)


def test_the_shipped_presets_lint_clean():
    proc = lint_cli("--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout)["presets"]
    assert {"cpu_debug", "cpu_debug_detail", "a100", "h100", "auto"} <= results.keys()
    assert all(r == {"lint": [], "error": None} for r in results.values()), results


def write_presets(conf: Path, presets: dict) -> Path:
    (conf / "env").mkdir(parents=True)
    for name, text in presets.items():
        (conf / "env" / f"{name}.yaml").write_bytes(text if isinstance(text, bytes) else text.encode())
    return conf


SEED_BLOCK = "".join(f"  {name}: 1\n" for name in SEED_NAMES)


def test_lint_names_every_finding_of_an_apps_presets_and_exits_1(tmp_path):
    conf = write_presets(tmp_path / "conf", {
        "from_the_blog": "defaults:\n  - cpu_debug\n  - _self_\nvars:\n" + SEED_BLOCK,
        "old_cluster": "defaults:\n  - a100\n  - _self_\nvars:\n  NCCL_ASYNC_ERROR_HANDLING: 1\n",
        "fine": "defaults:\n  - cpu_debug\n  - _self_\nvars:\n  MY_FLAG: 1\n",
    })
    text = lint_cli(conf)
    assert text.returncode == 1 and TRACEBACK not in text.stderr
    assert "env=fine: clean" in text.stdout and "env=from_the_blog: 7 findings" in text.stdout
    proc = lint_cli("--config-path", conf, "--json")
    results = json.loads(proc.stdout)["presets"]
    assert {f["name"] for f in results["from_the_blog"]["lint"]} == set(SEED_NAMES)
    assert [(f["name"], f["kind"]) for f in results["old_cluster"]["lint"]] == [
        ("NCCL_ASYNC_ERROR_HANDLING", "renamed")]  # a100's own variables are clean; a cuda preset, so no GPU finding


HOSTILE = {
    "not_yaml": b"vars: [unclosed\n",
    "binary": b"\xff\xfe\x00\x01garbage",
    "bad_type": "defaults:\n  - cpu_debug\n  - _self_\nthreads:\n  intra_op: {a: 1}\n",
    "unknown_key": "defaults:\n  - cpu_debug\n  - _self_\nthreds: 2\n",
    "missing_base": "defaults:\n  - no_such_preset\n  - _self_\n",
    "extends_itself": "defaults:\n  - extends_itself\n  - _self_\n",
    "secret": "defaults:\n  - cpu_debug\n  - _self_\nvars:\n  NCCL_DEBUG: hf_PlantedSecretValue0123456789\n",
    "list_value": "defaults:\n  - cpu_debug\n  - _self_\nvars:\n  NCCL_DEBUG: [1, 2]\n",
}


def test_lint_on_hostile_presets_answers_each_in_a_line(tmp_path):
    conf = write_presets(tmp_path / "conf", HOSTILE)
    (conf / "env" / "a_directory.yaml").mkdir()
    proc = lint_cli(conf, "--json")
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr, proc.stderr
    results = json.loads(proc.stdout)["presets"]
    assert set(results) == set(HOSTILE)  # the directory named like a preset is not one
    for name in set(HOSTILE) - {"secret"}:
        assert results[name]["error"], (name, results[name])
    assert results["secret"]["lint"][0]["kind"] == "invalid_value"
    assert "hf_Planted" not in proc.stdout + proc.stderr
    text = lint_cli(conf)
    assert text.returncode == 1 and TRACEBACK not in text.stderr and text.stdout.count("does not load") == 7


@pytest.mark.parametrize("args, fragment", [
    (["/no/such/dir"], "no such directory"),
    (["--no-such-flag"], "unrecognized arguments"),
])
def test_lint_usage_errors_exit_2(args, fragment):
    proc = lint_cli(*args)
    assert proc.returncode == 2 and fragment in proc.stderr and TRACEBACK not in proc.stderr


def test_lint_on_a_directory_without_presets_exits_2(tmp_path):
    proc = lint_cli(tmp_path)
    assert proc.returncode == 2 and "holds no presets" in proc.stderr


# -- at job start -------------------------------------------------------------------------------
def test_the_findings_reach_the_report_and_the_log(run_stub):
    run = run_stub("train.steps=0", "+env.vars.NCCL_MAX_RW_PAIRS=4", "+env.vars.TORCH_NCCL_ASYNC_ERROR_HANDLNG=1")
    assert run.returncode == 0, run.output
    assert [(f["name"], f["kind"]) for f in run.report["lint"]] == [
        ("NCCL_MAX_RW_PAIRS", "unknown"), ("TORCH_NCCL_ASYNC_ERROR_HANDLNG", "unknown")]
    log = (run.out_dir / "train_stub.log").read_text()
    assert "lint: NCCL_MAX_RW_PAIRS (unknown)" in log and "Did you mean TORCH_NCCL_ASYNC_ERROR_HANDLING?" in log


def test_lint_error_stops_the_job_before_anything_is_applied(run_stub):
    run = run_stub("train.steps=3", "env.lint=error", "+env.vars.NCCL_MAX_RW_PAIRS=4", "+env.vars.MY_FLAG=1")
    assert run.returncode == 1 and TRACEBACK not in run.output
    assert "env.lint=error" in run.stderr and "NCCL_MAX_RW_PAIRS (unknown)" in run.stderr
    assert "step 0" not in run.output  # the task did not run
    report = run.report
    assert report["job"]["status"] == "check_failed" and report["lint"][0]["name"] == "NCCL_MAX_RW_PAIRS"
    assert report["threads"]["applied"] is False


def test_lint_off_says_nothing(run_stub):
    run = run_stub("train.steps=0", "env.lint=off", "+env.vars.NCCL_MAX_RW_PAIRS=4")
    assert run.returncode == 0 and run.report["lint"] == []


def test_the_table_loads_only_when_a_preset_sets_variables():
    code = ("import sys, bootstrap; s = bootstrap.initialize({}); s.preview(); "
            "print('bootstrap.variables.table' in sys.modules); "
            "bootstrap.initialize({'vars': {'NCCL_DEBUG': 'INFO'}}).preview();"
            "print('bootstrap.variables.table' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), timeout=120,
                          cwd=ROOT)
    assert proc.stdout.split() == ["False", "True"], proc.stderr
