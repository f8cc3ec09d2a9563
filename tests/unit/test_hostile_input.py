"""Hostile input, secrets and faults, second pass: never skipped, never leaked, never a traceback.

In-process where the behaviour is pure or needs only the real callback object; real
processes where it involves Hydra's hooks or its logging.
"""
import os
import threading

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

import bootstrap
from bootstrap.adapter.callback import BootstrapCallback
from bootstrap.doors.errors import BootstrapError, ConfigError
from bootstrap.doors.masking import is_secret, masked, masked_line, masked_override, masked_text

TRACEBACK = "Traceback (most recent call last)"
TOKEN = "hf_PlantedSecretValue0123456789"
HOOKS = {
    "on_run_start": {},
    "on_job_start": {},
    "on_job_end": {"job_return": None},
    "on_multirun_start": {},
    "on_multirun_end": {},
}


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_no_hook_lets_an_exception_escape_as_a_mere_warning(hook):
    # A config without the `hydra` node (or anything a hook needs) makes every hook raise
    # inside; Hydra would turn an Exception into a warning. SystemExit stops the process.
    callback = BootstrapCallback()
    if hook == "on_job_end":
        callback._session = object()  # a session that cannot be closed
    if hook == "on_run_start":
        os.environ.update(RANK="1", WORLD_SIZE="2")  # the torchrun path reads hydra.run.dir
    try:
        with pytest.raises(SystemExit) as stopped:
            getattr(callback, hook)(config=OmegaConf.create({"x": 1}), **HOOKS[hook])
    finally:
        for name in ("RANK", "WORLD_SIZE"):
            os.environ.pop(name, None) if hook == "on_run_start" else None
    assert f"the bootstrap failed in {hook}" in str(stopped.value.code)


def test_a_summary_that_cannot_be_written_still_restores_the_launching_process(tmp_path):
    sweep = tmp_path / "sweep"
    (sweep / "sweep_summary.csv").mkdir(parents=True)  # a directory where the summary goes
    callback = BootstrapCallback()
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}}})
    before = dict(os.environ)
    callback.on_multirun_start(config=config)
    os.environ["SET_BY_A_LAUNCHER"] = "1"
    with pytest.raises(SystemExit, match="the bootstrap failed in on_multirun_end"):
        callback.on_multirun_end(config=config)
    assert dict(os.environ) == before


# -- 2. secrets -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["HF_TOKEN", "WANDB_API_KEY", "GITHUB_PAT", "db.password", "env.vars.MY_KEY",
                                  "AUTH_HEADER", "SSH_PASSPHRASE"])
def test_secret_names(name):
    assert is_secret(name)


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "PATH", "TORCH_DISTRIBUTED_DEBUG", "PATCH_LEVEL"])
def test_ordinary_names(name):
    assert not is_secret(name)


@pytest.mark.parametrize("value, shown", [
    ("postgres://user:pw0rd@db:5432/x", "postgres://user:***@db:5432/x"),
    ("ghp_" + "a" * 36, "***"),
    (f"Bearer {TOKEN}", "Bearer ***"),
    ("AKIAABCDEFGHIJKLMNOP", "***"),
    ("plain value", "plain value"),
])
def test_credentials_inside_values_are_masked_whatever_the_name(value, shown):
    assert masked("DATABASE_URL", value) == shown


def test_overrides_are_masked_by_key_path_by_content_and_inside_dicts():
    assert masked_override("+env.vars.HF_TOKEN=abc") == "+env.vars.HF_TOKEN=***"
    assert masked_override("++env.vars={HF_TOKEN:a}") == "++env.vars=***"
    assert masked_override("+db.url=mysql://u:secretpw@h/db") == "+db.url=mysql://u:***@h/db"
    assert masked_override(f"+train.hub={TOKEN}") == "+train.hub=***"
    assert masked_line("\t#3 : env.threads.intra_op=2 +env.vars.MY_KEY=k1") == \
        "\t#3 : env.threads.intra_op=2 +env.vars.MY_KEY=***"
    assert TOKEN not in masked_text(f"Could not override 'x'. value: {TOKEN}", [f"+x={TOKEN}"])


