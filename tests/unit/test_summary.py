"""bootstrap/sweep/summary.py: the sweep's rows, its objective and the files it writes."""
import csv
import io
import math
import os
import stat
from pathlib import Path

from bootstrap.doors.outbound import write_text
from bootstrap.sweep.rank import objective_for, rank
from bootstrap.sweep.read import Row
from bootstrap.sweep.tables import to_csv, to_markdown


def row(job, **metrics):
    return Row(str(job), "", "completed", 1, 1, metrics)


def test_the_default_objective_suits_train_stub_and_a_loss_returning_app():
    assert objective_for([row(0, samples_per_s=10.0, final_loss=1.0)]) == ("samples_per_s", "max")
    assert objective_for([row(0, **{"return": 0.3})]) == ("return", "min")
    assert objective_for([row(0, accuracy=0.3)]) is None
    assert objective_for([row(0)], "val/acc", "max") == ("val/acc", "max")
    assert objective_for([row(0)], "val/loss") == ("val/loss", "min")


def test_rank_marks_the_best_job_by_the_objective():
    rows = [row(0, **{"return": 0.5}), row(1, **{"return": 0.2}), row(2), row(3, **{"return": math.inf})]
    assert [(r.job, r.best) for r in rank(rows)] == [("1", True), ("0", False), ("2", False), ("3", False)]
    assert [r.job for r in rank(rows, "return", "max")][:2] == ["0", "1"]
    assert not any(r.best for r in rank([row(0), row(1)]))  # nothing to compare: no best


def test_metric_columns_are_every_reported_metric_in_a_stable_order():
    rows = rank([row(1, b=1.0, c=2.0), row(0, a=1.0, b=2.0)])
    assert to_csv(rows).splitlines()[0] == "job,overrides,status,intra_op,inter_op,a,b,c,best"


def test_summary_cells_stay_one_table_and_are_no_spreadsheet_formulas():
    rows = [Row("0", "+x=a|b\nc", "completed", 1, 1, {"loss": -0.5}), Row("1", "=HYPERLINK(1)", "failed", 1, 1)]
    markdown = to_markdown(rows).splitlines()
    assert len(markdown) == 4 and all(line.count(" | ") == markdown[0].count(" | ") for line in markdown[2:])
    cells = list(csv.reader(io.StringIO(to_csv(rows))))
    assert cells[1][1] == "'+x=a|b\nc" and cells[1][5] == "-0.5"  # numbers are left alone
    assert cells[2][1] == "'=HYPERLINK(1)"


def test_written_files_follow_the_umask_like_hydras_own(tmp_path):
    previous = os.umask(0o022)
    try:
        write_text(tmp_path / "a.json", "{}")
        os.umask(0o077)
        write_text(tmp_path / "b.json", "{}")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "b.json").stat().st_mode) == 0o600


def test_any_job_name_sorts_and_header_cells_are_neutralised_too():
    rows = [Row("²", "", "completed", 1, 1, {"=cmd()": 1.0}), Row("9" * 40, "", "completed", 1, 1, {"a|b\nc": 1e300}),
            Row("10", "", "completed", 1, 1), Row("2", "", "completed", 1, 1)]
    assert [r.job for r in rank(rows)] == ["2", "10", "9" * 40, "²"]  # numbers first; int("²") would raise
    header = next(csv.reader(io.StringIO(to_csv(rows))))
    assert header == ["job", "overrides", "status", "intra_op", "inter_op", "a|b\nc", "'=cmd()", "best"]
    assert to_markdown(rows).splitlines()[0] == \
        "| job | status | intra_op | inter_op | a\\|b c | =cmd() | best |"  # no override: no swept column
    assert "| 1e+300 |" in to_markdown(rows)  # a huge number stays one short cell


def summary_rows(sweep_dir: Path):
    with open(sweep_dir / "sweep_summary.csv") as f:
        return list(csv.DictReader(f))


def test_a_job_that_never_wrote_its_report_still_gets_a_row(tmp_path):
    from bootstrap.sweep import summary

    job_dir = tmp_path / "7" / ".hydra"
    job_dir.mkdir(parents=True)
    (job_dir / "overrides.yaml").write_text("- env=cpu_debug\n- +env.vars.HF_TOKEN=hf_secret\n")
    summary.write(tmp_path)
    (row,) = summary_rows(tmp_path)
    assert (row["job"], row["status"]) == ("7", "no report")
    assert row["overrides"] == "env=cpu_debug +env.vars.HF_TOKEN=***"


