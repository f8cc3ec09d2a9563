"""Command-line tools: argument parsing and printing only. ``bootstrap`` (and ``python -m bootstrap``)
dispatches to one module per command (:mod:`bootstrap.cli.commands`).

Every command imports this package first, so the one filter below covers them all: torch's CPU wheel
does not need numpy, and without it ``import torch`` warns "Failed to initialize NumPy". No command uses
numpy, so the warning is noise in their output."""

import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
