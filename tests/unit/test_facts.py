"""bootstrap/core/facts.py: a report's facts by section, and the environment a job found rather than chose."""
import copy

from bootstrap.core.facts import ALWAYS_DIFFERS, RUN_DIR, SECTIONS, environment, facts, set_by_process
from bootstrap.doors.records import Report

# A report as train_stub writes it (cut down), with the agreement's fingerprint of a single process.
REPORT = {
    "preset": "cpu_debug", "preset_digest": "sha256:ab12", "overrides": ["env.threads.intra_op=1"], "device": "cpu",
    "found": {"python": "3.11.7", "torch": "2.13.0+cpu", "bootstrap": "0.9.0", "gpus": 0, "gpu_names": [],
              "cpus": 2, "cpus_usable": 2, "cpu_affinity": "0-1"},
    "lint": [{"name": "NCCL_ALGO", "kind": "unknown_value", "message": "not an algorithm"},
             {"name": "NCCL_ALGO", "kind": "unknown_value", "message": "twice"}],
    "vars": {"OMP_NUM_THREADS": {"value": "1", "source": "override", "effective": False},
             "PYTHONHASHSEED": {"value": "0", "source": "preset", "effective": False},
             "NCCL_DEBUG": {"value": "WARN", "source": "shell", "effective": True},
             "TORCH_FR_DUMP_TEMP_FILE": {"value": "/runs/x/flight_recorder/rank_", "source": "preset",
                                         "effective": True}},
    "threads": {"intra_op": 1, "inter_op": 2, "requested": {"intra_op": 1, "inter_op": None}, "applied": True},
    "torch": {"matmul_precision": "highest", "deterministic": False},
    "distributed": {"launcher": "single", "master_port": 29500, "teardown": "destroyed",
                    "agreement": {"status": "single", "fingerprint": {
                        "version.torch": "2.13.0+cpu", "var.OMP_NUM_THREADS": "1", "var.NCCL_DEBUG": "WARN",
                        "var.NCCL_SOCKET_IFNAME": "eth0", "var.HF_TOKEN": "***",
                        "effective.distributed_debug": "OFF"}}},
    "seed": {"value": 0, "generators": ["random", "torch"], "data_seed": 0},
    "warnings": ["one warning"],
    "timings": {"bootstrap_s": 0.01, "started_ns": 123},
    "job": {"num": 3, "status": "completed", "metrics": {"loss": 0.5}},
}


def report(**changes) -> Report:
    data = copy.deepcopy(REPORT)
    data.update(changes)
    return Report.from_json(data)


def test_sections_come_in_order_with_what_always_differs_apart():
    found = facts(report())
    assert list(found) == [*SECTIONS, ALWAYS_DIFFERS]
    assert found["versions"] == {"python": "3.11.7", "torch": "2.13.0+cpu", "bootstrap": "0.9.0", "GPUs": "0",
                                 "device": "cpu"}  # unset versions are absent: whoever compares shows "unset"
    assert found["threads"] == {"intra_op": "1", "inter_op": "2", "requested intra_op": "1", "cpus": "2",
                                "cpus_usable": "2", "cpu_affinity": "0-1"}
    assert found["launch"]["launcher"] == "single" and found["launch"]["agreement"] == "single"
    assert found["preset"] == {"name": "cpu_debug", "digest": "sha256:ab12", "overrides": "env.threads.intra_op=1"}
    assert found["seeds"] == {"value": "0", "generators": "random, torch", "data_seed": "0"}
    assert found["torch"] == {"matmul_precision": "highest", "deterministic": "false",
                              "distributed debug level (effective)": "OFF"}
    assert found["lint"] == {"NCCL_ALGO (unknown_value)": "not an algorithm", "NCCL_ALGO (unknown_value) #2": "twice"}
    differs = found[ALWAYS_DIFFERS]
    assert {"bootstrap_s", "started_ns", "job num", "status", "metric loss", "master_port", "warnings",
            "teardown"} <= set(differs)
    assert not {"master_port", "teardown", "job num"} & {key for name in SECTIONS for key in found[name]}


def test_variables_carry_their_source_and_the_fingerprint_adds_the_inherited_ones():
    variables = facts(report())["variables"]
    assert variables["OMP_NUM_THREADS"] == "1 (override)" and variables["NCCL_DEBUG"] == "WARN (shell)"
    assert variables["NCCL_SOCKET_IFNAME"] == "eth0 (inherited)" and variables["HF_TOKEN"] == "*** (inherited)"
    assert list(variables).count("OMP_NUM_THREADS") == 1  # planned and in the fingerprint: shown once, planned


def test_a_report_without_an_agreement_has_no_inherited_variables():
    plain = copy.deepcopy(REPORT)
    plain["distributed"]["agreement"] = None
    found = facts(Report.from_json(plain))
    assert "NCCL_SOCKET_IFNAME" not in found["variables"] and "agreement" not in found["launch"]
    assert "distributed debug level (effective)" not in found["torch"]


def test_the_run_directory_is_shown_as_such_so_two_runs_compare_alike(tmp_path):
    one, two = copy.deepcopy(REPORT), copy.deepcopy(REPORT)
    one["vars"]["TORCH_FR_DUMP_TEMP_FILE"]["value"] = f"{tmp_path}/a/flight_recorder/rank_"
    two["vars"]["TORCH_FR_DUMP_TEMP_FILE"]["value"] = f"{tmp_path}/b/flight_recorder/rank_"
    a = facts(Report.from_json(one), tmp_path / "a")
    b = facts(Report.from_json(two), tmp_path / "b/")
    assert a["variables"]["TORCH_FR_DUMP_TEMP_FILE"] == f"{RUN_DIR}/flight_recorder/rank_ (preset)"
    assert a == b
    assert facts(Report.from_json(one))["variables"] != facts(Report.from_json(two))["variables"]


def test_the_root_as_run_directory_does_not_rewrite_every_path():
    assert facts(report(), "/")["variables"]["TORCH_FR_DUMP_TEMP_FILE"] == "/runs/x/flight_recorder/rank_ (preset)"


def test_environment_is_what_the_job_found_not_what_its_overrides_chose():
    found = environment(report())
    assert found == {"python": "3.11.7", "torch": "2.13.0+cpu", "bootstrap": "0.9.0", "GPUs": "0", "CPUs": "2",
                     "usable CPUs": "2", "CPU affinity": "0-1", "NCCL_DEBUG": "WARN",
                     "NCCL_SOCKET_IFNAME": "eth0", "HF_TOKEN": "***"}
    # the device, the preset's and the overrides' variables are the job's own choice
    assert not {"device", "OMP_NUM_THREADS", "PYTHONHASHSEED", "TORCH_FR_DUMP_TEMP_FILE"} & set(found)


def test_environment_of_a_report_from_before_the_fingerprint_still_holds_versions_and_hardware():
    found = environment(Report.from_json({"found": {"torch": "2.12.0", "cpus": 8}}))
    assert found == {"torch": "2.12.0", "GPUs": "0", "CPUs": "8"}


def test_a_variable_the_process_set_is_named_as_such_and_counts_as_found_not_chosen():
    data = copy.deepcopy(REPORT["vars"])
    data["PYTORCH_NVML_BASED_CUDA_CHECK"] = {"value": "1", "source": "process", "effective": True}
    found = report(vars=data)
    assert set_by_process(found) == ["PYTORCH_NVML_BASED_CUDA_CHECK"]
    assert facts(found)["variables"]["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1 (process)"
    assert environment(found)["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"  # the sweep's note: not the job's choice
    assert set_by_process(report()) == []
