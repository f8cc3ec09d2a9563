"""Hostile sweep directories: the summary and `tune` read them without a traceback or a leak.

Real files in temporary directories, no mocks. Each class of hostile input has a focused
test; one hypothesis test builds random sweep directories out of all of them at once.
"""
import csv
import io
import json
import os
import re
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bootstrap.cli import tune
from bootstrap.sweep import summary, walk

SECRET = "hf_planted_SECRET_123"
TRACEBACK = "Traceback (most recent call last)"
APP_CONF = Path(__file__).parents[1] / "third_party_app" / "conf"


def good_report(num=0, overrides=(), metrics=None, status="completed", preset="cpu_debug", intra_op=1):
    return {
        "schema_version": 1, "preset": preset, "resolved": None, "overrides": list(overrides),
        "found": {"python": "3.11.7", "torch": "2.13.0+cpu", "gpus": 0, "gpu_names": [], "cpus": 2,
                  "cpu_affinity": "0-1"},
        "checks": [{"name": "torch", "required": ">=2.13", "found": "2.13.0+cpu", "ok": True}],
        "threads": {"intra_op": intra_op, "inter_op": 2},
        "job": {"num": num, "status": status, "metrics": {"samples_per_s": 100.0} if metrics is None else metrics},
    }


def make_job(sweep: Path, name: str, overrides=(), report=None, *, raw_report=None, raw_overrides=None) -> Path:
    """A job directory as Hydra and the bootstrap leave it; raw_* write those bytes instead."""
    job = sweep / name
    (job / ".hydra").mkdir(parents=True, exist_ok=True)
    text = raw_overrides if raw_overrides is not None else yaml.safe_dump(list(overrides))
    (job / ".hydra" / "overrides.yaml").write_bytes(text if isinstance(text, bytes) else text.encode())
    if raw_report is not None:
        (job / "bootstrap.json").write_bytes(raw_report if isinstance(raw_report, bytes) else raw_report.encode())
    elif report is not None:
        (job / "bootstrap.json").write_text(json.dumps(report))
    return job


def csv_rows(sweep: Path) -> list:
    return list(csv.DictReader(io.StringIO((sweep / summary.CSV_NAME).read_text())))


def by_job(sweep: Path) -> dict:
    return {r["job"]: r for r in csv_rows(sweep)}


def latest_job_dirs(sweep: Path) -> tuple:
    """The latest sweep's job directories, as the summary and tune list them, and how many were left out."""
    found, older = walk.latest(sweep)
    return [Path(job_dir) for job_dir, _ in found], older


