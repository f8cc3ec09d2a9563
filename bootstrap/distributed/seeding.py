"""Seeding every RNG from ``env.seed``: the policy, next to the code.

Megatron-LM seeds with ``seed + 100 * pp_rank``: all ranks of one pipeline stage,
data-parallel replicas included, share a seed, so replicas initialise the same
weights (tensor-parallel ranks are then forked by its model-parallel RNG tracker).

Ours, for the rank at mesh coordinate ``pp_rank`` on a dimension named ``pp``
(0 when the mesh has none):

* ``random``, numpy (if installed), torch and every CUDA device: ``seed + 100 * pp_rank``.
  Data-parallel replicas get the same seed for model initialisation, as in Megatron.
* the data seed, ``bootstrap.current().data_seed``, for the task's data generator:
  ``seed + rank`` with ``seed_offset: rank`` (the default), so each rank draws its own
  data stream; ``seed`` with ``seed_offset: none``.
* ``PYTHONHASHSEED=seed`` is exported for child processes; this interpreter's hash
  seed was fixed when it started.

``env.seed: null`` leaves seeding to the app: nothing is seeded and the data seed is
None. Either way, a task that re-seeds torch afterwards (Lightning's
``seed_everything``) is noticed at job end: ``torch.initial_seed()`` has changed, and
the report records the new seed as ``seed.task_seed``.
"""

from __future__ import annotations

import functools
import random
from typing import Optional

PIPELINE_STRIDE = 100  # Megatron's offset between pipeline stages


def global_seed(seed: int, pp_rank: int = 0) -> int:
    return seed + PIPELINE_STRIDE * pp_rank


def data_seed(seed: Optional[int], rank: int, per_rank: bool) -> Optional[int]:
    if seed is None:
        return None
    return seed + rank if per_rank else seed


def torch_seed() -> int:
    """The seed torch's default generator was last seeded with (random at start-up)."""
    import torch

    return torch.initial_seed()


@functools.lru_cache(maxsize=1)  # without numpy, every job of a sweep would search sys.path for it again
def _numpy():
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def seed_everything(seed: int) -> list[str]:
    """Seed random, numpy (when installed) and torch (which also seeds every CUDA device).

    Returns the names of the generators seeded, for the report.
    """
    import torch

    random.seed(seed)
    seeded = ["random"]
    numpy = _numpy()
    if numpy is not None:
        numpy.random.seed(seed)
        seeded.append("numpy")
    torch.manual_seed(seed)  # seeds the CPU generator and every CUDA device's
    seeded.append("torch")
    return seeded
