"""The report as a typed value (bootstrap.records): written as it always was, read back strictly and within bounds."""
import json
import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bootstrap
from bootstrap.doors import inbound, outbound
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.records import SCHEMA_VERSION, Report, read_report, report_names, report_paths

# Every field the bootstrap writes, each section with its keys in the order they are written.
SECTIONS = {
    "found": ["python", "torch", "cuda", "nccl", "cudnn", "bootstrap", "compute_capability", "gpus", "gpu_names",
              "cpus", "cpus_usable", "cpu_affinity"],
    "threads": ["intra_op", "inter_op", "requested", "applied"],
    "torch": ["matmul_precision", "cudnn_allow_tf32", "cudnn_benchmark", "deterministic", "detect_anomaly"],
    "distributed": ["launcher", "rank", "local_rank", "world_size", "local_world_size", "node_rank", "master_addr",
                    "master_port", "job_id", "backend", "process_group", "teardown", "mesh", "group_at_end", "hang",
                    "agreement"],
    "seed": ["value", "global_seed", "generators", "data_seed", "task_seed"],
    "timings": ["bootstrap_s", "started_ns", "phases"],
    "provenance": ["status", "host", "git", "git_missing", "packages", "packages_digest", "packages_file", "container",
                   "gpu_driver"],
}
TOP = ["schema_version", "preset", "preset_digest", "resolved", "overrides", "device", "found", "checks", "lint",
       "vars", "threads", "torch", "distributed", "seed", "preflight", "provenance", "watch", "warnings", "timings",
       "job"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A real report: a session applied and closed in this process, as bootstrap.json."""
    out = tmp_path_factory.mktemp("job")
    preset = {"vars": {"MY_SETTING": "on", "HF_TOKEN": "hf_records_secret"}, "threads": {"intra_op": 1},
              "requires": {"torch": ">=2.0"}, "provenance": {"enabled": False}}  # git is a process: e2e tests it
    session = bootstrap.initialize(preset, name="mine", job_overrides=["env.seed=3"], output_dir=out).apply()
    session.close("completed", metrics={"loss": 0.25, "val": {"acc": 0.5}})
    return json.loads((out / "bootstrap.json").read_text()), out / "bootstrap.json"


def test_the_json_keeps_every_field_name_and_order(written):
    data, _ = written
    assert list(data) == TOP
    for section, keys in SECTIONS.items():
        assert list(data[section]) == keys, section
    assert list(data["vars"]["MY_SETTING"]) == ["value", "source", "effective", "note"]
    assert list(data["checks"][0]) == ["name", "required", "found", "ok"]
    assert data["job"] == {"num": None, "status": "completed", "metrics": {"loss": 0.25, "val/acc": 0.5}}
    assert data["resolved"] is None and data["schema_version"] == SCHEMA_VERSION


def test_reading_and_writing_again_gives_the_same_json(written):
    data, path = written
    report = read_report(path)
    assert report.to_json() == data
    assert report.job.metrics == {"loss": 0.25, "val/acc": 0.5} and report.vars["HF_TOKEN"].value == "***"
    assert report.checks[0].ok and report.threads.requested.intra_op == 1 and report.checks_ok


def test_a_preview_is_a_report_in_the_same_schema(written):
    preview = bootstrap.initialize({"threads": {"intra_op": 1}}).preview()
    assert isinstance(preview, Report) and preview.job.status == "preview" and preview.timings.started_ns is None
    assert list(preview.to_json()) == TOP and Report.from_json(preview.to_json()) == preview


def test_older_reports_of_the_same_schema_read_with_defaults_and_unknown_keys_are_ignored(written):
    data, _ = written
    older = json.loads(json.dumps(data))
    del older["timings"]["started_ns"], older["lint"], older["distributed"]["hang"], older["found"]
    newer = {**data, "a_later_field": {"any": ["thing"]}, "job": {**data["job"], "later": 1}}
    assert Report.from_json(older).timings.started_ns is None and Report.from_json(older).found.gpus == 0
    assert Report.from_json(newer).to_json() == data
    assert Report.from_json({}).job.status is None  # every field has a default but a few inside lists


@pytest.mark.parametrize("change, message", [
    (lambda r: r["job"]["metrics"].update(loss="low"), "job.metrics.loss: not a finite number"),
    (lambda r: r["job"]["metrics"].update(loss=True), "job.metrics.loss: not a finite number"),
    (lambda r: r["job"]["metrics"].update(loss=10**400), "job.metrics.loss: not a finite number"),
    (lambda r: r["job"].update(num=-1), "job.num: not a whole number from 0 to 2**53"),
    (lambda r: r["job"].update(num=2**53), "job.num: not a whole number from 0 to 2**53"),
    (lambda r: r["job"].update(status=5),
     "job.status: not one of running, completed, failed, check_failed, interrupted, preview"),
    (lambda r: r["checks"][0].update(ok="yes"), "checks[0].ok: not true or false"),
    (lambda r: r["checks"][0].pop("ok"), "checks[0].ok: missing"),
    (lambda r: r.update(checks={"a": 1}), "checks: not a list"),
    (lambda r: r["vars"]["MY_SETTING"].update(value=1), "vars.MY_SETTING.value: not text"),
    (lambda r: r["threads"].update(intra_op=1.0), "threads.intra_op: not a whole number from 0 to 2**53"),
    (lambda r: r["threads"].update(requested=[]), "threads.requested: not an object"),
    (lambda r: r["seed"].update(value=2**70), "seed.value: not a whole number within 64 bits"),
    (lambda r: r["overrides"].append(3), "overrides[1]: not text"),
    (lambda r: r.update(resolved="auto -> cpu_debug"), "resolved: not an object"),
    (lambda r: r.update(resolved={"from": "auto", "preset": "x"}), "resolved.reason: missing"),
    (lambda r: r["distributed"].update(mesh={"dp": "2"}), "distributed.mesh.dp: not a whole number"),
    (lambda r: r["distributed"].update(hang=[1]), "distributed.hang: not an object"),
    (lambda r: r["timings"].update(bootstrap_s="fast"), "timings.bootstrap_s: not a finite number"),
    (lambda r: r["job"].update(metrics={"k" * 100: "x"}), "job.metrics." + "k" * 40 + "...: not a finite number"),
    (lambda r: r["job"].update(metrics={"a\nb\x1b": "x"}), "job.metrics.a\\nb\\x1b: not a finite number"),
])
def test_a_field_of_the_wrong_type_is_named(written, change, message):
    data = json.loads(json.dumps(written[0]))
    change(data)
    with pytest.raises(Unreadable) as raised:
        Report.from_json(data)
    assert str(raised.value).startswith(message), str(raised.value)


@pytest.mark.parametrize("text, reason", [
    ('{"job": {"metrics": {"loss": NaN}}}', "not JSON"),
    ('{"job": {"metrics": {"loss": -Infinity}}}', "not JSON"),
    ('{"job": {"metrics": {"loss": 1e999}}}', "job.metrics.loss: not a finite number"),
    ('{"job": {"num": %s}}' % ("9" * 400), "job.num: not a whole number"),
    ('{"job": {"num": %s}}' % ("9" * 5000), "not JSON"),
    ("[" * 200_000 + "]" * 200_000, "not JSON"),
    (b"\xff\xfe", "not UTF-8 text"),
    ("[]", "the report: not an object"),
])
def test_files_that_are_not_reports_are_unreadable_with_a_reason(tmp_path, text, reason):
    path = tmp_path / "bootstrap.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(Unreadable) as raised:
        read_report(path)
    assert str(raised.value).startswith(f"bootstrap.json: {reason}"), str(raised.value)


def test_a_giant_file_a_directory_and_a_fifo_are_unreadable_without_being_read(tmp_path):
    giant = tmp_path / "giant" / "bootstrap.json"
    giant.parent.mkdir()
    with open(giant, "wb") as f:
        f.truncate(inbound.MAX_TEXT_BYTES + 1)  # sparse: nothing is written, nothing need be read
    with pytest.raises(Unreadable, match="larger than"):
        read_report(giant)
    (tmp_path / "dir" / "bootstrap.json").mkdir(parents=True)
    with pytest.raises(Unreadable, match="not a regular file"):
        read_report(tmp_path / "dir" / "bootstrap.json")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(Unreadable, match="not a regular file"):
        read_report(tmp_path / "fifo")


def test_report_files_in_rank_order_and_strays_ignored(tmp_path):
    for name in ("bootstrap.rank10.json", "bootstrap.rank2.json", "bootstrap.json", "bootstrap.rankX.json",
                 "bootstrap.rank-1.json", "notes.txt"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in report_paths(tmp_path)] == ["bootstrap.json", "bootstrap.rank2.json",
                                                        "bootstrap.rank10.json"]
    assert report_names(["bootstrap.rank1.json", "bootstrap.rank0.json"]) == ["bootstrap.rank0.json",
                                                                              "bootstrap.rank1.json"]
    assert report_paths(tmp_path / "absent") == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.just(10**400) | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_field_replaced_by_anything_reads_or_is_unreadable_never_a_crash(written, data):
    report = json.loads(json.dumps(written[0]))
    section = data.draw(st.sampled_from([None, *SECTIONS, "job", "checks"]))
    if section is None:
        report[data.draw(st.sampled_from(TOP))] = data.draw(json_values)
    elif isinstance(report[section], dict):
        report[section][data.draw(st.sampled_from(list(report[section]) or ["x"]))] = data.draw(json_values)
    else:
        report[section] = data.draw(json_values)
    try:
        typed = Report.from_json(report)
    except Unreadable as error:
        assert "\n" not in str(error) and ": " in str(error)
        return
    # What reads is what the bootstrap could have written: finite numbers, JSON again, cleanly.
    again = typed.to_json()
    json.dumps(outbound.clean_data(again), allow_nan=False)
    assert Report.from_json(again) == typed
    assert all(math.isfinite(v) for v in (typed.job.metrics or {}).values())
