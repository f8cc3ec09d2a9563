"""Seeding every RNG from ``env.seed``: the policy, next to the code.

Megatron-LM seeds with ``seed + 100 * pp_rank``: all ranks of one pipeline stage,
data-parallel replicas included, share a seed, so replicas initialise the same
weights (tensor-parallel ranks are then forked by its model-parallel RNG tracker).

Ours, for the rank at mesh coordinate ``pp_rank`` on a dimension named ``pp``
(0 when the mesh has none):

* ``random``, numpy (if installed), torch and every CUDA device: ``seed + 100 * pp_rank``.
  Data-parallel replicas get the same seed for model initialisation, as in Megatron.
  numpy's global generator is seeded when ``numpy.random`` is imported (at once if it already is):
  importing it takes 6 to 15 ms, which a job that never draws from it should not pay, and no
  code can draw from it before it is imported, so every draw is the same as if seeded at start.
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
import sys
from typing import Any, Optional

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


class _SeedNumpyOnImport:
    """A finder on ``sys.meta_path`` that seeds ``numpy.random`` right after it is first imported, then leaves.

    It finds nothing itself: it asks the finders after it for the module's spec and wraps only the loader's
    ``exec_module``; the module keeps its own loader. It waits only while the job runs (a forked child, such as a
    data loader's worker, inherits it): the job's end drops it (:func:`forget_pending_seed`)."""

    seed: Optional[int] = None

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "numpy.random" or self.seed is None:
            return None
        for finder in sys.meta_path:
            spec = None if finder is self else getattr(finder, "find_spec", lambda *_: None)(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, seed = spec.loader, self.seed
        self.leave()

        class Seeding:
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                module.__loader__ = module.__spec__.loader = loader  # no trace of this wrapper stays
                loader.exec_module(module)
                module.seed(seed)

        spec.loader = Seeding()
        return spec

    def expect(self, seed: int) -> None:
        self.seed = seed
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def leave(self) -> None:
        self.seed = None
        if self in sys.meta_path:
            sys.meta_path.remove(self)


_numpy_on_import = _SeedNumpyOnImport()


def forget_pending_seed() -> None:
    """The job ends: a numpy seed still waiting for ``numpy.random``'s import is dropped, so that nothing of
    the job stays on ``sys.meta_path`` (every draw the job made was already seeded)."""
    _numpy_on_import.leave()


def seed_everything(seed: int) -> list[str]:
    """Seed random, numpy (when installed; its generator when ``numpy.random`` is imported) and torch (which
    also seeds every CUDA device).

    Returns the names of the generators seeded, for the report.
    """
    import torch

    random.seed(seed)
    seeded = ["random"]
    numpy = _numpy()
    if numpy is not None:
        if "numpy.random" in sys.modules:
            _numpy_on_import.leave()
            numpy.random.seed(seed)
        else:
            _numpy_on_import.expect(seed)
        seeded.append("numpy")
    torch.manual_seed(seed)  # seeds the CPU generator and every CUDA device's
    seeded.append("torch")
    return seeded
