"""``${bootstrap_exclude:FILE}`` (bootstrap/adapter/resolvers.py) through OmegaConf's own interpolation, as Hydra's
submitit launcher resolves its ``exclude`` option: the nodes the ledger excludes under the config's own rule, the
user's own nodes beside them, and null for none. (The real launcher on a real SLURM: tests/cluster/test_slurm.py.)"""

import json
import os
from datetime import datetime, timedelta, timezone

import pytest
from omegaconf import OmegaConf

import bootstrap  # noqa: F401  registers the resolver, as Hydra's plugin scan imports the package

STAMP = "%Y-%m-%dT%H:%M:%SZ"


def _seen(node, job, reason="slow"):
    now = datetime.now(timezone.utc)
    return json.dumps({"node": node, "reason": reason, "observed_at": (now - timedelta(hours=1)).strftime(STAMP),
                       "valid_until": (now + timedelta(hours=23)).strftime(STAMP), "job_id": job}) + "\n"


def _exclude(path, extra=None, **nodes):
    argument = f"'{path}','{extra}'" if extra else f"'{path}'"  # quoted: a host list's brackets are grammar
    config = OmegaConf.create({"hydra": {"launcher": {"exclude": f"${{bootstrap_exclude:{argument}}}"}},
                               **({"env": {"nodes": nodes}} if nodes else {})})
    return OmegaConf.to_container(config.hydra.launcher, resolve=True)["exclude"]


def test_the_nodes_the_evidence_excludes_in_slurm_s_form_and_null_for_none(tmp_path):
    ledger = tmp_path / "bad_nodes.jsonl"
    ledger.write_text(_seen("node3", "1") + _seen("node3", "2") + _seen("node7", "3", "faulty") + _seen("node5", "4"))
    assert _exclude(ledger) == "node[3,7]"  # node5: one soft observation
    assert _exclude(ledger, min_observations=1) == "node[3,5,7]"  # the config's own env.nodes
    assert _exclude(ledger, extra="node9") == "node[3,7,9]"
    assert _exclude(tmp_path / "none.jsonl") is None
    assert _exclude(tmp_path / "none.jsonl", extra="node[1-2]") == "node[1-2]"


def test_a_ledger_that_cannot_be_believed_is_one_line_and_excludes_nothing(tmp_path, capsys):
    ledger = tmp_path / "bad_nodes.jsonl"
    ledger.write_text(_seen("node7", "3", "faulty"))
    os.chmod(ledger, 0o666)
    assert _exclude(ledger) is None
    assert capsys.readouterr().err == (f"bootstrap: ${{bootstrap_exclude:{ledger}}}: bad_nodes.jsonl: not trusted: "
                                       "every user may write it (mode 666): chmod o-w it: no node of the ledger is "
                                       "excluded\n")


@pytest.mark.parametrize("extra", ["node[0-99999999]", "a;b"])
def test_a_bad_list_of_the_user_s_own_is_one_line(tmp_path, capsys, extra):
    assert _exclude(tmp_path / "none.jsonl", extra=extra) is None
    assert capsys.readouterr().err.count("\n") == 1
