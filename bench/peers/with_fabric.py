"""The tiny task, started by Lightning Fabric."""

import sys
from pathlib import Path

from lightning_fabric import Fabric, seed_everything

sys.path.insert(0, str(Path(__file__).parent))
from task import first_step  # noqa: E402

fabric = Fabric(accelerator="cpu")
fabric.launch()
seed_everything(0)
first_step(str(fabric.device))
