"""bootstrap/core/flat.py: the flat view every tracker integration logs. Keys stable and documented, values
scalar, everything masked, and every key and value within the strictest tracker's limits (MLflow's)."""

import posixpath
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bootstrap.core import flat
from bootstrap.doors import outbound
from bootstrap.doors.masking import MASK

import docs_examples

# MLflow's own rules for a tag or param key (mlflow.utils.validation: validate_param_and_metric_name,
# path_not_unique, MAX_ENTITY_KEY_LENGTH); tests/e2e/test_trackers.py checks real tags with MLflow's own code.
MLFLOW_KEY = re.compile(r"^[/\w.\- :]*$")


def mlflow_accepts(key: str) -> bool:
    norm = posixpath.normpath(key)
    return bool(MLFLOW_KEY.match(key)) and norm == key and norm != "." and not norm.startswith(("..", "/")) \
        and len(key) <= 250


@pytest.fixture(scope="module")
def example():
    """The JSON of docs/report.md's example report (train_stub, env.threads.intra_op=1, completed)."""
    return docs_examples.example_report().to_json()


def test_the_documented_keys_hold_the_jobs_values(example):
    view = flat.view(example)
    assert view["bootstrap/preset"] == "cpu_debug"
    assert view["bootstrap/threads/intra_op"] == 1 and view["bootstrap/threads/applied"] is True
    assert view["bootstrap/vars/OMP_NUM_THREADS"] == "1"  # the value alone; source and note stay in the report
    assert view["bootstrap/found/torch"] == "2.13.0+cpu"
    assert view["bootstrap/checks/torch/ok"] is True and "bootstrap/checks/torch/name" not in view
    assert view["bootstrap/overrides"] == "env.threads.intra_op=1"
    assert view["bootstrap/seed/generators"] == "random, numpy, torch"
    assert view["bootstrap/job/status"] == "completed"
    assert not [key for key in view if key.startswith("bootstrap/job/metrics")]  # the tracker's own metrics
    assert "bootstrap/found/cuda" not in view  # null: left out
    assert all(isinstance(value, (str, int, float, bool)) for value in view.values())
    assert all(mlflow_accepts(key) and key.startswith("bootstrap/") for key in view)


def test_a_section_the_report_gains_appears_with_no_change_and_host_and_commit_sit_at_the_top(example):
    data = {**example, "energy": {"meter": {"joules": 12.5, "source": "rapl"}},
            "provenance": {"status": "collected", "host": "node-7", "git": {"commit": "3f2c1ab", "dirty": False},
                           "packages": 212}}
    view = flat.view(data)
    assert view["bootstrap/energy/meter/joules"] == 12.5 and view["bootstrap/energy/meter/source"] == "rapl"
    assert view["bootstrap/host"] == "node-7" and view["bootstrap/git/commit"] == "3f2c1ab"
    assert view["bootstrap/git/dirty"] is False
    assert view["bootstrap/provenance/status"] == "collected" and view["bootstrap/provenance/packages"] == 212
    assert not [key for key in view if key.startswith(("bootstrap/provenance/host", "bootstrap/provenance/git"))]


def test_lists_of_records_are_keyed_by_name_or_rank_and_values_are_joined():
    view = flat.view({
        "lint": [{"name": "NCCL_X", "kind": "unknown"}, {"name": "NCCL_X", "kind": "hardware"},
                 {"name": "TORCH_Y", "kind": "renamed"}],
        "preflight": {"ranks": [{"rank": 3, "tflops": 1.5}, {"rank": 0, "tflops": 2.0}],
                      "findings": [{"kind": "slow", "message": "rank 3"}]},
        "overrides": ["a=1", "b='x y'"], "warnings": ["one, two", "three"], "found": {"gpu_names": []},
        "mixed": [{"a": 1}, 2],
    })
    assert view["bootstrap/lint/NCCL_X/kind"] == "unknown" and view["bootstrap/lint/NCCL_X_2/kind"] == "hardware"
    assert view["bootstrap/lint/TORCH_Y/kind"] == "renamed"
    assert view["bootstrap/preflight/ranks/3/tflops"] == 1.5 and view["bootstrap/preflight/ranks/0/tflops"] == 2.0
    assert view["bootstrap/preflight/findings/0/kind"] == "slow"
    assert view["bootstrap/overrides"] == "a=1 b='x y'"  # as typed on a command line
    assert view["bootstrap/warnings"] == "one, two | three"
    assert view["bootstrap/found/gpu_names"] == ""
    assert view["bootstrap/mixed/0/a"] == 1 and view["bootstrap/mixed/1"] == 2


def test_diagnoses_stay_in_the_report():
    view = flat.view({"distributed": {"rank": 1, "hang": {"finding": "rank 1 never entered all_reduce"},
                                      "agreement": {"status": "differs", "fingerprint": {"x": 1},
                                                    "differences": [{"name": "x"}], "message": "x differs"}},
                      "job": {"status": "failed", "metrics": {"loss": 0.5}, "metrics_skipped": ["a (str)"]}})
    assert view == {"bootstrap/distributed/rank": 1, "bootstrap/distributed/agreement/status": "differs",
                    "bootstrap/distributed/agreement/message": "x differs", "bootstrap/job/status": "failed"}


