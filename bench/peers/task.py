"""The tiny task every peer runs: one MLP, one AdamW step. Prints FIRST_STEP <unix time>."""

import time

import torch


def first_step(device: str = "cpu", seed_generator=None) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 8)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64, device=device)
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    print(f"FIRST_STEP {time.time():.6f}", flush=True)
