"""The flight recorder on NCCL, for bench/gpu_check.sh (one GPU): a 1-rank NCCL group under env=h100
all-reduces three times, then the task raises. The dump must land in the job's directory with the
three NCCL collectives, the report must say where, and `bootstrap hang` must read it.

    python bench/gpu_flight_recorder.py OUT_DIR [PRESET [OVERRIDE ...]]

PRESET defaults to h100 (NCCL); the test suite runs the same check with cpu_debug (gloo).
"""

import sys
from pathlib import Path

import torch
import torch.distributed as dist
from hydra import compose, initialize_config_dir

import bootstrap
from bootstrap.distributed import dumps, hang
from bootstrap.doors import records

ROOT = Path(__file__).resolve().parents[1]


def main(out: Path, preset: str = "h100", *overrides: str) -> int:
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"env={preset}", "env.distributed.init=always", *overrides])
    backend = "nccl" if cfg.env.device == "cuda" else "gloo"
    try:
        with bootstrap.initialize(cfg.env, name=preset, output_dir=out) as session:
            assert session.report.vars["TORCH_FR_DUMP_TEMP_FILE"].value == str(out / hang.DUMP_PREFIX)
            for _ in range(3):
                dist.all_reduce(torch.ones(8, device=session.device))
            if backend == "nccl":
                torch.cuda.synchronize()
            raise RuntimeError(f"the task fails on purpose, under a {backend} group")
    except RuntimeError:
        pass
    report = records.read_report(out / "bootstrap.json")
    recorded = report.distributed.hang
    assert recorded and recorded.dumps == [f"{hang.DUMP_PREFIX}0"], report.distributed
    dump = dumps.read(out / f"{hang.DUMP_PREFIX}0")
    names = [e.profiling_name for e in dump.entries]
    assert names.count(f"{backend}:all_reduce") >= 3, names
    diagnosis, _ = hang.diagnose_dir(out)
    assert diagnosis.ranks == [0] and not diagnosis.findings, diagnosis
    print(f"  dump {out / (hang.DUMP_PREFIX + '0')}: {len(names)} entries, {names.count(backend + ':all_reduce')} "
          f"{backend}:all_reduce; bootstrap hang: no divergence")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), *sys.argv[2:]))
