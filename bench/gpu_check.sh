#!/usr/bin/env bash
# GPU check, for a machine with one NVIDIA GPU (H100/H200): about a minute.
#   1. env=h100's checks pass;
#   2. a 1-rank NCCL process group initialises eagerly (device_id);
#   3. train_stub trains on cuda with TF32 matmuls;
#   4. the flight recorder on NCCL: a failing job's dump in its own directory, read by `bootstrap hang`;
#   5. the preflight check: a TF32 matmul above the h100 floor, the all_reduce timed over a 1-rank NCCL
#      group (busbw is 0 by its formula with one rank; the busbw floors are tested on the CPU by
#      overrides), and the network NCCL chose read from its own log; `bootstrap doctor --preflight`.
# Run from the repository root, after the README's install command. Arguments are extra Hydra overrides for
# every job, e.g. a machine whose torch is older than the preset asks: "env.requires.torch='>=2.11'".
set -euo pipefail
out=$(mktemp -d)
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"

echo "== 1. env=h100 checks, and TF32 training on cuda"
python train_stub.py env=h100 train.steps=300 hydra.run.dir="$out/h100" "$@"
python bench/check_report.py "$out/h100/bootstrap.json" --device cuda --tf32 --trained --preflight

echo "== 2. a 1-rank NCCL process group, started eagerly, destroyed at job end"
python train_stub.py env=h100 env.distributed.init=always train.steps=20 hydra.run.dir="$out/nccl" "$@"
python bench/check_report.py "$out/nccl/bootstrap.json" --device cuda --backend nccl --group --trained \
  --preflight --network
ls "$out/nccl"/nccl.*.log
echo "== 3. the flight recorder on NCCL"
python bench/gpu_flight_recorder.py "$out/fr" h100 "$@"
python -m bootstrap hang "$out/fr"
echo "== 4. is this GPU healthy? the doctor's preflight"
python -m bootstrap doctor --preflight env=h100 "$@" | sed -n '/^Preflight/,/^Torch/p'
echo "GPU check passed"
