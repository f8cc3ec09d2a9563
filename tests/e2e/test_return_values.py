"""Whatever the task returns, the job's record ends: a real Hydra app (tests/return_app) returns values
that cannot all become metrics, in a real multirun, and every job ends ``completed`` with the reasons."""
import csv
import json
import subprocess
import sys
from pathlib import Path

from conftest import clean_env

APP = Path(__file__).parents[1] / "return_app" / "app.py"
# kind -> a phrase its report's metrics_skipped must hold, and the metrics it must keep
EXPECTED = {
    "cycle": ("self (a mapping that holds itself)", {"loss": 0.5}),
    "deep": ("(nested deeper than 16 levels)", {"loss": 0.5}),
    "bigint": ("count (int too large for a float)", {"loss": 0.5}),
    "bare_bigint": ("return (int too large for a float)", {}),
    "raising": ("bad (Unconvertible that could not be converted: RuntimeError)", {"loss": 0.5}),
    "huge": ("past the limit of 1000 metrics", None),
    "keys": ("(a key of type int that cannot be shown: ValueError)", {"loss": 0.5, "3": 4.0}),
    "tuple": ("return/1 (str)", {"return/0": 0.5}),
}


def test_every_job_ends_completed_with_what_was_skipped_and_why(tmp_path):
    sweep = tmp_path / "sweep"
    proc = subprocess.run([sys.executable, str(APP), "-m", f"kind={','.join(EXPECTED)}", f"hydra.sweep.dir={sweep}"],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    reports = {}
    for path in sweep.glob("*/bootstrap.json"):
        report = json.loads(path.read_text())
        kind = next(o.split("=", 1)[1] for o in report["overrides"] if o.startswith("kind="))
        reports[kind] = report["job"]
    assert sorted(reports) == sorted(EXPECTED)
    for kind, (phrase, kept) in EXPECTED.items():
        job = reports[kind]
        assert job["status"] == "completed", (kind, job)
        assert any(phrase in skipped for skipped in job["metrics_skipped"]), (kind, job["metrics_skipped"][:5])
        if kept is not None:
            assert job["metrics"] == kept, (kind, job["metrics"])
    huge = reports["huge"]
    assert len(huge["metrics"]) == 1000 and len(huge["metrics_skipped"]) == 102  # 100 named, a count, the cut
    assert huge["metrics_skipped"][-2].endswith(" more values not recorded (at most 100 are named)")
    assert huge["metrics_skipped"][-1] == "the rest of the return value was not read (more than 100000 values)"
    assert "bad_float (BadFloat that could not be converted: ArithmeticError)" in reports["raising"]["metrics_skipped"]
    with open(sweep / "sweep_summary.csv") as f:
        assert {row["status"] for row in csv.DictReader(f)} == {"completed"}  # none incomplete or unreadable
