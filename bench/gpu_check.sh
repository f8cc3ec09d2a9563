#!/usr/bin/env bash
# GPU check, for a machine with one NVIDIA GPU (H100/H200): about a minute.
#   1. env=h100's checks pass;
#   2. a 1-rank NCCL process group initialises eagerly (device_id);
#   3. train_stub trains on cuda with TF32 matmuls.
# Run from the repository root, after the README's install command.
set -euo pipefail
out=$(mktemp -d)
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"

echo "== 1. env=h100 checks, and TF32 training on cuda"
python train_stub.py env=h100 train.steps=300 hydra.run.dir="$out/h100"
python - "$out/h100/bootstrap.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["checks"]:
    print(f"  check {c['name']:<20} required {c['required']:<8} found {c['found']:<12} ok={c['ok']}")
assert all(c["ok"] for c in r["checks"]), "a check failed"
assert r["device"].startswith("cuda") and r["torch"]["matmul_precision"] == "high", r
print("  samples/s", round(r["job"]["metrics"]["samples_per_s"]), "final loss", r["job"]["metrics"]["final_loss"])
PY

echo "== 2. a 1-rank NCCL process group, started eagerly"
python train_stub.py env=h100 env.distributed.init=always train.steps=20 hydra.run.dir="$out/nccl"
python - "$out/nccl/bootstrap.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["distributed"]
print("  ", d)
assert d["process_group"] == "created" and d["backend"] == "nccl", d
PY
echo "GPU check passed"