def run_tune(capsys, sweep, out, *extra, name="mine"):
    code = tune.main([str(sweep), "--name", name, "--out", str(out), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code, out, err, *phrases):
    assert code in (1, 2), (code, out, err)
    assert err.startswith("bootstrap tune: ") and err.count("\n") == 1 and TRACEBACK not in err, err
    for phrase in phrases:
        assert phrase in err, err


# -- 1. valid JSON of the wrong shape, numbers out of range, stray files ----------------------------
BIG = "9" * 400
WRONG_SHAPES = {
    "a list": "[]",
    "a string": '"report"',
    "null": "null",
    "job: 5": '{"job": 5}',
    "job.status: 5": '{"job": {"status": 5}}',
    "job.num: text": '{"job": {"num": "x", "status": "completed"}}',
    "job.num: true": '{"job": {"num": true, "status": "completed"}}',
    "job.num: -1": '{"job": {"num": -1, "status": "completed"}}',
    "metrics: a list": '{"job": {"status": "completed", "metrics": [1, 2]}}',
    "metrics: {a: b}": '{"job": {"status": "completed", "metrics": {"a": "b"}}}',
    "metrics: a bool": '{"job": {"status": "completed", "metrics": {"a": true}}}',
    "metrics: nested": '{"job": {"status": "completed", "metrics": {"a": {"b": [{"c": null}]}}}}',
    "metrics: 1e999": '{"job": {"status": "completed", "metrics": {"samples_per_s": 1e999}}}',
    "metrics: -1e999": '{"job": {"status": "completed", "metrics": {"samples_per_s": -1e999}}}',
    "metrics: NaN": '{"job": {"status": "completed", "metrics": {"samples_per_s": NaN}}}',
    "metrics: 400 digits": '{"job": {"status": "completed", "metrics": {"samples_per_s": %s}}}' % BIG,
    "metrics: 5000 digits": '{"job": {"status": "completed", "metrics": {"samples_per_s": %s}}}' % ("9" * 5000),
    'checks: "x"': '{"checks": "x", "job": {"status": "completed"}}',
    "checks: [1]": '{"checks": [1], "job": {"status": "completed"}}',
    "checks: ok text": '{"checks": [{"ok": "yes"}], "job": {"status": "completed"}}',
    "threads: []": '{"threads": [], "job": {"status": "completed"}}',
    "threads.intra_op: text": '{"threads": {"intra_op": "2"}, "job": {"status": "completed"}}',
    "threads.intra_op: 400 digits": '{"threads": {"intra_op": %s}, "job": {"status": "completed"}}' % BIG,
    "threads.intra_op: 1e999": '{"threads": {"intra_op": 1e999}, "job": {"status": "completed"}}',
    "overrides: text": '{"overrides": "a=b", "job": {"status": "completed"}}',
    "overrides: numbers": '{"overrides": [1, 2], "job": {"status": "completed"}}',
    "preset: 5": '{"preset": 5, "job": {"status": "completed"}}',
    "resolved: []": '{"resolved": [], "job": {"status": "completed"}}',
    "found: text": '{"found": "x", "job": {"status": "completed"}}',
    "deeply nested": "[" * 100_000 + "]" * 100_000,
    "binary garbage": b"\x00\xff\xfe\x89PNG\r\n\x1a\n\xc3\x28",
    "not JSON": "{'job': ",
    "empty": "",
}


@pytest.mark.parametrize("raw", WRONG_SHAPES.values(), ids=list(WRONG_SHAPES))
def test_a_report_of_the_wrong_shape_gives_an_unreadable_row(tmp_path, raw):
    sweep = tmp_path / "sweep"
    make_job(sweep, "0", ["env.threads.intra_op=1"], good_report(0, ["env.threads.intra_op=1"], {"samples_per_s": 5.0}))
    make_job(sweep, "1", ["env.threads.intra_op=2"], raw_report=raw)
    summary.write(sweep)
    rows = by_job(sweep)
    assert rows["1"]["status"] == "unreadable"
    assert rows["1"]["overrides"] == "env.threads.intra_op=2"  # what is safely known: Hydra's record
    assert rows["1"]["samples_per_s"] == "" and rows["1"]["best"] == ""
    assert rows["0"]["best"] == "yes"
    reasons = (sweep / summary.MD_NAME).read_text().split("Unreadable, so never ranked (1):\n")[1]
    assert reasons.startswith("- 1: bootstrap.json: ") and reasons.count("\n") == 1  # why, in one line


def test_the_reason_names_the_file_and_the_field(tmp_path):
    sweep = tmp_path / "sweep"
    make_job(sweep, "0", ["a=1"], raw_report=WRONG_SHAPES["metrics: 1e999"])
    make_job(sweep, "1", ["a=2"], raw_report=WRONG_SHAPES["checks: ok text"].replace('"ok"', '"name": "x", "ok"'))
    make_job(sweep, "2", raw_overrides="a: mapping\n", report=good_report(2))
    (sweep / "3" / "bootstrap.rank1.json").parent.mkdir(parents=True)
    make_job(sweep, "3", ["a=4"], good_report(3))
    (sweep / "3" / "bootstrap.rank1.json").write_text('{"job": {"num": 10000000000000000000}}')
    markdown = summary.write(sweep)
    assert markdown.split("Unreadable, so never ranked (4):\n")[1].split("\n\n")[0].splitlines() == [
        "- 0: bootstrap.json: job.metrics.samples_per_s: not a finite number",
        "- 1: bootstrap.json: checks[0].ok: not true or false",
        "- 2: .hydra/overrides.yaml: not a list of strings",
        "- 3: bootstrap.rank1.json: job.num: not a whole number from 0 to 2**53"]
    assert by_job(sweep)["2"]["intra_op"] == "1"  # a readable report keeps its threads, never its metrics


def test_tune_compares_only_the_readable_jobs(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    make_job(sweep, "0", ["env.threads.intra_op=1"], good_report(0, ["env.threads.intra_op=1"], {"samples_per_s": 5.0}))
    for num, raw in enumerate(WRONG_SHAPES.values(), start=1):
        make_job(sweep, str(num), [f"env.threads.intra_op={num + 1}"], raw_report=raw)
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf")
    assert code == 0, err  # the unreadable jobs are not compared; the readable one wins
    assert "threads:\n  intra_op: 1\n" in (tmp_path / "conf" / "env" / "mine.yaml").read_text()


def test_stray_files_beside_the_reports(tmp_path):
    sweep = tmp_path / "sweep"
    ok = good_report(0, ["env.seed=1"])
    make_job(sweep, "0", ["env.seed=1"], ok)
    (sweep / "0" / "bootstrap.rankX.json").write_text("not a report")  # not a name the bootstrap writes: ignored
    (sweep / "0" / "bootstrap.rank.json").mkdir()
    (sweep / "0" / "bootstrap.rank-1.json").write_bytes(b"\xff")
    (sweep / "0" / "loop").symlink_to(sweep)  # a link back up: not followed
    make_job(sweep, "1", ["env.seed=2"])
    (sweep / "1" / "bootstrap.json").mkdir()  # a directory named bootstrap.json
    make_job(sweep, "2", ["env.seed=3"], good_report(2))
    (sweep / "2" / "bootstrap.rank1.json").mkdir()  # a rank's report that is a directory
    make_job(sweep, "3", ["env.seed=4"])
    os.mkfifo(sweep / "3" / "bootstrap.json")  # would block a plain read forever
    make_job(sweep, "4", ["env.seed=5"])
    (sweep / "4" / "bootstrap.json").symlink_to(sweep / "nowhere")  # a dangling link
    make_job(sweep, "5", raw_overrides="- [not, a, string]\n- {a: 1}\n", report=good_report(5))
    make_job(sweep, "6", raw_overrides="a: mapping\n")
    make_job(sweep, "7", raw_overrides="key: [unclosed\n  - : :\n")  # not YAML at all
    make_job(sweep, "8", raw_overrides=b"\xff\xfe\x00garbage")
    make_job(sweep, "9", raw_overrides="- 2001-13-45\n")  # a date YAML cannot construct
    (sweep / "10" / ".hydra" / "overrides.yaml").mkdir(parents=True)  # Hydra's record is a directory
    make_job(sweep, "11", raw_overrides="")  # an empty file: no overrides, no report
    summary.write(sweep)
    status = {job: r["status"] for job, r in by_job(sweep).items()}
    assert status == {"0": "completed", "1": "unreadable", "2": "unreadable", "3": "unreadable", "4": "unreadable",
                      "5": "unreadable", "6": "unreadable", "7": "unreadable", "8": "unreadable", "9": "unreadable",
                      "10": "unreadable", "11": "no report"}


def test_write_raises_only_its_own_one_line_error(tmp_path):
    sweep = tmp_path / "sweep"
    (sweep / summary.CSV_NAME).mkdir(parents=True)  # a directory where the summary goes
    with pytest.raises(summary.SummaryError) as raised:
        summary.write(sweep)
    assert "\n" not in str(raised.value) and "cannot write the sweep summary" in str(raised.value)


# -- 2. a reused hydra.sweep.dir: only the latest sweep ---------------------------------------------


def test_the_nearest_multirun_yaml_decides_for_summary_and_tune(tmp_path, capsys):
    sweep = tmp_path / "sweeps" / "sweep"  # one of two sweeps under sweeps/
    make_job(sweep, "0", ["env.seed=1"], good_report(0, ["env.seed=1"], {"samples_per_s": 20.0}))
    make_job(sweep, "1", ["env.seed=2"], good_report(1, ["env.seed=2"], {"samples_per_s": 10.0}))
    # Left over from an earlier sweep into the same directory, and faster: it must not win.
    stale = ["env.threads.intra_op=2"]
    make_job(sweep, "2", stale, good_report(2, stale, {"samples_per_s": 99.0}))
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    now = time.time()
    os.utime(sweep / "multirun.yaml", (now, now))
    os.utime(sweep / "2" / ".hydra" / "overrides.yaml", (now - 60, now - 60))
    for num in (0, 1):
        os.utime(sweep / str(num) / ".hydra" / "overrides.yaml", (now + 1, now + 1))
    assert latest_job_dirs(sweep) == ([sweep / "0", sweep / "1"], 1)
    other = make_job(tmp_path / "sweeps" / "other", "0", ["env.seed=3"], good_report(0))  # no multirun.yaml
    os.utime(other / ".hydra" / "overrides.yaml", (now - 600, now - 600))
    assert latest_job_dirs(tmp_path / "sweeps") == ([other, sweep / "0", sweep / "1"], 1)  # each by its own
    summary.write(sweep)
    assert sorted(by_job(sweep)) == ["0", "1"]
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf")
    assert code == 0, err
    text = (tmp_path / "conf" / "env" / "mine.yaml").read_text()
    assert "# sweep varied: env.seed\n" in text and text.endswith("\nseed: 1\n")
    assert "# job directories of earlier sweeps into this directory, ignored: 1\n" in text

    for num in (0, 1):  # every job older than multirun.yaml: copied without timestamps; list them all
        os.utime(sweep / str(num) / ".hydra" / "overrides.yaml", (now - 60, now - 60))
    assert latest_job_dirs(sweep) == ([sweep / "0", sweep / "1", sweep / "2"], 0)


# -- 3. tune never writes a preset that fails to load -------------------------------------------------
def sweep_of(tmp_path, *jobs):
    """jobs: (overrides, samples_per_s[, report changes])."""
    sweep = tmp_path / "sweep"
    for num, (overrides, value, *changes) in enumerate(jobs):
        report = good_report(num, overrides, {"samples_per_s": value})
        for change in changes:
            report.update(change)
        make_job(sweep, str(num), overrides, report)
    return sweep


def test_a_varied_key_the_winner_did_not_set_is_left_out(tmp_path, capsys):
    sweep = sweep_of(tmp_path, (["env.threads.intra_op=1"], 10.0), ([], 20.0), (["env.threads.intra_op=2"], 15.0))
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf")
    assert code == 0, err
    text = (tmp_path / "conf" / "env" / "mine.yaml").read_text()
    assert "null" not in text and "threads" not in text.split("defaults:")[1]
    assert "# varied, but not set by the winner (the base preset's value stands): env.threads.intra_op\n" in text


@pytest.mark.parametrize("winner, why", [
    ("env.threads.intra_op=0", "env.threads.intra_op=0 is not a thread count"),
    ("env.threads.intra_op=abc", "env.threads.intra_op"),
    ("env.seed=-1", "env.seed=-1 is out of range"),
    ("+env.threads.bogus=1", "bogus"),
    ("env.distributed.mesh={dp:0}", "env.distributed.mesh"),
])
def test_a_preset_that_would_not_load_is_refused(tmp_path, capsys, winner, why):
    sweep = sweep_of(tmp_path, ([winner], 20.0), (["env.threads.intra_op=1"], 10.0))
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf")
    assert_one_line_error(code, out, err, "the tuned preset would not load", why)
    assert not (tmp_path / "conf" / "env" / "mine.yaml").exists()


def test_the_base_preset_must_be_found_where_the_app_looks(tmp_path, capsys):
    jobs = ((["env.threads.intra_op=2"], 20.0, {"preset": "probe"}), (["env.threads.intra_op=1"], 10.0))
    sweep = sweep_of(tmp_path, *jobs)
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf")  # an empty config directory: no probe.yaml
    assert_one_line_error(code, out, err, "would not load", "env/probe")

    conf = tmp_path / "app_conf"
    (conf / "env").mkdir(parents=True)
    (conf / "env" / "probe.yaml").write_text((APP_CONF / "env" / "probe.yaml").read_text())  # the app's own preset
    code, out, err = run_tune(capsys, sweep, conf)
    assert code == 0, err
    assert "defaults:\n- probe\n- _self_\n\nthreads:\n  intra_op: 2\n" in (conf / "env" / "mine.yaml").read_text()


@pytest.mark.parametrize("report_change", [{"preset": "../../etc"}, {"preset": None}, {"preset": "a b"},
                                           {"resolved": {"from": "auto", "preset": "../x", "reason": "y"}}])
def test_a_report_naming_no_usable_base_is_refused(tmp_path, capsys, report_change):
    sweep = sweep_of(tmp_path, (["env.threads.intra_op=2"], 20.0, report_change), (["env.threads.intra_op=1"], 1.0))
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf")
    assert code == 1 and TRACEBACK not in err and err.count("\n") == 1, err


def test_a_preset_that_would_extend_itself_is_refused(tmp_path, capsys):
    sweep = sweep_of(tmp_path, (["env.threads.intra_op=2"], 20.0), (["env.threads.intra_op=1"], 10.0))
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf", name="cpu_debug")
    assert_one_line_error(code, out, err, "would not load")


def test_sweep_syntax_or_unparseable_overrides_in_a_job_record(tmp_path, capsys):
    sweep = sweep_of(tmp_path, (["env.threads.intra_op=1,2"], 20.0), (["env.threads.intra_op=1"], 10.0))
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf")
    assert_one_line_error(code, out, err, "not plain Hydra overrides")
    sweep = sweep_of(tmp_path / "b", (["env.threads.intra_op=2"], 20.0), (["))(=", "a b c"], 10.0))
    code, out, err = run_tune(capsys, sweep, tmp_path / "b" / "conf")
    assert code == 0, err
    assert "jobs whose overrides could not be read, not compared: 1" in (tmp_path / "b/conf/env/mine.yaml").read_text()


# -- 4. tune never writes or prints a secret, whatever the override's form ----------------------------
SECRET_FORMS = {
    "a secret-looking name": ("+env.vars.HF_TOKEN={}", "env.vars.HF_TOKEN"),
    "a dict naming a secret": ("++env.vars={{HF_TOKEN:{}}}", "env.vars"),
    "a secret deep in a dict": ("++env.vars={{OUTER:{{INNER:{{api_key:{}}}}}}}", "env.vars"),
    "a credential URL": ("+env.vars.DB_URL='postgres://user:{}@db:5432/x'", "env.vars.DB_URL"),
    "a credential URL with / and @ in the password": ("+env.vars.DB_URL='mysql://u:p/{}@x@db/x'", "env.vars.DB_URL"),
    "a list holding a secret-looking key": ("+env.vars.L=[a,{{PASSWORD:{}}}]", "env.vars.L"),
    "a list holding a secret-looking word": ("+env.vars.L=[PASSWORD,{}]", "env.vars.L"),
    "a quoted dict naming a secret": ("+env.vars.BLOB='{{\"HF_TOKEN\": \"{}\"}}'", "env.vars.BLOB"),
    "a secret-looking name deeper in the path": ("+env.distributed.mesh_token={}", "env.distributed.mesh_token"),
}


@pytest.mark.parametrize("form, key", SECRET_FORMS.values(), ids=list(SECRET_FORMS))
def test_a_varied_secret_is_refused_by_key_never_by_value(tmp_path, capsys, form, key):
    first, second = form.format(SECRET), form.format("hf_other_SECRET_456")
    sweep = sweep_of(tmp_path, ([first], 20.0, {"overrides": [first]}), ([second], 10.0))
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf")
    assert_one_line_error(code, out, err, f"the sweep varied {key}, which holds or looks like a secret")
    assert SECRET not in out + err and "hf_other_SECRET_456" not in out + err
    assert not (tmp_path / "conf" / "env" / "mine.yaml").exists()
    summary.write(sweep)  # and the summary masks both, from the report and from Hydra's record
    for name in (summary.CSV_NAME, summary.MD_NAME):
        assert SECRET not in (sweep / name).read_text() and "hf_other_SECRET_456" not in (sweep / name).read_text()


def test_a_secret_in_an_unvaried_or_non_env_key_stays_out_of_the_preset(tmp_path, capsys):
    secret_url = f"+train.db='postgres://u:{SECRET}@h/db'"
    sweep = sweep_of(tmp_path, (["env.threads.intra_op=2", secret_url, f"+env.vars.HF_TOKEN={SECRET}",
                                 "+train.hub_token=" + SECRET], 20.0),
                     (["env.threads.intra_op=1", "+train.db='postgres://u:x@h/db'", f"+env.vars.HF_TOKEN={SECRET}"],
                      1.0))
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf")
    assert code == 0, err
    text = (tmp_path / "conf" / "env" / "mine.yaml").read_text()
    assert SECRET not in text + out + err
    assert "not part of a preset, so not set here: train.db, train.hub_token" in text  # named, not shown


# -- 5. --out and --name that cannot be written ---------------------------------------------------------
def test_out_that_cannot_be_written(tmp_path, capsys):
    sweep = sweep_of(tmp_path, (["env.threads.intra_op=2"], 20.0), (["env.threads.intra_op=1"], 10.0))
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    assert_one_line_error(*run_tune(capsys, sweep, a_file), "is not a directory")
    assert_one_line_error(*run_tune(capsys, sweep, a_file / "below"), "cannot write")
    if os.geteuid() == 0:  # root writes through any mode bits: a directory of /proc takes no new entries
        locked = Path("/proc/self")
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
    assert_one_line_error(*run_tune(capsys, sweep, locked), "cannot write")
    assert_one_line_error(*run_tune(capsys, sweep, tmp_path / "conf", name="n" * 300), "cannot write",
                          "File name too long")
    code, out, err = run_tune(capsys, sweep, tmp_path / "conf", name="bad/name")
    assert code == 2 and err.startswith("bootstrap tune: --name") and err.count("\n") == 1
    (tmp_path / "conf" / "env" / "mine.yaml").mkdir(parents=True)  # --force onto a directory
    assert_one_line_error(*run_tune(capsys, sweep, tmp_path / "conf", "--force"), "cannot write")
    assert_one_line_error(*run_tune(capsys, tmp_path / ("s" * 300), tmp_path / "conf"), "cannot read")


# -- 6. every text cell is neutralised: job names from directory names too ------------------------------
def test_text_cells_from_directory_names_reports_and_metric_names(tmp_path):
    sweep = tmp_path / "sweep"
    make_job(sweep, "=HYPERLINK(\"http:x\")", ["a=1"])
    make_job(sweep, "a|b\nc\x1b[31m\u202e", ["b=2"])
    os.makedirs(os.fsencode(sweep) + b"/bad\xff/.hydra")  # not UTF-8: a lone surrogate in Python's name for it
    (Path(os.fsdecode(os.fsencode(sweep) + b"/bad\xff")) / ".hydra" / "overrides.yaml").write_text("- c=3\n")
    # (a status outside JobStatus does not read at all: tests/unit/test_report_schema.py)
    make_job(sweep, "9", ["d=4"], good_report(None, ["-x=1"], {"=cmd()": 1.0, "a|b\nc": 2.0}, status="failed"))
    summary.write(sweep)
    markdown = (sweep / summary.MD_NAME).read_text()
    table = [line for line in markdown.splitlines() if line.startswith("|")]
    columns = [len(re.split(r"(?<!\\)\|", line)) for line in table]  # cells between unescaped pipes
    assert len(table) == 2 + 4 and set(columns) == {7 + 4 + 2}, table  # a column per swept key: -x, a, b, c
    raw_csv = (sweep / summary.CSV_NAME).read_text()
    assert "\x1b" not in raw_csv + markdown and "\u202e" not in raw_csv + markdown
    cells = list(csv.reader(io.StringIO(raw_csv)))
    for line in cells:
        for cell in line:
            assert not cell.lstrip(" ").startswith(("=", "+", "-", "@", "\t", "\r", "\n")), cell
    assert "'=cmd()" in cells[0] and "'-x=1" in [line[1] for line in cells]


# -- the class, not the example: random hostile sweep directories ----------------------------------------
SECRET_OVERRIDES = [
    f"+env.vars.HF_TOKEN={SECRET}",
    f"++env.vars={{HF_TOKEN:{SECRET}}}",
    f"env.vars={{A:{{B:{{api_key:{SECRET}}}}}}}",
    f"+env.vars.DB_URL='postgres://user:{SECRET}@host:5432/db'",
    f"+db.url=postgres://user:{SECRET}@host/db",
    f"+env.vars.X=[PASSWORD,{SECRET}]",
    f"+env.vars.BLOB='{{\"HF_TOKEN\": \"{SECRET}\"}}'",
    f"+train.hub_token={SECRET}",
]
PLAIN_OVERRIDES = ["env.threads.intra_op=1", "env.threads.intra_op=2", "env.threads.intra_op=null",
                   "env.threads.intra_op=0", "env.seed=3", "env.seed=4", "train.steps=0", "env=cpu_debug",
                   "env=h100", "env.threads.intra_op=1,2", "~env.vars.X", "+env.vars.Y=${oc.env:HOME}",
                   "=bad=", "env.vars={A:1}", "env.vars.A.B=2", "env.defaults=[]", "+env.vars.Z=range(1,3)"]
CREDENTIAL_URL = f"https://admin:{SECRET}@example.com/x"
scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.just(10 ** 400) | st.text(max_size=12)
           | st.sampled_from([CREDENTIAL_URL, f"HF_TOKEN={SECRET}", "completed", "cpu_debug", "auto -> cpu_debug"]))
KEYS = st.sampled_from(["job", "status", "num", "metrics", "samples_per_s", "return", "checks", "ok", "threads",
                        "intra_op", "overrides", "preset", "resolved", "found", "torch"]) | st.text(max_size=8)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=16)
