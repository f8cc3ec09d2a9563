"""Multi-process start-up on the engines users run: real torchrun and submitit_local, gloo on CPU."""
import subprocess

import torch.distributed as dist

import bootstrap

from conftest import clean_env


def run(cmd, cwd, timeout=240):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=clean_env(), timeout=timeout)


def test_an_existing_process_group_is_reported_and_left_alone():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        with bootstrap.initialize({"distributed": {"init": "always"}}) as session:
            assert session.report.distributed.process_group == "existing"
        assert dist.is_initialized()  # the user's group survives the job
    finally:
        dist.destroy_process_group()
