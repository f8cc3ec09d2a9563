"""Benchmark (not a test): the tracker integrations' share of a job.

    python bench/bench_trackers.py [--quick]        prints JSON

For each tracker that is installed, the same job of the tracker app (``tests/tracker_app``: a Hydra task that
uses the tracker as its users do, with ``+env=cpu_debug hydra/callbacks=bootstrap``) runs with the integration
and without it, interleaved (each first in every other round): ``ratio`` is the ratio of the median wall times,
and ``share`` the integration's own calls (timed in place inside the runs with it) over the job's wall time,
which noise cannot hide:

- ``mlflow``: one ``mlflow.start_run()`` in the task (a SQLite store, made once before the timed runs). Without:
  the provider is taken out of MLflow's registry and the job's end asks no tracker;
- ``wandb``: ``wandb.init()`` offline, left active. Without: the job's end asks no tracker;
- ``lightning``: ``Trainer.fit`` with CSV and TensorBoard loggers. Without: the callback left out (``~callbacks``).

Also, for MLflow, the provider's import as MLflow loads it in every process that imports MLflow (``import
bootstrap`` included, which registers the preset schema with Hydra), against the whole of ``import mlflow``, in a
bare process and in a Hydra app. A tracker that is not installed is skipped, with the reason.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path
from typing import Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "tests" / "tracker_app" / "app.py"
BOOTSTRAP = ["+env=cpu_debug", "hydra/callbacks=bootstrap"]

# Runs the app as `python app.py ARGS` would. "without": the integration switched off. "with": each of its calls
# (the provider's tags, the Lightning callback's setup, the job's end) timed in place, printed at exit.
PROBE = """
import atexit, json, runpy, sys, time
variant, app, args = sys.argv[1], sys.argv[2], sys.argv[3:]
import bootstrap.integrations
if variant == "without":
    bootstrap.integrations.AT_JOB_END = ()  # the job's end asks no tracker
    if "tracker=mlflow" in args:
        from mlflow.tracking.context import registry
        providers = registry._run_context_provider_registry._registry
        providers[:] = [p for p in providers if type(p).__module__ != "bootstrap.integrations.mlflow"]
else:
    spent = [0.0]

    def timing(owner, name):
        inner = getattr(owner, name)
        def timed(*a, **k):
            started = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                spent[0] += time.perf_counter() - started
        setattr(owner, name, timed)

    timing(bootstrap.integrations, "job_end")
    if "tracker=mlflow" in args:
        import mlflow  # first: MLflow loads the provider while it is imported
        import bootstrap.integrations.mlflow as provider
        assert any(type(p) is provider.BootstrapContext for p in
                   mlflow.tracking.context.registry._run_context_provider_registry), "the provider is not registered"
        timing(provider.BootstrapContext, "tags")
    if "tracker=lightning" in args:
        import bootstrap.integrations.lightning as callback
        timing(callback.BootstrapLogging, "setup")
    atexit.register(lambda: print("INTEGRATION_MS", spent[0] * 1000, flush=True))
