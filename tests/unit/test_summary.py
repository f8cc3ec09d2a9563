"""bootstrap/sweep/summary.py: the sweep's rows, its objective and the files it writes."""
import csv
import io
import math
import os
import stat
from pathlib import Path

from bootstrap.doors.outbound import write_text
from bootstrap.sweep.summary import Row, objective_for, rank, to_csv, to_markdown


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
        "| job | overrides | status | intra_op | inter_op | a\\|b c | =cmd() | best |"
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
