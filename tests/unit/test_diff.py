"""bootstrap/cli/diff.py: which reports it reads, what it prints and its exit status, fed with real reports."""
import copy
import json
import os

from bootstrap.cli import diff
from bootstrap.core.facts import facts
from bootstrap.doors.records import Report
from unit.test_facts import REPORT

TRACEBACK = "Traceback"


def data(**changes) -> dict:
    written = copy.deepcopy(REPORT)
    for path, value in changes.items():  # "threads__intra_op": written["threads"]["intra_op"]
        *parents, last = path.split("__")
        node = written
        for parent in parents:
            node = node[parent]
        node[last] = value
    return written


def write(directory, name="bootstrap.json", **changes):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(json.dumps(data(**changes)))
    return directory


def test_two_runs_that_differ_in_threads_name_them_grouped_and_exit_1(tmp_path, diff_here):
    a = write(tmp_path / "a")
    b = write(tmp_path / "b", threads__intra_op=2, vars__OMP_NUM_THREADS__value="2", job__num=7)
    code, out, err = diff_here(a, b)
    assert code == 1 and not err
    lines = out.splitlines()
    assert lines[:2] == [f"A: {a}/bootstrap.json", f"B: {b}/bootstrap.json"]
    assert "variables (with their sources)" in lines and "threads and CPUs" in lines
    assert "  OMP_NUM_THREADS: 1 (override) -> 2 (override)" in lines
    assert "  intra_op:        1            -> 2" in lines  # aligned
    assert lines[-1].startswith("2 differences") and "job num:" not in out  # what always differs is left out


def test_the_same_facts_exit_0_and_all_shows_what_always_differs(tmp_path, diff_here):
    a = write(tmp_path / "a")
    b = write(tmp_path / "b", job__num=4, timings__started_ns=456, distributed__master_port=29501,
              job__metrics={"loss": 0.25})
    code, out, _ = diff_here(a, b)
    assert code == 0 and out.splitlines()[-1].startswith("no differences")
    code, out, _ = diff_here(a, b, "--all")
    assert code == 1 and "what differs between any two runs" in out
    assert "  job num:" in out and "3" in out and "master_port:" in out and "metric loss:" in out


def test_unset_on_one_side_shows_as_unset(tmp_path, diff_here):
    a = write(tmp_path / "a")
    b = write(tmp_path / "b", found__nccl="2.21.5", vars={})
    code, out, _ = diff_here(a, b)
    assert code == 1
    assert "NCCL:" in out and "unset" in out.split("NCCL:")[1].splitlines()[0]
    seed_line = next(line for line in out.splitlines() if "PYTHONHASHSEED:" in line)
    assert "0 (preset)" in seed_line and seed_line.endswith("-> unset")


def test_json_gives_the_same_result_for_tools(tmp_path, diff_here):
    a = write(tmp_path / "a")
    b = write(tmp_path / "b", threads__inter_op=1)
    code, out, _ = diff_here(a, b, "--json")
    answer = json.loads(out)
    assert code == 1 and answer["same"] is False
    assert answer["sections"] == {"threads": [{"name": "inter_op", "a": "2", "b": "1"}]}
    assert answer["a"] == f"{a}/bootstrap.json"
    code, out, _ = diff_here(a, a, "--json")
    assert code == 0 and json.loads(out)["same"] is True and json.loads(out)["sections"] == {}


def test_secrets_and_control_characters_never_reach_the_terminal(tmp_path, diff_here):
    token = "hf_" + "a" * 30
    a = write(tmp_path / "a")
    b = write(tmp_path / "b", preset=f"evil\x1b]0;title\x07\nnext {token}", vars__NCCL_DEBUG__value="x" * 5000)
    code, out, _ = diff_here(a, b)
    assert code == 1 and token not in out and "\x1b" not in out and "\x07" not in out
    name_line = next(line for line in out.splitlines() if line.lstrip().startswith("name:"))
    assert "\\n" in name_line and "next ***" in name_line  # one line, masked
    long_line = next(line for line in out.splitlines() if line.lstrip().startswith("NCCL_DEBUG:"))
    assert long_line.endswith("...") and len(long_line) < 400  # cut
    code, out, _ = diff_here(a, b, "--json")
    assert token not in out and "x" * 5000 not in out  # JSON is bounded as the text is (issue 45), and masked
    (row,) = [row for row in json.loads(out)["sections"]["variables"] if row["name"] == "NCCL_DEBUG"]
    assert row["b"].endswith("...") and len(row["b"]) <= diff.MAX_VALUE