sys.argv = [app, *args]
runpy.run_path(app, run_name="__main__")
"""

CASES = {  # tracker: (the module that says it is installed, the app's arguments, the environment, without's extra)
    "mlflow": ("mlflow", ["tracker=mlflow"], {}, []),
    "wandb": ("wandb", ["tracker=wandb", "wandb=open"], {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}, []),
    "lightning": ("lightning", ["tracker=lightning"], {}, ["~callbacks"]),
}


def _env(work: Path, extra: Dict[str, str]) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                                             "PYTHONDONTWRITEBYTECODE")}
    env.update(MLFLOW_TRACKING_URI=f"sqlite:///{work / 'mlflow.db'}", PYTHONPATH=str(ROOT), **extra)
    return env


def _timed(cmd: List[str], cwd: Path, env: Dict[str, str], timeout: int = 300) -> Tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise RuntimeError(f"{' '.join(cmd)} ran past {timeout} s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{stderr[-3000:]}")
    return time.perf_counter() - started, stdout


def job_share(tracker: str, work: Path, repeats: int) -> dict:
    module, args, extra, without = CASES[tracker]
    if find_spec(module) is None:
        return {"skipped": f"{module} not installed (pip install -e '.[{tracker}]')"}
    work.mkdir(parents=True, exist_ok=True)
    env, runs = _env(work, extra), {"n": 0}

    def job(variant: str) -> Callable[[], Tuple[float, str]]:
        def run() -> Tuple[float, str]:
            runs["n"] += 1
            out = work / f"run{runs['n']}"
            return _timed([sys.executable, "-c", PROBE, variant, str(APP), f"hydra.run.dir={out}", *args, *BOOTSTRAP,
                           *(without if variant == "without" else [])], work, env)
        return run

    if tracker == "mlflow" and repeats > 1:  # not in --quick, which checks that it runs
        job("with")()  # one untimed run first: MLflow makes its database, every timed run then finds it
    times: Dict[str, List[float]] = {"with": [], "without": []}
    spent: List[float] = []
    for round_ in range(repeats):
        # Each variant goes first in every other round: a job's leftovers (wandb's service, MLflow's database
        # writes) still running when the next job starts slow that one, whichever it is.
        for variant in (("with", "without") if round_ % 2 == 0 else ("without", "with")):
            wall, stdout = job(variant)()
            times[variant].append(wall)
            spent += [float(line.split()[1]) for line in stdout.splitlines() if line.startswith("INTEGRATION_MS ")]
    with_s, without_s = statistics.median(times["with"]), statistics.median(times["without"])
    integration_ms = statistics.median(spent)
    # The ratio of two noisy wall times; the share, of the integration's own calls timed inside the same jobs.
    return {"with_s": with_s, "without_s": without_s, "ratio": with_s / without_s, "integration_ms": integration_ms,
            "share": integration_ms / 1000 / with_s}


# MLflow loads the provider while it is imported; here it is held back (MLflow then skips it with a warning) and
# loaded afterwards on its own, as MLflow would, so that its cost is timed apart from MLflow's.
IMPORT_PROBE = """
import importlib, json, sys, time, warnings
warnings.simplefilter("ignore")
if sys.argv[1] == "hydra_app":  # what a Hydra app has imported before its task imports mlflow
    import hydra, omegaconf, torch
sys.modules["bootstrap.integrations.mlflow"] = None
started = time.perf_counter()
import mlflow
mlflow_s = time.perf_counter() - started
del sys.modules["bootstrap.integrations.mlflow"]
started = time.perf_counter()
importlib.import_module("bootstrap.integrations.mlflow")
print(json.dumps({"mlflow_s": mlflow_s, "provider_s": time.perf_counter() - started}))
"""


def provider_import(repeats: int) -> dict:
    """The provider's import as MLflow loads it (``import bootstrap`` included), against ``import mlflow``: in a
    process that has imported nothing else, and in a Hydra app (hydra, omegaconf and torch imported first)."""
    if find_spec("mlflow") is None:
        return {"skipped": "mlflow not installed (pip install -e '.[mlflow]')"}
    timed: Dict[str, Dict[str, List[float]]] = {where: {"provider_s": [], "mlflow_s": []}
                                                 for where in ("bare", "hydra_app")}
    for _ in range(repeats):
        for where, times in timed.items():
            out = subprocess.run([sys.executable, "-c", IMPORT_PROBE, where], capture_output=True, text=True,
                                 check=True, env=_env(Path(tempfile.gettempdir()), {})).stdout
            for key, value in json.loads(out.strip().splitlines()[-1]).items():
                times[key].append(value * 1000)
    result = {}
    for where, times in timed.items():
        ours, whole = statistics.median(times["provider_s"]), statistics.median(times["mlflow_s"])
        result[where] = {"provider_import_ms": ours, "mlflow_import_ms": whole, "share": ours / whole}
    return result


def trackers(quick: bool, work: Path) -> dict:
    repeats = 1 if quick else 5
    result: Dict[str, object] = {tracker: job_share(tracker, work / tracker, repeats) for tracker in CASES}
    result["mlflow_provider_import"] = provider_import(1 if quick else 5)
    for tracker in CASES:  # flat, for bench/run.py's targets table
        shares = result[tracker]
        if isinstance(shares, dict) and "ratio" in shares:
            result[f"{tracker}_ratio"], result[f"{tracker}_share"] = shares["ratio"], shares["share"]
    return result


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="bench-trackers-") as tmp:
        print(json.dumps(trackers("--quick" in sys.argv, Path(tmp)), indent=2))
