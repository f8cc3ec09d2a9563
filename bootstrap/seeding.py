"""Seeding every RNG the task may use from ``env.seed``."""

from __future__ import annotations

import random
import sys


def seed_everything(seed: int) -> list[str]:
    """Seed random, numpy (when installed) and torch (which also seeds every CUDA device).

    Returns the names of the generators seeded, for the report.
    """
    import torch

    random.seed(seed)
    seeded = ["random"]
    numpy = sys.modules.get("numpy")
    if numpy is None:
        try:
            import numpy
        except ImportError:
            numpy = None
    if numpy is not None:
        numpy.random.seed(seed)
        seeded.append("numpy")
    torch.manual_seed(seed)  # seeds the CPU generator and every CUDA device's
    seeded.append("torch")
    return seeded