def test_a_run_of_several_ranks_compares_the_same_rank(tmp_path, diff_here):
    a = write(write(tmp_path / "torchrun", "bootstrap.rank0.json"), "bootstrap.rank1.json", distributed__rank=1)
    b = write(write(tmp_path / "lightning"), "bootstrap.rank1.json", distributed__rank=1, threads__intra_op=3)
    assert diff_here(a, b)[0] == 0  # rank 0: bootstrap.rank0.json against Lightning's bootstrap.json
    code, out, _ = diff_here(a, b, "--rank", "1")
    assert code == 1 and "bootstrap.rank1.json" in out.splitlines()[0] and "intra_op:" in out
    code, _, err = diff_here(a, b, "--rank", "5")
    assert code == 2 and "no report of rank 5 (ranks here: 0, 1)" in err


def test_bad_usage_and_unreadable_input_exit_2_with_one_line(tmp_path, diff_here):
    good = write(tmp_path / "good")
    sweep = tmp_path / "sweep"
    write(sweep / "0")
    (sweep / "0" / ".hydra").mkdir()
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "bootstrap.json").write_bytes(os.urandom(512) + b"\xff\xfe")
    a_dir = tmp_path / "dir_named_report"
    (a_dir / "bootstrap.json").mkdir(parents=True)
    huge = tmp_path / "huge"
    huge.mkdir()
    with open(huge / "bootstrap.json", "wb") as f:
        f.truncate(17 * 2**20)  # sparse: past the reader's limit without writing 17 MiB
    digits = write(tmp_path / "digits")
    (digits / "bootstrap.json").write_text(json.dumps(data()).replace('"num": 3', '"num": ' + "9" * 400))
    cases = {
        (good,): "give two runs",
        (good, tmp_path / "missing"): "no such file or directory",
        (good, sweep): "job directories, not a report (a sweep?): name one job's directory",
        (good, tmp_path / "empty_dir"): "no such file",
        (garbage, good): "not UTF-8",
        (good, a_dir): "not a regular file",
        (huge, good): "larger than",
        (digits, good): "job.num",
        (good, good, "--rank", "-1"): "--rank must be 0 or more",
        (good, "a\0b"): "no such file or directory",
        (good, good, "--bogus"): "unrecognized arguments",
    }
    (tmp_path / "empty").mkdir()
    cases[(good, tmp_path / "empty")] = "no bootstrap.json or bootstrap.rank<N>.json in it"
    for args, fragment in cases.items():
        code, out, err = diff_here(*args)
        assert code == 2, (args, out, err)
        assert fragment in err and TRACEBACK not in err + out, (args, err)
        last = err.strip().splitlines()[-1]  # argparse's usage may come first, as with every tool
        assert fragment in last and len(last) < 400, err


def test_here_refuses_to_replay_a_masked_override(tmp_path, diff_here):
    a = write(tmp_path / "a", overrides=["+env.vars.HF_TOKEN=***"])
    code, _, err = diff_here(a, "--here")
    assert code == 2 and "holds a masked secret" in err and "diff A --here OVERRIDES" in err
    code, _, err = diff_here(a, "--here", "--config-path", tmp_path / "nowhere", "env.threads.intra_op=1")
    assert code == 2 and "--config-path" in err


