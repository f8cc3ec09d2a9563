"""Precedence, normalisation and restore of environment variables (pure logic + a dict)."""
import re

import pytest

from bootstrap.doors.errors import ConfigError
from bootstrap.variables.environ import (
    EXPORTED,
    PROCESS,
    EnvironSnapshot,
    apply_vars,
    export_digest,
    inherited_names,
    normalize,
    plan_vars,
    process_decisions,
    read_marker,
    set_by_process,
)
from bootstrap.variables.readers import ProcessState, reader_for

FRESH = ProcessState(cuda_initialized=False, process_group_initialized=False)
CUDA_UP = ProcessState(cuda_initialized=True, process_group_initialized=False)


def decide(requested, environ=None, env_set=None, overrides=(), state=FRESH):
    return {d.name: d for d in plan_vars(requested, environ or {}, env_set or {}, set(overrides), state)}


@pytest.mark.parametrize("value, text", [
    (4, "4"), (0, "0"), (True, "1"), (False, "0"), (0.5, "0.5"),
    ("expandable_segments:True", "expandable_segments:True"),
    ("", ""), ("ünïcödé", "ünïcödé"), (None, None),
])
def test_normalize(value, text):
    assert normalize("NAME", value) == text
    if text is not None:
        assert normalize("NAME", text) == text  # stable: normalising twice changes nothing


@pytest.mark.parametrize("name, value, fragment", [
    ("LIST", [1, 2], "env.vars.LIST is a list"),
    ("DICT", {"a": 1}, "env.vars.DICT is a dict"),
    ("NUL", "a\0b", "env.vars.NUL contains a NUL byte"),
    ("BAD=NAME", "1", "env.vars.BAD=NAME"),
    ("BAD NAME", "1", "env.vars.BAD NAME"),
    ("1LEADING_DIGIT", "1", "env.vars.1LEADING_DIGIT"),
    ("", "1", "not a valid environment variable name"),
])
def test_bad_values_and_names_are_rejected_naming_the_key(name, value, fragment):
    with pytest.raises(ConfigError) as err:
        normalize(name, value)
    assert fragment in str(err.value)


def test_preset_value_is_used_when_nothing_else_sets_the_variable():
    d = decide({"A": "1"})["A"]
    assert (d.value, d.source, d.changes_environ) == ("1", "preset", True)


def test_shell_beats_preset():
    d = decide({"A": "1"}, environ={"A": "shell"})["A"]
    assert (d.value, d.source, d.changes_environ) == ("shell", "shell", False)
    assert "kept the shell value" in d.note


def test_env_set_beats_preset_and_is_reported_as_env_set():
    # Hydra has already put env_set values into os.environ when the callback runs.
    d = decide({"A": "1"}, environ={"A": "from_env_set"}, env_set={"A": "from_env_set"})["A"]
    assert (d.value, d.source, d.changes_environ) == ("from_env_set", "env_set", False)


def test_shell_beats_env_set_beats_preset_in_one_plan():
    plan = decide({"S": "p", "E": "p", "P": "p"}, environ={"S": "shell", "E": "env_set"}, env_set={"E": "env_set"})
    assert {n: (d.source, d.value) for n, d in plan.items()} == {
        "S": ("shell", "shell"), "E": ("env_set", "env_set"), "P": ("preset", "p")}


def test_command_line_override_wins_and_is_recorded_as_override():
    d = decide({"A": "cli"}, environ={"A": "shell"}, overrides={"A"})["A"]
    assert (d.value, d.source, d.changes_environ) == ("cli", "override", True)
    assert "replaced the existing value 'shell'" in d.note


def test_null_drops_a_preset_variable():
    assert decide({"A": None}) == {}


def test_late_variable_is_exported_but_not_effective_and_warns():
    d = decide({"CUDA_DEVICE_MAX_CONNECTIONS": "1"}, state=CUDA_UP)["CUDA_DEVICE_MAX_CONNECTIONS"]
    assert d.changes_environ and not d.effective and d.warn
    assert "when the CUDA context is created" in d.note
    assert decide({"CUDA_DEVICE_MAX_CONNECTIONS": "1"}, state=FRESH)["CUDA_DEVICE_MAX_CONNECTIONS"].effective


def test_thread_variables_are_never_effective_in_process_but_never_warn():
    d = decide({"OMP_NUM_THREADS": "2"})["OMP_NUM_THREADS"]
    assert not d.effective and not d.warn and "torch.set_num_threads" in d.note


