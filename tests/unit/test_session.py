"""The plain-Python API, in this process, with real torch: apply, read back, restore."""
import json
import os

import pytest
import torch

import bootstrap
from bootstrap.doors.errors import ConfigError, MismatchError


@pytest.fixture
def clean_environ(monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED", "MY_SETTING", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def torch_settings():
    return (torch.get_num_threads(), torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark,
            torch.backends.cudnn.allow_tf32, torch.backends.cudnn.deterministic,
            torch.are_deterministic_algorithms_enabled(), torch.is_anomaly_enabled())


PRESET = {
    "threads": {"intra_op": 1},
    "vars": {"MY_SETTING": "on", "HF_TOKEN": "hf_do_not_leak"},
    "torch": {"matmul_precision": "high", "cudnn_benchmark": True, "cudnn_allow_tf32": False, "detect_anomaly": True},
    "seed": 1234,
}


def test_applies_reads_back_and_restores_after_success(clean_environ, tmp_path):
    env_before, torch_before = dict(os.environ), torch_settings()
    with bootstrap.initialize(PRESET, name="mine", output_dir=tmp_path) as session:
        assert torch.get_num_threads() == 1
        assert torch.get_float32_matmul_precision() == "high" and torch.backends.cudnn.benchmark
        assert torch.is_anomaly_enabled() and not torch.backends.cudnn.allow_tf32
        assert os.environ["MY_SETTING"] == "on" and os.environ["OMP_NUM_THREADS"] == "1"
        assert os.environ["PYTHONHASHSEED"] == "1234"
        assert bootstrap.current() is session
        first = torch.rand(3)
    assert dict(os.environ) == env_before
    assert torch_settings() == torch_before
    torch.manual_seed(1234)
    assert torch.equal(first, torch.rand(3))  # seeded from env.seed
    report = json.loads((tmp_path / "bootstrap.json").read_text())
    assert report["threads"]["intra_op"] == 1 and report["job"]["status"] == "completed"
    assert {name: report["torch"][name] for name in PRESET["torch"]} == PRESET["torch"]
    with pytest.raises(RuntimeError, match="No bootstrap session is active"):
        bootstrap.current()


def test_restores_after_an_exception_and_records_failure(clean_environ, tmp_path):
    env_before, torch_before = dict(os.environ), torch_settings()
    with pytest.raises(ZeroDivisionError):
        with bootstrap.initialize(PRESET, output_dir=tmp_path):
            assert torch.is_anomaly_enabled()
            os.environ["SET_BY_TASK"] = "1"
            raise ZeroDivisionError("the task failed")
    assert dict(os.environ) == env_before
    assert torch_settings() == torch_before
    job = json.loads((tmp_path / "bootstrap.json").read_text())["job"]
    assert job["status"] == "failed" and "ZeroDivisionError" in job["error"]


def test_secret_values_are_masked_in_the_report_but_set_in_the_environment(clean_environ, tmp_path):
    with bootstrap.initialize(PRESET, output_dir=tmp_path):
        assert os.environ["HF_TOKEN"] == "hf_do_not_leak"
    text = (tmp_path / "bootstrap.json").read_text()
    assert "hf_do_not_leak" not in text
    assert json.loads(text)["vars"]["HF_TOKEN"]["value"] == "***"


def test_a_failed_check_raises_and_changes_nothing(clean_environ, tmp_path):
    env_before, torch_before = dict(os.environ), torch_settings()
    session = bootstrap.initialize({**PRESET, "requires": {"torch": "<1.0"}}, name="old", output_dir=tmp_path)
    with pytest.raises(MismatchError, match=r"env=old needs torch <1.0, but found"):
        session.apply()
    assert dict(os.environ) == env_before and torch_settings() == torch_before
    assert json.loads((tmp_path / "bootstrap.json").read_text())["job"]["status"] == "check_failed"


def test_warn_keeps_going_and_records_the_failed_check(clean_environ):
    with bootstrap.initialize({"requires": {"torch": "<1.0"}, "on_mismatch": "warn"}) as session:
        assert [c.ok for c in session.report.checks] == [False]
        assert any("needs torch <1.0" in w for w in session.report.warnings)


def test_bad_config_is_rejected_before_anything_is_applied(clean_environ):
    env_before = dict(os.environ)
    with pytest.raises(ConfigError, match="env.vars.MY_SETTING is a list"):
        bootstrap.initialize({"vars": {"MY_SETTING": [1, 2]}}).apply()
    with pytest.raises(ConfigError, match="train_env.threads.intra_op"):
        bootstrap.initialize({"threads": {"intra_op": "abc"}}, key="train_env")
    assert dict(os.environ) == env_before


def test_auto_threads_honour_a_user_omp_num_threads(clean_environ, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    with bootstrap.initialize({"threads": {"intra_op": "auto"}}) as session:
        assert torch.get_num_threads() == 1
        # set in this (the test's) process after it started, so not the shell's: like the shell's, it wins
        assert session.report.vars["OMP_NUM_THREADS"].source == "process"


def test_auto_threads_use_the_cpus_this_process_may_run_on(clean_environ):
    with bootstrap.initialize({"threads": {"intra_op": "auto"}}) as session:
        assert session.report.threads.intra_op == len(os.sched_getaffinity(0))


def test_deterministic_mode_and_its_restore(clean_environ):
    with bootstrap.initialize({"torch": {"deterministic": True, "cudnn_benchmark": True}}) as session:
        assert torch.are_deterministic_algorithms_enabled() and torch.backends.cudnn.deterministic
        assert not torch.backends.cudnn.benchmark and session.report.torch.cudnn_benchmark is False  # autotuning varies
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert not torch.are_deterministic_algorithms_enabled()
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ


def test_a_report_that_cannot_be_written_fails_the_job_and_changes_nothing(clean_environ, tmp_path):
    (tmp_path / "a_file").write_text("")
    env_before, torch_before = dict(os.environ), torch_settings()
    with pytest.raises(OSError):
        bootstrap.initialize(PRESET, output_dir=tmp_path / "a_file" / "out").apply()
    assert dict(os.environ) == env_before and torch_settings() == torch_before
    with pytest.raises(RuntimeError, match="No bootstrap session is active"):
        bootstrap.current()


def test_a_mesh_is_only_checked_where_there_is_a_group_to_build_it_on(clean_environ):
    with bootstrap.initialize({"distributed": {"mesh": {"dp": -1, "tp": 2}}}) as session:
        assert session.mesh is None and session.report.distributed.process_group == "none"
    with pytest.raises(bootstrap.ConfigError, match="1 is not divisible by 2"):
        bootstrap.initialize({"distributed": {"mesh": {"dp": -1, "tp": 2}, "init": "always"}}).apply()


def test_the_distributed_debug_level_reaches_this_process_and_is_restored(clean_environ, monkeypatch, tmp_path):
    import torch.distributed as dist

    monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG", raising=False)
    before = dist.get_debug_level()
    with bootstrap.initialize({"vars": {"TORCH_DISTRIBUTED_DEBUG": "INFO"}}, output_dir=tmp_path):
        assert dist.get_debug_level() == dist.DebugLevel.INFO  # not only in the ranks it would start
    assert dist.get_debug_level() == before and "TORCH_DISTRIBUTED_DEBUG" not in os.environ
    report = json.loads((tmp_path / "bootstrap.json").read_text())
    assert report["vars"]["TORCH_DISTRIBUTED_DEBUG"]["effective"] is True


def test_a_bad_debug_level_names_the_key_and_changes_nothing(clean_environ, monkeypatch):
    monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG", raising=False)
    env_before, torch_before = dict(os.environ), torch_settings()
    with pytest.raises(ConfigError, match=r"TORCH_DISTRIBUTED_DEBUG='LOUD' is not a debug level"):
        bootstrap.initialize({"vars": {"TORCH_DISTRIBUTED_DEBUG": "LOUD"}}).apply()
    assert dict(os.environ) == env_before and torch_settings() == torch_before


def test_auto_threads_in_one_process_leave_the_thread_variables_to_frameworks(clean_environ, tmp_path):
    # Lightning and torchrun divide the CPUs among the processes they start only where
    # OMP_NUM_THREADS is unset: an exported "all CPUs" would oversubscribe their ranks.
    with bootstrap.initialize({}, output_dir=tmp_path):
        assert "OMP_NUM_THREADS" not in os.environ and "MKL_NUM_THREADS" not in os.environ
    with bootstrap.initialize({"threads": {"intra_op": 1}}):
        assert os.environ["OMP_NUM_THREADS"] == "1"  # an explicit count is exported, for child processes


def test_seed_null_leaves_seeding_to_the_app_and_a_reseed_is_recorded(clean_environ, tmp_path):
    with bootstrap.initialize({"seed": None}, output_dir=tmp_path) as session:
        assert session.data_seed is None and "PYTHONHASHSEED" not in os.environ
    report = json.loads((tmp_path / "bootstrap.json").read_text())
    assert (report["seed"]["value"], report["seed"]["generators"], report["seed"]["task_seed"]) == (None, [], None)

    with bootstrap.initialize({"seed": 3}, output_dir=tmp_path):
        torch.manual_seed(12345)  # as Lightning's seed_everything does after the bootstrap
    assert json.loads((tmp_path / "bootstrap.json").read_text())["seed"]["task_seed"] == 12345


def test_the_group_a_task_made_itself_is_recorded_at_job_end(clean_environ, tmp_path):
    import torch.distributed as dist

    with bootstrap.initialize({}, output_dir=tmp_path):
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        report = json.loads((tmp_path / "bootstrap.json").read_text())
        assert report["distributed"]["process_group"] == "none"
        assert report["distributed"]["group_at_end"] == {"owner": "framework", "backend": "gloo", "world_size": 1,
                                                         "rank": 0}
    finally:
        dist.destroy_process_group()


def test_a_number_returned_by_the_task_is_recorded(clean_environ, tmp_path):
    session = bootstrap.initialize({}, output_dir=tmp_path).apply()
    session.close("completed", metrics=torch.tensor(0.125))
    assert json.loads((tmp_path / "bootstrap.json").read_text())["job"]["metrics"] == {"return": 0.125}


def test_the_report_is_typed_and_records_when_the_job_started(clean_environ, tmp_path):
    import time

    from bootstrap.doors.records import Report, read_report

    before = time.time_ns()
    with bootstrap.initialize(PRESET, output_dir=tmp_path) as session:
        assert isinstance(session.report, Report) and session.report.job.status == "running"
        assert before <= session.report.timings.started_ns <= time.time_ns()
    written = read_report(tmp_path / "bootstrap.json")
    assert written.job.status == "completed" and written.timings.started_ns == session.report.timings.started_ns
    assert written.vars["HF_TOKEN"].value == "***"


def test_a_task_error_is_masked_in_the_report_and_an_unreadable_one_still_ends_the_record(clean_environ, tmp_path):
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no message")

    with pytest.raises(RuntimeError):
        with bootstrap.initialize(PRESET, output_dir=tmp_path):
            raise RuntimeError("login failed for https://user:hunter22@example.com with hf_do_not_leak")
    error = json.loads((tmp_path / "bootstrap.json").read_text())["job"]["error"]
    assert "hunter22" not in error and "hf_do_not_leak" not in error and error.startswith("RuntimeError: login")

    with pytest.raises(Unprintable):
        with bootstrap.initialize(PRESET, output_dir=tmp_path):
            raise Unprintable()
    job = json.loads((tmp_path / "bootstrap.json").read_text())["job"]
    assert job["status"] == "failed" and job["error"] == "Unprintable (its message could not be read: RuntimeError)"


def test_whatever_the_task_returns_close_records_a_final_status(clean_environ, tmp_path):
    cycle = {"loss": 0.25}
    cycle["again"] = cycle
    session = bootstrap.initialize({}, output_dir=tmp_path).apply()
    session.close("completed", metrics={"cycle": cycle, "big": 10**400})
    job = json.loads((tmp_path / "bootstrap.json").read_text())["job"]
    assert job["status"] == "completed" and job["metrics"] == {"cycle/loss": 0.25}
    assert job["metrics_skipped"] == ["cycle/again (a mapping that holds itself)", "big (int too large for a float)"]
