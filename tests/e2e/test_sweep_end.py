"""Process-wide hooks are released on every path (issue 28, class 8): a sweep driven from a process that goes on
(a notebook calling the app's ``main``, hydra-zen's ``launch(multirun=True)``) in which one job fails makes
Hydra skip ``on_multirun_end``; the log-record factory and the launcher's changes to ``os.environ`` must still
be given back, by the sweep's end itself (bootstrap/adapter/sweep_end.py).

Each case runs in a fresh python (Hydra configures logging process-wide), drives a real sweep in-process with
a secret override, goes on after the failure, and reports what it finds.
"""
import json
import subprocess
import sys

import pytest

from conftest import ROOT, clean_env

DRIVER = r"""
import json, logging, os, sys, time
sys.path.insert(0, {zen_dir!r})
from bootstrap.doors import outbound

factory = logging.getLogRecordFactory()
environ = dict(os.environ)
how, launcher = sys.argv[1], sys.argv[2]
overrides = ["hydra/callbacks=bootstrap", "+env@hydra.callbacks.bootstrap.env=cpu_debug", "fail=false,true",
             "+hydra.callbacks.bootstrap.env.vars.HF_TOKEN=hf_planted_in_the_sweep_0123456789",
             f"hydra/launcher={{launcher}}", "hydra.sweep.dir=sweep"]
failed = None
if how == "launch":
    from hydra_zen import builds, launch, zen
    import app
    try:
        launch(builds(app.train, populate_full_signature=True), zen(app.train), multirun=True, overrides=overrides,
               version_base="1.3")
    except Exception as error:
        failed = type(error).__name__
else:  # the app's own main(), as a notebook calls it: Hydra ends it with SystemExit(1)
    import app
    app.store.add_to_hydra_store()
    from hydra_zen import zen
    sys.argv = ["app.py", "-m", *overrides]
    try:
        zen(app.train).hydra_main(config_name="train", config_path=None, version_base="1.3")
    except SystemExit as stop:
        failed = f"SystemExit({{stop.code}})"
deadline = time.monotonic() + 10
while (outbound.MaskedLogs.held() or logging.getLogRecordFactory() is not factory) and time.monotonic() < deadline:
    time.sleep(0.02)
changed = sorted(k for k in set(os.environ) | set(environ) if os.environ.get(k) != environ.get(k))
print(json.dumps({{"failed": failed, "held": outbound.MaskedLogs.held(),
                  "factory_restored": logging.getLogRecordFactory() is factory, "environ_changed": changed}}))
"""


@pytest.mark.parametrize("how, launcher", [("launch", "basic"), ("launch", "joblib"), ("main", "basic")])
def test_a_sweep_that_hydra_ends_without_its_hook_still_gives_back_the_process_wide_hooks(tmp_path, how, launcher):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(zen_dir=str(ROOT / "tests" / "zen_app")))
    proc = subprocess.run([sys.executable, str(driver), how, launcher], cwd=tmp_path, capture_output=True, text=True,
                          env=clean_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (found,) = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"failed"')]
    assert found["failed"] in ("RuntimeError", "SystemExit(1)"), found  # a job failed: Hydra skipped the hook
    assert found["held"] is False and found["factory_restored"] is True  # given back after the sweep
    assert found["environ_changed"] == []  # what joblib's loky set in this process (KMP_INIT_AT_FORK) too
    assert "hf_planted_in_the_sweep_0123456789" not in proc.stdout + proc.stderr  # masked while it ran


# What docs/errors.md says is asynchronous: after a sweep that fails in-process, the watcher thread releases the
# log-record factory within sweep_end.POLL_S of control returning to the app; a factory the app sets meanwhile is
# kept. The driver sets its own factory at once, then times the release.
TIMED = r"""
import json, logging, sys, time
sys.path.insert(0, {zen_dir!r})
from bootstrap.doors import outbound
from bootstrap.adapter import sweep_end
import app
from hydra_zen import builds, launch, zen
overrides = ["hydra/callbacks=bootstrap", "+env@hydra.callbacks.bootstrap.env=cpu_debug", "fail=false,true",
             "hydra.sweep.dir=sweep"]
try:
    launch(builds(app.train, populate_full_signature=True), zen(app.train), multirun=True, overrides=overrides,
           version_base="1.3")
except Exception:
    pass
returned = time.monotonic()
held_on_return = outbound.MaskedLogs.held()
ours = logging.getLogRecordFactory()
def mine(*args, **kwargs):
    return ours(*args, **kwargs)
logging.setLogRecordFactory(mine)
while outbound.MaskedLogs.held() and time.monotonic() - returned < 10:
    time.sleep(0.0002)
released_after = time.monotonic() - returned
record = logging.getLogger("x").makeRecord("x", logging.INFO, "f", 1, "password=%s", ("hunter2hunter2",), None)
print(json.dumps({{"held_on_return": held_on_return, "released_after_s": released_after, "poll_s": sweep_end.POLL_S,
                  "held": outbound.MaskedLogs.held(), "mine_kept": logging.getLogRecordFactory() is mine,
                  "passed_through": record.getMessage()}}))
"""


def test_a_failed_in_process_sweep_releases_its_factory_within_the_poll_and_keeps_the_apps_own(tmp_path):
    driver = tmp_path / "timed.py"
    driver.write_text(TIMED.format(zen_dir=str(ROOT / "tests" / "zen_app")))
    proc = subprocess.run([sys.executable, str(driver)], cwd=tmp_path, capture_output=True, text=True,
                          env=clean_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (found,) = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"held_on_return"')]
    print(found)  # the measured delay, for docs/errors.md
    # Asynchronous: still held when control returns (no hook ran), released by the watcher afterwards.
    assert found["held_on_return"] is True and found["held"] is False
    # Within the watcher's poll, with room for a loaded 2-core machine's scheduling.
    assert found["released_after_s"] < found["poll_s"] + 1.0, found
    # The app's own factory, set in between, is kept; ours stays in its chain and no longer masks.
    assert found["mine_kept"] is True and found["passed_through"] == "password=hunter2hunter2"