def test_process_group_variables_depend_on_the_process_group():
    pg_up = ProcessState(cuda_initialized=False, process_group_initialized=True)
    assert decide({"NCCL_DEBUG": "WARN"}, state=FRESH)["NCCL_DEBUG"].effective
    assert not decide({"NCCL_DEBUG": "WARN"}, state=pg_up)["NCCL_DEBUG"].effective
    assert not decide({"TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}, state=pg_up)["TORCH_NCCL_DUMP_ON_TIMEOUT"].effective


def test_unknown_variables_are_assumed_effective():
    assert reader_for("MY_APP_SETTING").read_when == "not in the bootstrap's table"
    assert decide({"MY_APP_SETTING": "x"})["MY_APP_SETTING"].effective


def test_snapshot_restores_exactly_and_leaves_foreign_keys_alone():
    environ = {"KEEP": "1", "CHANGED": "old", "REMOVED": "x", "HYDRA_OWNED": "env_set"}
    before = dict(environ)
    snapshot = EnvironSnapshot(environ, foreign={"HYDRA_OWNED"})
    apply_vars(plan_vars({"CHANGED": "new", "ADDED": "y"}, environ, {}, {"CHANGED"}, FRESH), environ)
    environ["TASK_ADDED"] = "z"
    del environ["REMOVED"]
    del environ["HYDRA_OWNED"]  # what Hydra does to its env_set keys before on_job_end
    snapshot.restore()
    assert environ == {k: v for k, v in before.items() if k != "HYDRA_OWNED"}


def test_secret_names_and_overrides_are_masked():
    from bootstrap.doors.masking import is_secret, masked_override

    for name in ("HF_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GCP_CREDENTIALS", "hf_token"):
        assert is_secret(name), name
    for name in ("OMP_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF", "TORCH_NCCL_DUMP_ON_TIMEOUT"):
        assert not is_secret(name), name
    assert masked_override("+env.vars.HF_TOKEN=hf_x") == "+env.vars.HF_TOKEN=***"
    assert masked_override("env.threads.intra_op=2") == "env.threads.intra_op=2"
    assert masked_override("env.vars={HF_TOKEN:hf_x,OTHER:1}") == "env.vars=***"  # a secret inside a dict
    assert masked_override("env.vars={OTHER:1}") == "env.vars={OTHER:1}"


def test_a_variable_a_parent_bootstrap_exported_yields_to_the_preset():
    inherited = {"A": "parent", "HYDRA_TRAIN_BOOTSTRAP_EXPORTED": "A"}
    d = decide({"A": "mine"}, environ=inherited)["A"]
    assert (d.value, d.source, d.changes_environ) == ("mine", "preset", True)
    assert "parent process's bootstrap exported" in d.note
    # the same value from the user's own shell still wins
    assert decide({"A": "mine"}, environ={"A": "parent"})["A"].source == "shell"


def test_apply_lists_what_it_wrote_for_child_processes():
    environ = {EXPORTED: "OLD,GONE", "OLD": "1"}  # an older bootstrap's names-only marker
    apply_vars(plan_vars({"A": "1", "B": "2"}, {"B": "2"}, {}, set(), FRESH), environ, key=KEY)
    # B was the user's; GONE is no longer set; OLD, still as the parent left it, is carried on
    assert environ[EXPORTED] == f"A:{export_digest(KEY, 'A', '1')},OLD:{export_digest(KEY, 'OLD', '1')}"


def test_a_late_variable_that_ranks_must_agree_on_is_withheld():
    environ = {}
    plan = decide({"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "CUDA_LAUNCH_BLOCKING": "1"}, state=CUDA_UP)
    cublas = plan["CUBLAS_WORKSPACE_CONFIG"]
    assert (cublas.withheld, cublas.changes_environ, cublas.effective, cublas.warn) == (True, False, False, True)
    assert "not set" in cublas.note
    apply_vars(plan.values(), environ)
    assert "CUBLAS_WORKSPACE_CONFIG" not in environ and environ["CUDA_LAUNCH_BLOCKING"] == "1"  # children only
    assert not decide({"CUBLAS_WORKSPACE_CONFIG": ":4096:8"})["CUBLAS_WORKSPACE_CONFIG"].withheld  # in time


def test_the_distributed_debug_level_is_applied_through_torch_so_it_counts_as_effective():
    d = decide({"TORCH_DISTRIBUTED_DEBUG": "INFO"})["TORCH_DISTRIBUTED_DEBUG"]
    assert (d.effective, d.changes_environ, d.warn, d.withheld) == (True, True, False, False)
    assert reader_for("TORCH_DISTRIBUTED_DEBUG").apply_now == "distributed_debug"


# -- the user's value wins, by value (issue 20) -----------------------------------------------
KEY = bytes(range(32))


def exported_by_parent(requested, key=KEY):
    """The environment a parent's bootstrap leaves for its children after planning ``requested``."""
    environ = {}
    apply_vars(plan_vars(requested, environ, {}, set(), FRESH), environ, key=key)
    return environ


def test_the_digest_is_keyed_short_and_tells_values_and_names_apart():
    digest = export_digest(KEY, "A", "1")
    assert re.fullmatch(r"[0-9a-f]{16}", digest) and digest == export_digest(KEY, "A", "1")
    assert len({digest, export_digest(KEY, "A", "2"), export_digest(KEY, "B", "1"),
                export_digest(bytes(32), "A", "1")}) == 4
    assert export_digest(KEY, "A", "\udcff") != export_digest(KEY, "A", "")  # any text os.environ can hold


def test_the_marker_never_holds_a_value():
    values = {"HF_TOKEN": "hf_secret_value_1234", "DB_PASSWORD": "hunter2", "APP_MODE": "verbose"}
    marker = exported_by_parent(values)[EXPORTED]
    assert set(read_marker(marker)) == set(values)
    for value in values.values():
        assert value not in marker
    assert re.fullmatch(r"([A-Z_]+:[0-9a-f]{16},?)+", marker)


def test_an_unchanged_export_is_the_parents():
    child = exported_by_parent({"OMP_NUM_THREADS": "2"})
    assert inherited_names(child, KEY) == {"OMP_NUM_THREADS"}
    d = decide_with(child, {"OMP_NUM_THREADS": "4"})
    assert (d.value, d.source, d.changes_environ) == ("4", "preset", True)
    assert "replaced the value a parent process's bootstrap exported" in d.note


def test_a_value_changed_after_the_export_is_the_users_and_wins():
    child = {**exported_by_parent({"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}), "OMP_NUM_THREADS": "3"}
    assert inherited_names(child, KEY) == {"MKL_NUM_THREADS"}
    omp = decide_with(child, {"OMP_NUM_THREADS": "4"})
    assert (omp.value, omp.source, omp.changes_environ) == ("3", "shell", False)
    assert "parent process" not in omp.note and "kept the shell value over the preset's '4'" in omp.note


def test_env_set_is_the_users_even_when_it_repeats_the_parents_value():
    child = exported_by_parent({"A": "1"})
    d = plan_vars({"A": "9"}, child, {"A": "1"}, set(), FRESH, key=KEY)[0]
    assert (d.value, d.source) == ("1", "env_set")


@pytest.mark.parametrize("key", [None, bytes(32)], ids=["no key here", "another key"])
def test_a_digest_that_cannot_be_verified_counts_as_the_users(key):
    child = exported_by_parent({"A": "1"})
    assert inherited_names(child, key) == frozenset()
    assert decide_with(child, {"A": "2"}, key=key).source == "shell"


def test_without_a_key_the_names_are_recorded_and_verify_nothing():
    environ = exported_by_parent({"A": "1"}, key=None)
    assert environ[EXPORTED] == "A:" and inherited_names(environ, KEY) == frozenset()


def test_a_marker_that_no_longer_describes_anything_is_dropped():
    child = {**exported_by_parent({"A": "1"}), "A": "mine"}
    apply_vars(plan_vars({"A": "2"}, child, {}, set(), FRESH), child, key=KEY)  # the user's A stays
    assert child == {"A": "mine"}


@pytest.mark.parametrize("marker", ["", ",,,", "A:", "=:x,1A:00", "A:" + "0" * 16, "A:zz"])
def test_odd_markers_make_no_value_the_parents(marker):
    assert inherited_names({EXPORTED: marker, "A": "1"}, KEY) == frozenset()


def decide_with(environ, requested, key=KEY):
    """The decision for one variable, a parent's digests verified under ``key``."""
    return plan_vars(requested, environ, {}, set(), FRESH, key=key)[0]


def test_a_launchers_value_ranks_below_the_preset_and_is_named_as_the_launchers():
    state = FRESH
    ray = {"OMP_NUM_THREADS": "ray_task"}
    kept, = plan_vars({"OMP_NUM_THREADS": "1"}, {"OMP_NUM_THREADS": "1"}, {}, (), state, by_launcher=ray)
    assert (kept.source, kept.value, kept.changes_environ, kept.note.split(";")[0]) == \
        ("launcher", "1", False, "set by ray_task")
    replaced, = plan_vars({"OMP_NUM_THREADS": "2"}, {"OMP_NUM_THREADS": "1"}, {}, (), state, by_launcher=ray)
    assert (replaced.source, replaced.value) == ("preset", "2")
    assert replaced.note.startswith("replaced the value ray_task set ('1')")
    overridden, = plan_vars({"OMP_NUM_THREADS": "2"}, {"OMP_NUM_THREADS": "1"}, {}, {"OMP_NUM_THREADS"}, state,
                            by_launcher=ray)
    assert (overridden.source, overridden.value) == ("override", "2")
    users, = plan_vars({"OMP_NUM_THREADS": "2"}, {"OMP_NUM_THREADS": "1"}, {"OMP_NUM_THREADS": "1"}, (), state,
                       by_launcher=ray)  # the job's own env_set is the user's, whatever the launcher did
    assert (users.source, users.value) == ("env_set", "1")


@pytest.mark.parametrize("digest", ["ü", "0123", "zz" * 8, "0123456789ABCDEF", " " * 16])
def test_a_digest_that_is_not_one_counts_as_the_users_value(digest):
    from bootstrap.variables.environ import EXPORTED, read_marker

    assert read_marker(f"OMP_NUM_THREADS:{digest}") == {"OMP_NUM_THREADS": ""}  # verifies nothing
    environ = {EXPORTED: f"OMP_NUM_THREADS:{digest}", "OMP_NUM_THREADS": "3"}
    assert "OMP_NUM_THREADS" not in inherited_names(environ)


# -- a value the process set for itself before the job started ---------------------------------------
def test_a_value_set_since_the_process_started_is_the_processs_not_the_shells():
    start = {"SHELL_ONE": "1", "CHANGED": "old", "HYDRA_SET": "x"}
    now = {"SHELL_ONE": "1", "CHANGED": "new", "NEW_ONE": "1", "HYDRA_SET": "y"}
    assert set_by_process(now, start, env_set={"HYDRA_SET"}) == {"CHANGED", "NEW_ONE"}  # env_set: the job's own
    assert set_by_process(now, None) == frozenset()  # the start cannot be known (not Linux): none, as before


def test_a_value_the_process_set_wins_over_the_preset_as_the_shells_does_and_says_whose_it_is():
    plan = {d.name: d for d in plan_vars({"A": "preset", "B": "preset"}, {"A": "mine", "B": "shell"}, {}, set(),
                                         FRESH, by_process={"A"})}
    assert (plan["A"].value, plan["A"].source, plan["A"].changes_environ) == ("mine", PROCESS, False)
    assert "kept the value this process set itself over the preset's 'preset'" in plan["A"].note
    assert plan["B"].source == "shell"  # only the names the process set are its own
    override = plan_vars({"A": "cli"}, {"A": "mine"}, {}, {"A"}, FRESH, by_process={"A"})[0]
    assert (override.source, override.value) == ("override", "cli")  # the command line still wins


def test_a_variable_the_process_set_is_recorded_not_written_and_takes_effect_unless_read_at_start():
    hashseed, nvml = process_decisions({"PYTORCH_NVML_BASED_CUDA_CHECK": "by lightning", "PYTHONHASHSEED": "by app",
                                        "GONE": "unset since"}, {"PYTORCH_NVML_BASED_CUDA_CHECK": "1",
                                                                 "PYTHONHASHSEED": "3"})
    assert (nvml.name, nvml.value, nvml.source, nvml.changes_environ, nvml.effective, nvml.note) == (
        "PYTORCH_NVML_BASED_CUDA_CHECK", "1", PROCESS, False, True, "by lightning")
    # read as the interpreter starts: setting it later changes nothing here
    assert (hashseed.name, hashseed.effective) == ("PYTHONHASHSEED", False)
