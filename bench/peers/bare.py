"""The tiny task with no framework at all: the floor every peer shares (torch, and AdamW's imports)."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from task import first_step  # noqa: E402

torch.manual_seed(0)
first_step("cpu")
