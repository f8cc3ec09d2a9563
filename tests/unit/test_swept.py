"""bootstrap/sweep/swept.py: the overrides every job shared, shown once, and the swept keys, a column each."""
import csv
import io

from bootstrap.sweep import render, swept
from bootstrap.sweep.read import Row
from bootstrap.sweep.swept import Layout
from bootstrap.sweep.tables import MAX_SWEPT_COLUMNS, to_csv, to_markdown

# What lightning-hydra-template's Optuna search gives each trial: the fixed overrides, then the searched keys.
FIXED = ("hparams_search=mnist_optuna", "test=False", "trainer=cpu", "debug=fdr", "+env=cpu_debug")


def job(num, *overrides, known=True, **metrics):
    return Row(str(num), " ".join(overrides), "completed", 1, 1, metrics,
               override_list=tuple(overrides) if known else None)


def test_the_overrides_every_job_gave_alike_are_shared_and_the_rest_are_swept():
    rows = [job(0, *FIXED, "model.optimizer.lr=0.01", "+model.net.lin1_size=64", "data.batch_size=32"),
            job(1, *FIXED, "model.optimizer.lr=0.001", "+model.net.lin1_size=128", "data.batch_size=32"),
            job(2, *FIXED, "model.optimizer.lr=0.0005", "+model.net.lin1_size=64", "data.batch_size=64")]
    layout = swept.split(rows)
    assert layout.shared == FIXED and layout.compared == 3
    assert layout.keys == ("model.optimizer.lr", "model.net.lin1_size", "data.batch_size")  # as typed, no "+"
    assert [swept.cells(r)["model.net.lin1_size"] for r in rows] == ["64", "128", "64"]


def test_a_key_only_some_jobs_gave_is_swept_and_empty_where_unset():
    rows = [job(1, "a=1", "+extra=x"), job(0, "a=1"), job(2, "a=1", "~gone"), job(3, "a=1", "~gone=v")]
    layout = swept.split(rows)
    assert layout == Layout(shared=("a=1",), keys=("extra", "gone"), compared=4)  # in job order: 1 gave extra
    cells = {r.job: swept.cells(r) for r in rows}
    assert cells["0"].get("extra") is None and cells["1"]["extra"] == "x"
    assert (cells["2"]["gone"], cells["3"]["gone"]) == ("~", "~v")  # a deletion shows Hydra's ~


def test_the_same_value_typed_differently_is_swept_and_the_last_of_a_key_wins():
    layout = swept.split([job(0, "+x=1", "y=1", "y=2"), job(1, "x=1", "y=2")])
    assert layout == Layout(shared=("y=2",), keys=("x",), compared=2)
    assert swept.split([job(0, "a=1"), job(1, "a=1@pkg"), job(2, "+env@hydra.callbacks.bootstrap.env=h100")]).keys \
        == ("a", "env@hydra.callbacks.bootstrap.env")  # a package stays part of the key's name


def test_jobs_whose_overrides_are_unknown_take_no_part():
    rows = [job(0, "a=1", "b=1"), job(1, known=False), job(2, "a=1", "b=2")]
    layout = swept.split(rows)
    assert layout == Layout(shared=("a=1",), keys=("b",), compared=2)
    assert swept.split([job(0, known=False)]) == Layout()
    assert swept.split([job(0, "a=1", "b=2")]) == Layout(shared=("a=1", "b=2"), keys=(), compared=1)


def test_masked_values_never_differ_so_a_varied_secret_is_shared_as_stars():
    rows = [job(0, "+env.vars.HF_TOKEN=***", "lr=1"), job(1, "+env.vars.HF_TOKEN=***", "lr=2")]
    assert swept.split(rows) == Layout(shared=("+env.vars.HF_TOKEN=***",), keys=("lr",), compared=2)


def test_each_swept_key_is_a_column_beside_the_metrics_and_its_name_never_hides_another():
    rows = [job(0, "e=1", "status=a", "loss=3", "env.threads.intra_op=1", loss=0.5),
            job(1, "e=1", "status=b", "loss=4", "env.threads.intra_op=2", loss=0.25)]
    header = next(csv.reader(io.StringIO(to_csv(rows))))
    assert header == ["job", "overrides", "status", "intra_op", "inter_op", "status (override)", "loss (override)",
                      "env.threads.intra_op", "loss", "best"]
    table = to_markdown(rows).splitlines()
    assert table[0] == ("| job | status | intra_op | inter_op | status (override) | loss (override) | "
                        "env.threads.intra_op | loss | best |")
    assert table[2] == "| 0 | completed | 1 | 1 | a | 3 | 1 | 0.5 |  |"
    assert "e=1" not in "\n".join(table)  # shared: above the table, not in it


def test_a_number_typed_as_one_is_no_formula_in_the_csv_and_text_still_is():
    rows = [job(0, "lr=-0.5", "name=-cmd|x"), job(1, "lr=1e-3", "name=b")]
    cells = list(csv.DictReader(io.StringIO(to_csv(rows))))
    assert [c["lr"] for c in cells] == ["-0.5", "1e-3"]
    assert cells[0]["name"] == "'-cmd|x" and cells[0]["overrides"] == "lr=-0.5 name=-cmd|x"
    assert [swept.number(t) for t in ("2", "-0.5", "1e-3", ".5", "1e999", "nan", "1_0", "0x1", "", None)] == \
        [2.0, -0.5, 0.001, 0.5, None, None, None, None, None, None]


def test_the_markdown_is_bounded_in_swept_columns_and_cells():
    rows = [job(n, *(f"k{i}={n}{'v' * 200}" for i in range(MAX_SWEPT_COLUMNS + 3))) for n in range(2)]
    page = to_markdown(rows)
    table = [line for line in page.splitlines() if line.startswith("|")]
    assert table[0].count("| k") == MAX_SWEPT_COLUMNS and max(len(line) for line in table) < 1000
    assert "3 more swept keys than shown here: every one is in sweep_summary.csv." in page
    assert next(csv.reader(io.StringIO(to_csv(rows)))).count("k14") == 1  # the CSV keeps every one


def test_the_shared_line_is_one_code_span_bounded_and_says_whose():
    layout = Layout(shared=("a=`x`", "b=1", *(f"c{i}=1" for i in range(40))), keys=(), compared=3)
    line = render.shared_line(layout, 4)
    assert line.startswith("Shared by all 3 jobs whose overrides could be read: ``a=`x` b=1 c0=1")
    assert line.endswith("c29=1`` and 10 more (each job's overrides are in sweep_summary.csv)\n\n")
    assert render.code("`a` b") == "`` `a` b ``"  # CommonMark strips one space each side
    assert render.shared_line(Layout(shared=("a=1",), compared=2), 2) == "Shared by all jobs: `a=1`\n\n"
    assert render.shared_line(Layout(keys=("a",), compared=2), 2) == ""
