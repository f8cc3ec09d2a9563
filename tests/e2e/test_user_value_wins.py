"""The user's value wins, by value (issue 20, class 4), with real processes.

A Hydra app with the bootstrap starts, from its task, child runs of itself: one with a
variable the parent's bootstrap exported changed on purpose (``OMP_NUM_THREADS=3``), one
with the environment as the parent left it. Each child's ``bootstrap.json`` says whose value
it kept.
"""
import json
import subprocess
import sys
import textwrap

from conftest import clean_env

APP = '''
import json, os, subprocess, sys
import hydra
from hydra.core.hydra_config import HydraConfig

EXPORTED = "HYDRA_TRAIN_BOOTSTRAP_EXPORTED"


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg):
    out = HydraConfig.get().runtime.output_dir
    with open(os.path.join(out, "seen.json"), "w") as f:
        json.dump({"marker": os.environ.get(EXPORTED), "omp": os.environ.get("OMP_NUM_THREADS")}, f)
    if cfg.role != "parent":
        return
    for child, change in (("changed", {"OMP_NUM_THREADS": "3", "APP_SETTING": "mine"}), ("unchanged", {})):
        env = {**os.environ, **change}  # the task's own, deliberate choice for its child
        subprocess.run([sys.executable, __file__, f"hydra.run.dir={out}/{child}", f"role={child}"],
                       env=env, check=True, timeout=120)


if __name__ == "__main__":
    main()
'''
CONFIG = '''
defaults:
  - env: cpu_debug
  - override hydra/callbacks: bootstrap
  - _self_
env:
  threads:
    intra_op: 1        # exported as OMP_NUM_THREADS=1 and MKL_NUM_THREADS=1 for child processes
  vars:
    APP_SETTING: from_preset
role: parent
'''


def test_a_value_the_task_changed_for_its_child_is_the_childs_users_value(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "app.py").write_text(textwrap.dedent(APP))
    (tmp_path / "conf" / "config.yaml").write_text(textwrap.dedent(CONFIG))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(tmp_path / "app.py"), f"hydra.run.dir={out}"], cwd=tmp_path,
                          env=clean_env(), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr

    def report(where):
        return json.loads((out / where / "bootstrap.json").read_text())["vars"]

    parent = report(".")
    assert parent["OMP_NUM_THREADS"]["source"] == parent["APP_SETTING"]["source"] == "preset"

    changed = report("changed")
    for name, value in (("OMP_NUM_THREADS", "3"), ("APP_SETTING", "mine")):
        assert (changed[name]["value"], changed[name]["source"]) == (value, "shell"), name
        assert "parent process's bootstrap exported" not in changed[name]["note"], changed[name]["note"]
    # what the task left as the parent exported it is still the parent's, beside the user's own
    assert changed["MKL_NUM_THREADS"]["source"] == "preset"

    unchanged = report("unchanged")
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "APP_SETTING"):
        assert unchanged[name]["source"] == "preset", (name, unchanged[name])

    seen = {child: json.loads((out / child / "seen.json").read_text()) for child in (".", "changed", "unchanged")}
    assert seen["changed"]["omp"] == "3"  # the task ran with the user's value
    for child in seen.values():  # the marker holds digests, never values
        assert child["marker"] and "from_preset" not in child["marker"] and "mine" not in child["marker"]
