"""A 2-rank DDP job for the watch's tests (tests/e2e/test_watch.py): train_stub's model, each step marked with
``session.watch``, through tests/preflight_app/pinned.sh (every rank on CPU 0, each in a CPU group of its own:
tests/cpu_groups.py).

``slow.after_s``: that long after its first step, rank ``slow.rank`` starts ``slow.loops`` busy processes, which
inherit its CPU and its group: from then on they share its group's share of the CPU with it, a slow rank for real
(with L loops, its own work takes L + 1 times the others': tests/cpu_groups.py's budgets). The ranks agree every 10
steps (one all_reduce) on whether to stop: once the watch has made ``slow.findings`` findings that name rank
``slow.rank`` with one of the words ``slow.named`` (a regex; a finding about another rank, or none, does not count)
and ``slow.windows_after`` more windows have passed, or after ``train.max_s``. ``die.after_s``: rank ``die.rank``
exits at once, mid-run, as a crashed rank does. ``mark.after_s``: rank 0 writes ``mark.file`` then, for the test to
act on the job (a link shaped).

Returns what the test checks against the report: when the slowing began (seconds after the first step, on the
slow rank's clock), and each rank's median wall time a step before and after it.
"""

import logging
import os
import re
import statistics
import subprocess
import time
from pathlib import Path

import hydra
import torch
import torch.distributed as dist

import bootstrap

log = logging.getLogger(__name__)
AGREE_EVERY = 10  # steps between the ranks' agreement on whether to stop


def _busy(loops: int, pids: str) -> None:
    """Busy processes on this rank's CPU and in its CPU group (they inherit both), so that they take this rank's share
    of the CPU alone. Their PIDs are added to ``pids``."""
    started = [subprocess.Popen(["sh", "-c", "while :; do :; done"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for _ in range(loops)]
    with open(pids, "a") as out:
        out.write(" ".join(str(loop.pid) for loop in started) + " ")


@hydra.main(config_path="conf", config_name="app", version_base="1.3")
def main(cfg) -> dict:
    session = bootstrap.current()
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(256, cfg.train.hidden), torch.nn.GELU(), torch.nn.Linear(cfg.train.hidden, cfg.train.hidden),
        torch.nn.GELU(), torch.nn.Linear(cfg.train.hidden, 16)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.train.lr)
    data = torch.Generator().manual_seed(session.rank)
    window_s = session.preset.watch.window_s
    first = slowed_at = named_at = None
    marked = False
    walls = {"before": [], "after": []}
    # "watch: rank 1 (node2) is slow: ...", "watch: rank 1 (node2) has slowed: ...", "watch: node node3 (rank 2): its
    # links ..."
    names_it = re.compile(rf"^watch: (rank {cfg.slow.rank} \(\S+\)|node \S+ \(rank {cfg.slow.rank}\):) "
                          rf"({cfg.slow.named})")
    last = None
    for step in session.watch(range(10**9)):
        now = time.monotonic()
        if first is None:
            first = now
        elif last is not None:
            walls["before" if slowed_at is None else "after"].append(now - last)
        last = now
        if cfg.die.after_s and session.rank == cfg.die.rank and now - first >= cfg.die.after_s:
            log.info("rank %d exits at %.1f s", session.rank, now - first)
            os._exit(3)
        if cfg.slow.after_s and slowed_at is None and now - first >= cfg.slow.after_s:
            slowed_at = now - first
            if session.rank == cfg.slow.rank:
                _busy(cfg.slow.loops, cfg.slow.pids)
                log.info("rank %d slowed at %.2f s", session.rank, slowed_at)
        x = torch.randn(cfg.train.batch_size, 256, generator=data)
        loss = torch.nn.functional.cross_entropy(model(x), torch.randint(0, 16, (cfg.train.batch_size,),
                                                                         generator=data))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if cfg.mark.after_s and session.rank == 0 and now - first >= cfg.mark.after_s and not marked:
            Path(cfg.mark.file).write_text(f"{now - first:.3f}")  # the test acts on the job from here (tc)
            marked = True
        if step % AGREE_EVERY == 0:
            if named_at is None and sum(bool(names_it.match(w)) for w in session.report.warnings) >= \
                    cfg.slow.findings:
                named_at = now
            done = named_at is not None and now - named_at >= cfg.slow.windows_after * window_s
            flag = torch.tensor([1.0 if done or now - first >= cfg.train.max_s else 0.0])
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            if flag.item():
                break
    wall = {name: statistics.median(values) if values else None for name, values in walls.items()}
    log.info("rank %d trained %d steps: wall %s", session.rank, step, wall)
    return {"slowed_at_s": slowed_at or -1.0, "wall_before_s": wall["before"] or -1.0,
            "wall_after_s": wall["after"] or -1.0, "steps": float(step)}


if __name__ == "__main__":
    main()