def test_no_secret_reaches_a_tracker():
    outbound.remember("remembered-secret-value-42")
    data = {
        "overrides": ["+env.vars.HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz01", "db.password=pw_plain_9876", "lr=0.1"],
        "vars": {"WANDB_API_KEY": {"value": "0123456789abcdef", "source": "shell"},
                 "NCCL_ALGO": {"value": "Ring", "source": "preset"}},
        "warnings": ["cannot reach postgres://trainer:pw_in_url_555@db.internal/runs",
                     "the note says remembered-secret-value-42\x1b]0;retitled\x07\nforged line"],
        "provenance": {"git": {"root": "https://ci:pw_git_remote_31415@git.example.com/repo"}},
        "custom": {"api": {"token": "tok_value_77777"}},
    }
    view = flat.view(data)
    text = "\n".join(f"{key}={value}" for key, value in view.items())
    for secret in ("hf_abcdefghijklmnopqrstuvwxyz01", "pw_plain_9876", "0123456789abcdef", "pw_in_url_555",
                   "remembered-secret-value-42", "pw_git_remote_31415", "tok_value_77777"):
        assert secret not in text
    assert view["bootstrap/overrides"] == f"+env.vars.HF_TOKEN={MASK} db.password={MASK} lr=0.1"
    assert view["bootstrap/vars/WANDB_API_KEY"] == MASK and view["bootstrap/vars/NCCL_ALGO"] == "Ring"
    assert view["bootstrap/custom/api/token"] == MASK
    warnings = view["bootstrap/warnings"]
    assert "\x1b" not in warnings and "\n" not in warnings and "\\x1b" in warnings  # shown escaped, one line


def test_a_view_past_the_bound_says_how_many_keys_it_left_out():
    view = flat.view({"vars": {f"V{i}": {"value": str(i)} for i in range(3000)}})
    assert len(view) == flat.MAX_KEYS
    assert view[flat.LEFT_OUT_COUNT] == 3000 - (flat.MAX_KEYS - 1)
    assert view["bootstrap/vars/V0"] == "0"


def test_a_capped_view_keeps_the_promised_keys_first_then_sections_in_order_and_left_out_last():
    # A report whose open-ended sections (thousands of variables, lint findings) come before the job's status and
    # its provenance, as in bootstrap.json: the cap must still keep the keys every run promises.
    data = {"schema_version": 5, "preset": "p",
            "lint": [{"name": f"L{i}", "kind": "k", "message": "m"} for i in range(400)],
            "vars": {f"V{i}": {"value": str(i)} for i in range(3000)},
            "threads": {"intra_op": 2},
            "provenance": {"host": "node-7", "git": {"commit": "abc", "dirty": False}},
            "job": {"status": "failed", "error": "RuntimeError: boom"}}
    view = flat.view(data)
    assert len(view) == flat.MAX_KEYS and list(view)[-1] == flat.LEFT_OUT_COUNT
    for key, value in {"bootstrap/job/status": "failed", "bootstrap/job/error": "RuntimeError: boom",
                       "bootstrap/host": "node-7", "bootstrap/git/commit": "abc", "bootstrap/git/dirty": False,
                       "bootstrap/preset": "p", "bootstrap/schema_version": 5, "bootstrap/threads/intra_op": 2}.items():
        assert view[key] == value, key
    # lint comes before vars in the documented order: every lint key is kept, vars are cut from their end
    assert sum(key.startswith("bootstrap/lint/") for key in view) == 400 * 2
    assert "bootstrap/vars/V0" in view and "bootstrap/vars/V2999" not in view
    assert view[flat.LEFT_OUT_COUNT] == (3000 + 400 * 2 + 8) - (flat.MAX_KEYS - 1)
    order = list(view)  # the kept keys in the report's order
    assert order.index("bootstrap/preset") < order.index("bootstrap/lint/L0/kind") < order.index("bootstrap/vars/V0") \
        < order.index("bootstrap/threads/intra_op") < order.index("bootstrap/host") < order.index("bootstrap/job/status")


def test_every_section_of_a_report_has_a_place_in_the_caps_order():
    from bootstrap.doors import records

    sections = set(records.Report().to_json())
    named = set(flat.SECTION_ORDER) | {first.split("/")[0] for first in flat.FIRST}
    assert sections <= named, sorted(sections - named)


def test_long_keys_and_values_are_cut_to_mlflows_limits_and_keys_stay_distinct():
    long_a, long_b = "x" * 300 + "a", "x" * 300 + "b"
    view = flat.view({"vars": {long_a: {"value": "1"}, long_b: {"value": "2"}}, "note": "y" * 9000,
                      "odd": {"a b": 1, "a_b": 2, "..": 3, "": 4}})
    keys = [key for key in view if key.startswith("bootstrap/vars/")]
    assert len(keys) == 2 and sorted(view[key] for key in keys) == ["1", "2"]
    assert all(mlflow_accepts(key) for key in view)
    assert len(view["bootstrap/note"]) == flat.MAX_VALUE and view["bootstrap/note"].endswith("...")
    assert sorted(value for key, value in view.items() if key.startswith("bootstrap/odd/")) == [1, 2, 3, 4]


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=30)


@given(st.dictionaries(st.text(max_size=12), _json_values, max_size=6))
def test_any_report_gives_keys_and_values_every_tracker_accepts(data):
    view = flat.view(data)
    assert len(view) <= flat.MAX_KEYS
    for key, value in view.items():
        assert mlflow_accepts(key) and key.startswith("bootstrap/"), key
        assert isinstance(value, (str, int, float, bool))
        assert not isinstance(value, str) or (len(value) <= flat.MAX_VALUE and outbound.printable(value, True) == value)