override_lists = st.lists(st.one_of(st.sampled_from(SECRET_OVERRIDES), st.sampled_from(PLAIN_OVERRIDES),
                                    st.sampled_from(PLAIN_OVERRIDES[:6]), st.text(max_size=15)), max_size=4)
names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=24) \
    .filter(lambda n: n not in (".", "..", "multirun.yaml") and len(n.encode()) <= 255)


@st.composite
def reports(draw, overrides, clean):
    """A report close to the real thing; unless ``clean``, with any field replaced by anything."""
    report = good_report(0, overrides, draw(st.fixed_dictionaries({"samples_per_s": st.floats(1, 1e6)},
                                                                   optional={"return": st.floats(-1, 1)})))
    report["found"]["torch"] = draw(st.sampled_from(["2.13.0", CREDENTIAL_URL, "a\nthreads:\n  intra_op: 9"]))
    if clean:
        return report
    report["job"]["num"] = draw(st.none() | st.integers(-2, 5))
    report["job"]["status"] = draw(st.sampled_from(["completed"] * 4 + ["failed", "running", CREDENTIAL_URL]))
    report["job"]["metrics"] = draw(st.just(report["job"]["metrics"]) | st.dictionaries(
        st.sampled_from(["samples_per_s", "return", "steps"]),
        st.floats() | st.integers() | st.just(10 ** 400) | st.text(max_size=3), max_size=3))
    report["overrides"] = draw(st.just(overrides) | override_lists)
    report["preset"] = draw(st.sampled_from(["cpu_debug"] * 4 + ["auto", "probe", "nowhere", "../x", None, 5]))
    report["threads"]["intra_op"] = draw(st.integers(0, 4) | st.just(None))
    if draw(st.booleans()):
        report["resolved"] = draw(st.sampled_from(["auto -> cpu_debug (no CUDA device)", "auto", CREDENTIAL_URL]))
    for key in draw(st.lists(st.sampled_from(["job", "checks", "threads", "overrides", "found", "preset"]),
                             max_size=draw(st.sampled_from([0, 0, 1, 2])))):
        report[key] = draw(json_values)
    return report