# -- jobs that ran in different environments (bootstrap/sweep/environments.py) ----------------------
def _sweep_of(tmp_path, environments):
    """A sweep directory whose job N ran with ``environments[N]``: found versions, CPUs and inherited variables."""
    import json

    for num, (torch_version, cpus, inherited) in enumerate(environments):
        job_dir = tmp_path / str(num)
        (job_dir / ".hydra").mkdir(parents=True)
        (job_dir / ".hydra" / "overrides.yaml").write_text(f"- env.threads.intra_op={num + 1}\n")
        report = {"preset": "cpu_debug", "overrides": [f"env.threads.intra_op={num + 1}"],
                  "found": {"python": "3.11.7", "torch": torch_version, "cpus": cpus},
                  "vars": {"OMP_NUM_THREADS": {"value": str(num + 1), "source": "override", "effective": False}},
                  "threads": {"intra_op": num + 1, "inter_op": 1},
                  "distributed": {"agreement": {"status": "single", "fingerprint": {
                      "var.OMP_NUM_THREADS": str(num + 1), **{f"var.{k}": v for k, v in inherited.items()}}}},
                  "job": {"num": num, "status": "completed", "metrics": {"samples_per_s": 1.0}}}
        (job_dir / "bootstrap.json").write_text(json.dumps(report))
    return tmp_path


def test_jobs_that_differ_only_in_their_overrides_get_no_environment_note(tmp_path):
    from bootstrap.sweep import summary

    markdown = summary.write(_sweep_of(tmp_path, [("2.13.0", 8, {"NCCL_DEBUG": "WARN"})] * 3))
    assert "different environments" not in markdown  # OMP_NUM_THREADS and the threads are each job's own


def test_jobs_that_ran_in_different_environments_are_named_with_what_differs(tmp_path):
    from bootstrap.sweep import summary

    token = "hf_" + "b" * 30
    markdown = summary.write(_sweep_of(tmp_path, [
        ("2.13.0", 8, {}), ("2.13.0", 8, {"NCCL_DEBUG": "INFO", "HF_TOKEN": token}),
        ("2.12.0", 16, {"NCCL_DEBUG": "INFO"}), ("2.13.0", 8, {"NCCL_DEBUG": "INFO"})]))
    note = markdown[markdown.index("Jobs ran in different environments"):]
    assert "- torch: 2.13.0 in jobs 0, 1, 3; 2.12.0 in job 2" in note
    assert "- CPUs: 8 in jobs 0, 1, 3; 16 in job 2" in note
    assert "- NCCL_DEBUG: INFO in jobs 1, 2, 3; unset in job 0" in note
    assert "- HF_TOKEN: unset in jobs 0, 2, 3; *** in job 1" in note and token not in markdown
    assert "OMP_NUM_THREADS" not in note and "python" not in note  # an override's, and alike everywhere


def test_the_environment_note_is_bounded_however_many_jobs_and_facts_differ():
    from bootstrap.sweep import environments

    jobs = [(str(n), {f"VAR_{k}": f"{n % 7}" + "v" * 500 for k in range(40)}) for n in range(1000)]
    note = environments.note(jobs)
    lines = note.strip().splitlines()
    assert len(lines) == 1 + environments.MAX_KEYS + 1 and lines[-1].startswith("- and 28 more differing facts")
    assert all(len(line) < 1500 for line in lines)
    assert "and 135 more" in lines[1] and "3 other values in 428 jobs" in lines[1]
    assert environments.note(jobs[:1]) == "" and environments.note([]) == ""


def test_a_sweep_whose_jobs_return_nothing_marks_no_best_and_says_why_in_one_line():
    from bootstrap.sweep import rank as ranking
    from bootstrap.sweep import render
    from bootstrap.sweep.read import Row

    rows = ranking.rank([Row(str(i), f"a={i}", "completed", 1, 1, {}, override_list=(f"a={i}",)) for i in (0, 1)],
                        None, None, None)
    assert not any(row.best for row in rows)
    page = render.markdown(rows, Path("sweep"), 0, ranking.objective_for(rows), None, None)
    (said,) = [line for line in page.splitlines() if line.startswith("No job is best")]
    assert said == ("No job is best: no job returned a value or reported `samples_per_s` or `return`; return a "
                    "number from the task, or rank by a metric with the callback's objective. The jobs reported no "
                    "metric."), said
