"""Run under torchrun: every rank sends its own fabric findings through the check's gather (gloo), and writes what
it received, for tests/e2e/test_fabric.py to compare."""
import json
import os
import sys
from datetime import timedelta

import torch.distributed as dist

from bootstrap.distributed.waits import Deadline
from bootstrap.preflight import fabric_check, measure

dist.init_process_group("gloo", timeout=timedelta(seconds=60))
rank = dist.get_rank()
lines = [f"rank {rank} on node{rank}: NCCL said 'Using network Socket'; expected IB"] if rank == 1 else []
store = dist.distributed_c10d._get_default_store()
with measure.Meeting(store, "fabric_test", rank, dist.get_world_size(), Deadline(30)) as meeting:
    found = fabric_check.agreed(meeting, None, "cpu", lines)
with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as out:
    json.dump([[f.kind, f.message, f.ranks] for f in found], out)
dist.destroy_process_group()