@st.composite
def job_dirs(draw):
    """(overrides.yaml, bootstrap.json, stray files, older than multirun.yaml): a clean job
    (with planted secrets in its overrides) or a hostile one."""
    overrides = draw(override_lists)
    if draw(st.booleans()):
        return yaml.safe_dump(overrides), json.dumps(draw(reports(overrides, True))), {}, False
    overrides_file = draw(st.sampled_from(["list"] * 3 + ["yaml", "bytes", "text"]))
    raw_overrides = {"list": lambda: yaml.safe_dump(overrides),
                     "yaml": lambda: yaml.safe_dump(draw(json_values)),
                     "bytes": lambda: draw(st.binary(max_size=30)),
                     "text": lambda: draw(st.text(max_size=30))}[overrides_file]()
    kind = draw(st.sampled_from(["report"] * 3 + ["json", "bytes", "directory", "none"]))
    if kind == "report":
        raw_report = json.dumps(draw(reports(overrides, False)))
    elif kind == "json":
        raw_report = json.dumps(draw(json_values))
    elif kind == "bytes":
        raw_report = draw(st.binary(max_size=30))
    else:
        raw_report = kind
    strays = draw(st.dictionaries(st.sampled_from(["bootstrap.rank0.json", "bootstrap.rank1.json",
                                                   "bootstrap.rankX.json", "bootstrap.rank.json", "notes.txt"]),
                                  json_values, max_size=2))
    return raw_overrides, raw_report, strays, draw(st.booleans())


