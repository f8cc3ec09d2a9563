"""The tiny task, started by Hugging Face Accelerate."""

import sys
from pathlib import Path

from accelerate import Accelerator
from accelerate.utils import set_seed

sys.path.insert(0, str(Path(__file__).parent))
from task import first_step  # noqa: E402

accelerator = Accelerator(cpu=True)
set_seed(0)
first_step(str(accelerator.device))
