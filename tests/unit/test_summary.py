"""Multirun sweeps under each launcher, with the third-party app's own presets and callback."""
import csv
from pathlib import Path


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
