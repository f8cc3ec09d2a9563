"""The variable lint: each finding kind from plain inputs, the table against torch itself, the shipped
presets, `bootstrap lint` on hostile directories, and env.lint=error stopping a real job."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap import lint
from bootstrap.lint import Kind, Machine

from conftest import ROOT, clean_env

NO_GPU = Machine(nvidia_gpu=False, x86_64=True, intel_openmp=False)
HOPPER = Machine(nvidia_gpu=True, compute_capability=9.0, x86_64=True)
BLACKWELL = Machine(nvidia_gpu=True, compute_capability=10.0, x86_64=True)
TRACEBACK = "Traceback (most recent call last)"


def kinds(values, machine=None):
    return {(f.name, f.kind) for f in lint.check(values, machine)}


# The environment block of the Megatron retelling in ../shared/seed: read by nothing.
SEED_NAMES = ["NCCL_MAX_RW_PAIRS", "GPU_DIRECT_FAST_PATH", "TF32_FLUSH_TO_ZERO", "DISABLE_CUDA_AFFINITY",
              "TVM_NUM_THREADS", "NUMA_BIND", "DD_BIDIRECTIONAL_INFERENCE"]


@pytest.mark.parametrize("name", SEED_NAMES)
def test_the_seeds_invented_variables_are_read_by_nothing(name):
    (finding,) = lint.check({name: "1"}, HOPPER)
    assert (finding.kind, finding.name) == (Kind.unknown, name)
    assert "read by no library" in finding.message or "only by Apache TVM" in finding.message


# pytorch PR #114077 (torch 2.2): six NCCL_* names read by torch got a TORCH_ prefix.
RENAMES_2_2 = {"NCCL_BLOCKING_WAIT": "TORCH_NCCL_BLOCKING_WAIT", "NCCL_ENABLE_TIMING": "TORCH_NCCL_ENABLE_TIMING",
               "NCCL_DESYNC_DEBUG": "TORCH_NCCL_DESYNC_DEBUG", "NCCL_ASYNC_ERROR_HANDLING":
                   "TORCH_NCCL_ASYNC_ERROR_HANDLING", "ENABLE_NCCL_HEALTH_CHECK": "TORCH_ENABLE_NCCL_HEALTH_CHECK",
               "NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK": "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK"}


@pytest.mark.parametrize("old, new", sorted(RENAMES_2_2.items()))
def test_the_torch_2_2_renames_name_the_new_variable(old, new):
    findings = lint.check({old: "1"}, HOPPER)
    if old == "ENABLE_NCCL_HEALTH_CHECK":  # renamed in 2.2, and the health check itself removed in 2.3
        assert [f.kind for f in findings] == [Kind.obsolete] and "no longer read since torch 2.3" in findings[0].message
        return
    (finding,) = findings
    assert finding.kind is Kind.renamed and f"renamed it {new}" in finding.message and "torch 2.2" in finding.message


def test_a_typo_in_a_known_namespace_gets_the_nearest_name():
    (finding,) = lint.check({"TORCH_NCCL_ASYNC_ERROR_HANDLNG": "3"}, HOPPER)
    assert finding.kind is Kind.unknown and finding.message.endswith("Did you mean TORCH_NCCL_ASYNC_ERROR_HANDLING?")
    (far,) = lint.check({"NCCL_ZZZ_QQQ": "1"})
    assert far.kind is Kind.unknown and "Did you mean" not in far.message


def test_names_outside_every_namespace_are_the_users_own():
    assert lint.check({"MY_APP_FLAG": "1", "WANDB_PROJECT": "x", "HF_HOME": "/data"}, NO_GPU) == []


def test_aliases_and_obsolete_settings():
    assert kinds({"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}) == {("TORCH_NCCL_TRACE_BUFFER_SIZE", Kind.renamed)}
    (finding,) = lint.check({"TORCH_NCCL_AVOID_RECORD_STREAMS": "1"}, HOPPER)
    assert finding.kind is Kind.obsolete and "since torch 2.8" in finding.message


@pytest.mark.parametrize("name, bad, good, fragment", [
    ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "7", "3", "TORCH_NCCL_ASYNC_ERROR_HANDLING=7 is not a value"),
    ("TORCH_DISTRIBUTED_DEBUG", "LOUD", "detail", "use one of OFF, INFO, DETAIL"),  # compared case-insensitively
    ("TORCH_NCCL_BLOCKING_WAIT", "maybe", "true", "TORCH_NCCL_BLOCKING_WAIT=maybe is not a value"),
    ("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "soon", "-1", "is not an integer"),
    ("TORCH_FR_BUFFER_SIZE", "lots", "2000", "is not a count"),
    ("TORCH_FR_BUFFER_SIZE", "-5", "0", "is not a count"),  # as the plan refuses it: torch would keep everything
])
def test_invalid_values(name, bad, good, fragment):
    (finding,) = lint.check({name: bad}, HOPPER)
    assert finding.kind is Kind.invalid_value and fragment in finding.message
    assert lint.check({name: good}, HOPPER) == []


def test_a_secret_value_is_masked_in_a_finding():
    (finding,) = lint.check({"NCCL_DEBUG": "hf_PlantedSecretValue0123456789"}, HOPPER)
    assert finding.kind is Kind.invalid_value and "hf_Planted" not in finding.message


@pytest.mark.parametrize("values, machine, fragment", [
    ({"NCCL_IB_HCA": "mlx5_0"}, NO_GPU, "has no NVIDIA GPU"),
    ({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}, NO_GPU, "has no NVIDIA GPU"),
    ({"CUDA_DEVICE_MAX_CONNECTIONS": "1"}, BLACKWELL, "below compute capability 10.0 (before Blackwell)"),
    ({"NCCL_NVLS_ENABLE": "1"}, Machine(nvidia_gpu=True, compute_capability=8.0), "compute capability 9.0 or newer"),
    ({"KMP_AFFINITY": "compact"}, NO_GPU, "torch wheels load GNU libgomp"),
    ({"MKL_NUM_THREADS": "2"}, Machine(x86_64=False), "x86_64 torch wheel"),
])
def test_settings_for_hardware_this_machine_lacks(values, machine, fragment):
    (finding,) = lint.check(values, machine)
    assert finding.kind is Kind.hardware and fragment in finding.message


def test_hardware_is_judged_only_where_it_can_be_known():
    values = {"NCCL_IB_HCA": "mlx5_0", "CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_NVLS_ENABLE": "1"}
    assert lint.check(values) == [] and lint.check(values, Machine()) == []  # nothing known: nothing said
    assert lint.check(values, HOPPER) == []


# -- the table against torch 2.13 itself ---------------------------------------------------------
def test_every_variable_the_bootstrap_sets_itself_is_known():
    from bootstrap import readers, variables

    names = {n for g in variables.GROUPS for v in g for n in [v.name]}
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUBLAS_WORKSPACE_CONFIG", "TORCH_DISTRIBUTED_DEBUG",
                 "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "PYTORCH_CUDA_ALLOC_CONF"):
        assert name in names, name
    # Every named row of the timing table is a known variable, not merely a name in a namespace.
    for reader in readers.READERS:
        for pattern in reader.patterns:
            if "*" not in pattern and pattern.startswith(variables.NAMESPACES):
                assert pattern in lint.known_names(), pattern


def test_the_names_torch_reads_as_its_own_are_in_this_torch():
    """Each TORCH_*/PYTORCH_* name the table says torch 2.13 reads appears in torch's own files here."""
    import torch

    from bootstrap import variables

    root = Path(torch.__file__).parent
    text = b"".join(p.read_bytes() for p in list(root.glob("lib/libtorch_cpu.so")) + list(root.glob("lib/libc10.so")))
    text += "".join(p.read_text(errors="ignore") for p in root.rglob("*.py")).encode()
    torch_groups = (variables.TORCH_FR, variables.TORCH_DISTRIBUTED)
    missing = [v.name for g in torch_groups for v in g  # the CUDA build's own names cannot be seen in this one
               if not v.removed_in and "nvidia_gpu" not in v.hardware and v.name.encode() not in text]
    assert not missing, f"not found in this torch's CPU libraries or sources: {missing}"


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
            "print('bootstrap.variables' in sys.modules); "
            "bootstrap.initialize({'vars': {'NCCL_DEBUG': 'INFO'}}).preview();"
            "print('bootstrap.variables' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), timeout=120,
                          cwd=ROOT)
    assert proc.stdout.split() == ["False", "True"], proc.stderr