def test_compare_lists_each_differing_fact_once_in_section_order():
    a = facts(Report.from_json(data()))
    b = facts(Report.from_json(data(found__torch="2.12.0", threads__inter_op=4, job__num=9)))
    assert diff.compare(a, b) == {"versions": [{"name": "torch", "a": "2.13.0+cpu", "b": "2.12.0"}],
                                  "threads": [{"name": "inter_op", "a": "2", "b": "4"}]}
    assert list(diff.compare(a, b, every=True)) == ["versions", "threads", "always_differs"]


def test_the_main_entry_point_knows_the_command():
    from bootstrap.cli.commands import COMMANDS

    assert COMMANDS["diff"][0] == "diff"


def test_ranks_are_named_with_their_distinct_hosts_and_at_most_a_few_hosts():
    from bootstrap.distributed.ranks import MAX_HOSTS_SHOWN, ranks_on_hosts

    assert ranks_on_hosts([(2, "node3")]) == "rank 2 (node3)"
    assert ranks_on_hosts([(2, "node3"), (3, "node3"), (4, None)]) == "ranks 2-4 (node3)"
    assert ranks_on_hosts([(1, None)]) == "rank 1"  # a report without provenance: no host to name
    many = ranks_on_hosts((rank, f"n{rank}") for rank in range(100))
    assert many == f"ranks 0-99 ({', '.join(f'n{r}' for r in range(MAX_HOSTS_SHOWN))}, ... (100 hosts))"


# -- issue 45: every output form bounded alike; one rule for what a line is ---------------------------------------
def _with_packages(directory, listing):
    """A run whose provenance names packages.txt, written through the package's own way out (as a job writes it)."""
    from bootstrap.doors import outbound
    from bootstrap.provenance import packages

    write(directory, provenance={"status": "collected", "packages": len(listing), "packages_file": "packages.txt"})
    outbound.write_text(directory / "packages.txt", packages.text(listing))
    return directory


def test_the_json_form_is_bounded_as_the_text_is(tmp_path, diff_here):
    huge = "p" * 60_000
    a = _with_packages(tmp_path / "a", ["torch==2.13.0+cpu"])
    b = _with_packages(tmp_path / "b", ["torch==2.13.0+cpu", f"{huge}==1.0"])
    code, text, _ = diff_here(a, b)
    code_json, shown, _ = diff_here(a, b, "--json")
    assert code == code_json == 1
    (row,) = [row for row in json.loads(shown)["sections"]["provenance"] if row["name"].startswith("package p")]
    assert len(row["name"]) <= diff.MAX_VALUE and row["name"].endswith("...")  # cut, as the text cuts it
    assert max(map(len, text.splitlines())) < 3 * diff.MAX_VALUE and len(shown) < 2_000


def test_a_package_named_with_a_line_separator_is_one_package_not_a_forged_torch(tmp_path, diff_here):
    listing = ["numpy==2.0.0", "torch==2.13.0+cpu"]
    forged = "evil\u2028torch==9.9.9"  # evil\u2028torch-9.9.9.dist-info: splitlines() would read "torch==9.9.9"
    a = _with_packages(tmp_path / "a", listing)
    b = _with_packages(tmp_path / "b", sorted([*listing, forged]))
    assert "\u2028" not in (b / "packages.txt").read_text()  # the way out shows it escaped
    code, out, _ = diff_here(a, b)
    assert code == 1 and "package torch:" not in out, out  # torch is unchanged
    assert "package 'evil\\u2028torch'" in out or "package evil\\u2028torch" in out, out


def test_packages_whose_names_hold_a_credential_keyword_keep_their_versions(tmp_path, diff_here):
    # google-auth, fastapi: a keyword inside a package's name says nothing of its version, and "==" assigns nothing
    a = _with_packages(tmp_path / "a", ["fastapi==0.115.0", "google-auth==2.40.0"])
    b = _with_packages(tmp_path / "b", ["fastapi==0.116.1", "google-auth==2.40.0"])
    assert "google-auth==2.40.0" in (a / "packages.txt").read_text()  # written as it is, not google-auth=***
    code, out, _ = diff_here(a, b)
    assert code == 1 and "package fastapi: 0.115.0 -> 0.116.1" in out, out