# -- 3. sessions nest as a stack, or refuse clearly -------------------------------------------
@pytest.fixture
def clean_environ(monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED"):
        monkeypatch.delenv(name, raising=False)


def test_applying_a_session_twice_is_refused_and_leaks_nothing(clean_environ):
    before = dict(os.environ)
    session = bootstrap.initialize({"vars": {"ONE": "1"}}).apply()
    with pytest.raises(BootstrapError, match="already applied"):
        session.apply()
    session.close()
    assert dict(os.environ) == before


def test_another_threads_session_is_refused_while_one_is_applied(clean_environ):
    before = dict(os.environ)
    errors = []
    with bootstrap.initialize({"vars": {"ONE": "1"}}):
        def other():
            try:
                bootstrap.initialize({"vars": {"TWO": "2"}}).apply()
            except BootstrapError as error:
                errors.append(str(error))
        thread = threading.Thread(target=other, name="worker")
        thread.start()
        thread.join()
        assert "TWO" not in os.environ
    assert len(errors) == 1 and "already applied in thread 'MainThread'" in errors[0]
    assert dict(os.environ) == before


OPS = st.lists(st.tuples(st.sampled_from(["apply", "close"]), st.integers(0, 2)), max_size=12)


@settings(max_examples=60, deadline=None)
@given(ops=OPS)
def test_any_interleaving_of_nested_sessions_restores_everything(ops):
    """A stack: an inner session restores to its outer one's state, current() is the innermost,
    closing an outer session closes those inside it, and the end state is the start state."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED"):
        os.environ.pop(name, None)
    before, threads_before = dict(os.environ), torch.get_num_threads()
    sessions = [bootstrap.initialize({"vars": {f"S{i}": str(i), "SHARED": str(i)}, "seed": i}) for i in range(3)]
    applied = []  # our model of the stack
    for op, i in ops:
        session = sessions[i]
        if op == "apply":
            if session in applied:
                with pytest.raises(BootstrapError):
                    session.apply()
            else:
                session.apply()
                applied.append(session)
        elif session in applied:
            session.close()
            del applied[applied.index(session):]
        if applied:
            assert bootstrap.current() is applied[-1]
            assert os.environ["SHARED"] == applied[-1].preset.vars["SHARED"]
            assert all(f"S{sessions.index(s)}" in os.environ for s in applied)
        else:
            assert dict(os.environ) == before
    for session in reversed(applied):
        session.close()
    assert dict(os.environ) == before and torch.get_num_threads() == threads_before
    with pytest.raises(RuntimeError, match="No bootstrap session is active"):
        bootstrap.current()


# -- 5. absurd values -------------------------------------------------------------------------
@pytest.mark.parametrize("preset, fragment", [
    ({"threads": {"intra_op": 99999}},
     f"env.threads.intra_op=99999 is far beyond this machine's {os.cpu_count()} CPUs"),
    ({"threads": {"inter_op": 10**6}}, "env.threads.inter_op=1000000 is far beyond"),
    ({"distributed": {"timeout_s": 10**17}},
     "env.distributed.timeout_s=100000000000000000 must be positive and at most"),
    ({"distributed": {"mesh": {"dp": 0}}}, "env.distributed.mesh: sizes must be positive or -1"),
])
def test_absurd_values_are_refused_naming_the_key_before_anything_changes(clean_environ, preset, fragment):
    before = dict(os.environ)
    with pytest.raises(ConfigError) as refused:
        bootstrap.initialize(preset).apply()
    assert fragment in str(refused.value)
    assert dict(os.environ) == before


# -- 7. env=auto takes the documented override of a preset's variable --------------------------
def test_env_auto_re_applies_added_variables_over_the_chosen_presets_own():
    from bootstrap.core import compose
    from bootstrap.doors import overrides

    picked = overrides.reapplied(["env=auto", "+env.vars.TORCH_NCCL_ASYNC_ERROR_HANDLING=1", "env.seed=3",
                                 "~env.vars.PYTORCH_CUDA_ALLOC_CONF"], "env")
    chosen = compose.preset("a100", "env", picked)  # a100 sets the variable itself
    assert chosen.vars.TORCH_NCCL_ASYNC_ERROR_HANDLING == 1 and chosen.seed == 3
    assert "PYTORCH_CUDA_ALLOC_CONF" not in chosen.vars


# -- 8. the doctor never prints a traceback -----------------------------------------------------
@pytest.mark.parametrize("args", [
    ["env=auto", "+env.vars.MY_FLAG=1"],
    ["env=auto", "env.vars.MY_FLAG=1"],
    ["+train.x=${oc.env:UNSET_VARIABLE_FOR_DOCTOR}"],
    ["env.threads.intra_op=${oc.env:UNSET_VARIABLE_FOR_DOCTOR}"],
    ["env.threads.intra_op=99999"],
    ["+env.vars.HF_TOKEN=" + TOKEN, "env.seed=banana"],
])
def test_the_doctor_answers_every_input_with_a_status_and_a_message(doctor_here, tmp_path, args):
    proc = doctor_here(*args, cwd=tmp_path)
    assert proc.returncode in (0, 1, 2), proc.stderr
    assert TRACEBACK not in proc.stderr and TOKEN not in proc.stdout + proc.stderr
    assert proc.returncode == 0 or proc.stderr.startswith("bootstrap doctor: ")