@settings(max_examples=int(os.environ.get("HOSTILE_EXAMPLES", "50")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.dictionaries(names, job_dirs(), min_size=1, max_size=4), st.booleans(),
       st.sampled_from([None, None, None, "samples_per_s", "return", "steps", "=x\nline"]), st.booleans())
def test_hostile_sweep_directories_never_raise_or_leak(capsys, jobs, with_multirun_yaml, objective, pictured):
    with tempfile.TemporaryDirectory() as tmp:
        sweep, conf = Path(tmp) / "sweep", Path(tmp) / "conf"
        sweep.mkdir()
        if with_multirun_yaml:
            (sweep / "multirun.yaml").write_text("hydra: {}\n")
        for name, (raw_overrides, raw_report, strays, older) in jobs.items():
            job = make_job(sweep, name, raw_overrides=raw_overrides)
            if raw_report == "directory":
                (job / "bootstrap.json").mkdir(exist_ok=True)
            elif raw_report != "none" and not (job / "bootstrap.json").is_dir():
                raw = raw_report if isinstance(raw_report, bytes) else raw_report.encode()
                (job / "bootstrap.json").write_bytes(raw)
            for stray, value in strays.items():
                if not (job / stray).is_dir():
                    (job / stray).write_text(json.dumps(value))
            if older:
                os.utime(job / ".hydra" / "overrides.yaml", (time.time() - 3600, time.time() - 3600))

        written = []
        try:
            written.append(summary.write(sweep, objective, pictured=pictured))  # a picture costs 0.1 s: half draw
        except summary.SummaryError as error:  # a job directory named sweep_summary.csv, say
            assert "\n" not in str(error)
        extra = ["--objective", objective] if objective else []
        code = tune.main([str(sweep), "--name", "tuned", "--out", str(conf), "--force", *extra])  # calls build
        assert isinstance(code, int) and code in (0, 1)
        printed = capsys.readouterr()
        assert TRACEBACK not in printed.out + printed.err
        if code:
            assert printed.err.startswith("bootstrap tune: ") and printed.err.count("\n") == 1, printed.err
            event(f"refused: {' '.join(printed.err.replace(str(sweep), 'SWEEP').split()[2:8])}")
        else:
            event("tuned")
        for path in (sweep / summary.CSV_NAME, sweep / summary.MD_NAME, conf / "env" / "tuned.yaml"):
            if path.is_file():
                written.append(path.read_text(errors="replace"))
        for text in [*written, printed.out, printed.err]:
            assert SECRET not in text
