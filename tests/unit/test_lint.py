"""The variable lint: each finding kind from plain inputs, the table against torch itself, the shipped
presets, `bootstrap lint` on hostile directories, and env.lint=error stopping a real job."""
from pathlib import Path

import pytest

from bootstrap.variables import lint
from bootstrap.variables.lint import Kind, Machine

NO_GPU = Machine(nvidia_gpu=False, x86_64=True, intel_openmp=False)
HOPPER = Machine(nvidia_gpu=True, compute_capability=9.0, x86_64=True)
BLACKWELL = Machine(nvidia_gpu=True, compute_capability=10.0, x86_64=True)


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


# -- the table's shape: each name once ------------------------------------------------------------
def name_lists():
    """Every list of variable names the variables folder exports, by where it sits: each group of the
    table, the names nothing reads, torch's other names."""
    from bootstrap.variables import table, torch_names

    groups = {attr: value for attr, value in vars(table).items()
              if isinstance(value, tuple) and value and all(isinstance(v, table.KnownVariable) for v in value)}
    assert list(groups.values()) == list(table.GROUPS), "a group of the table is missing from GROUPS"
    lists = {f"table.{attr}": [v.name for v in group] for attr, group in groups.items()}
    lists["table.NOT_READ"] = list(table.NOT_READ)
    lists.update({f"torch_names.{attr}": sorted(value) for attr, value in vars(torch_names).items()
                  if isinstance(value, frozenset)})
    return lists


def repeated(lists):
    """'NAME: in A, B' for each name listed more than once, within one list or across them."""
    where = {}
    for place, names in lists.items():
        for name in names:
            where.setdefault(name, []).append(place)
    return [f"{name}: in {', '.join(places)}" for name, places in sorted(where.items()) if len(places) > 1]


def test_no_variable_is_listed_twice_nor_in_two_lists():
    assert repeated(name_lists()) == []


def test_a_repeated_name_is_found():
    lists = name_lists()
    lists["table.NCCL"] = lists["table.NCCL"] + ["NCCL_DEBUG"]  # twice in one group
    lists["table.NOT_READ"] = lists["table.NOT_READ"] + ["NCCL_ALGO"]  # in two lists
    assert repeated(lists) == ["NCCL_ALGO: in table.NCCL, table.NOT_READ",
                               "NCCL_DEBUG: in table.NCCL, table.NCCL"]


def test_each_row_is_one_variable_on_known_hardware():
    import re

    from bootstrap.variables import readers, table

    rows = [v for group in table.GROUPS for v in group]
    assert [v.name for v in rows if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", v.name)] == []  # a name, not a pattern
    assert {tag for v in rows for tag in v.hardware} <= set(table.HARDWARE)
    assert len(set(table.NAMESPACES)) == len(table.NAMESPACES)
    # The first reader that matches a name wins, so a pattern in two readers would leave one of them dead.
    patterns = [pattern for reader in readers.READERS for pattern in reader.patterns]
    assert len(set(patterns)) == len(patterns)


def test_omp_num_threads_is_one_row_naming_every_reader():
    from bootstrap.variables import table

    (var,) = [v for group in table.GROUPS for v in group if v.name == "OMP_NUM_THREADS"]
    assert "libgomp" in var.library and "torchrun" in var.library


# -- the table against torch 2.13 itself ---------------------------------------------------------
def test_every_variable_the_bootstrap_sets_itself_is_known():
    from bootstrap.variables import readers, table

    names = {n for g in table.GROUPS for v in g for n in [v.name]}
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUBLAS_WORKSPACE_CONFIG", "TORCH_DISTRIBUTED_DEBUG",
                 "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "PYTORCH_CUDA_ALLOC_CONF"):
        assert name in names, name
    # Every named row of the timing table is a known variable, not merely a name in a namespace.
    for reader in readers.READERS:
        for pattern in reader.patterns:
            if "*" not in pattern and pattern.startswith(table.NAMESPACES):
                assert pattern in lint.known_names(), pattern


def test_the_names_torch_reads_as_its_own_are_in_this_torch():
    """Each TORCH_*/PYTORCH_* name the table says torch 2.13 reads appears in torch's own files here."""
    import torch

    from bootstrap.variables import table

    root = Path(torch.__file__).parent
    text = b"".join(p.read_bytes() for p in list(root.glob("lib/libtorch_cpu.so")) + list(root.glob("lib/libc10.so")))
    text += "".join(p.read_text(errors="ignore") for p in root.rglob("*.py")).encode()
    torch_groups = (table.TORCH_FR, table.TORCH_DISTRIBUTED)
    missing = [v.name for g in torch_groups for v in g  # the CUDA build's own names cannot be seen in this one
               if not v.removed_in and "nvidia_gpu" not in v.hardware and v.name.encode() not in text]
    assert not missing, f"not found in this torch's CPU libraries or sources: {missing}"


# -- the one verdict behind the hardware finding and the report's ``effective`` ---------------------------
def test_hardware_gap_says_what_the_machine_lacks_and_whether_the_variable_does_nothing():
    assert lint.hardware_gap("TORCH_NCCL_ASYNC_ERROR_HANDLING", NO_GPU) == ("this machine has no NVIDIA GPU", True)
    gap = lint.hardware_gap("CUDA_DEVICE_MAX_CONNECTIONS", BLACKWELL)  # still acts, only not needed
    assert gap is not None and not gap.does_nothing and "before Blackwell" in gap.why
    assert lint.hardware_gap("TORCH_NCCL_ASYNC_ERROR_HANDLING", HOPPER) is None
    assert lint.hardware_gap("TORCH_NCCL_ASYNC_ERROR_HANDLING", None) is None  # nothing known, nothing said
    assert lint.hardware_gap("MY_OWN_SETTING", NO_GPU) is None  # an unknown name: no table row to judge by
    (finding,) = lint.check({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}, NO_GPU)
    assert "but this machine has no NVIDIA GPU: it does nothing here." in finding.message


def test_a_findings_fields_are_bounded_alike_in_the_text_and_the_json(capsys, tmp_path):
    # issue 45: every output form bounded alike; a preset may name a variable far longer than a line (YAML takes
    # 1,024 characters in a plain key)
    import json

    from bootstrap.cli import lint_presets

    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "wide.yaml").write_text(
        "defaults:\n  - /bootstrap/schema/env@_here_\n  - _self_\nvars:\n  NCCL_" + "X" * 1_000 + ": 1\n")
    assert lint_presets.main([str(tmp_path)]) == 1
    text = capsys.readouterr().out
    assert lint_presets.main([str(tmp_path), "--json"]) == 1
    (found,) = json.loads(capsys.readouterr().out)["presets"]["wide"]["lint"]
    assert len(found["name"]) <= lint_presets.MAX_NAME and len(found["message"]) <= lint_presets.MAX_MESSAGE
    assert max(map(len, text.splitlines())) < lint_presets.MAX_NAME + lint_presets.MAX_MESSAGE + 40
