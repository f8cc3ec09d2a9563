"""Where a run's output directory goes when Hydra's default would not do. Pure.

Hydra names a run's directory after the second it started (``outputs/<date>/<time>``),
resolved by each process on its own clock. Two things go wrong with that:

* two jobs (or two tasks of a SLURM job array) that start in the same second share one
  directory (hydra#2925, #1607). Inside a scheduler's job the bootstrap adds the job's id
  to the default: ``outputs/<date>/<time>_<job id>``, ``<array job id>_<task id>`` for a
  SLURM array task (``launcher.scheduler_job_id``);
* the ranks of one job can disagree by a second. Under torchrun, rank 0 shares its
  directory through torchrun's store (``group.agree_on_run_dir``; the launcher's row says
  ``run_dir_from_store``). Launchers that give no store but give every rank the job's id
  (srun, mpirun) use a directory named after the job instead: ``outputs/<launcher>-<job id>``.

Only Hydra's default is replaced: a ``hydra.run.dir`` the user chose is theirs.
"""

from __future__ import annotations

import re
from typing import Mapping, Optional

from bootstrap.distributed.launcher import Launch, scheduler_job_id

HYDRA_DEFAULT = "outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}"  # hydra/conf: hydra.run.dir


def _safe(job_id: str) -> str:
    """A job id as one directory name: PMIx namespaces hold '@', SLURM steps '.'."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", job_id)


def run_dir(configured: str, launch: Launch, environ: Mapping[str, str]) -> Optional[str]:
    """The run directory to use instead of ``configured`` (as written, unresolved), or None to keep it."""
    if configured != HYDRA_DEFAULT:
        return None
    if launch.world_size > 1 and not launch.row.run_dir_from_store and launch.job_id:
        return f"outputs/{launch.launcher.value}-{_safe(launch.job_id)}"
    job = scheduler_job_id(environ)
    return f"{HYDRA_DEFAULT}_{_safe(job)}" if job else None
