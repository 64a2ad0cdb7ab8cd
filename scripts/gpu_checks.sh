#!/usr/bin/env bash
# One prepared call on a lent GPU machine (about 10 minutes): the GPU side of the benchmarks,
# then the `paper` preset within the remaining time (scripts/paper_on_gpu.py shortens only the
# number of epochs, and prints how).  Everything it prints goes to $OUT; the paper store's
# report, per-run results and dynamics come back as one tarball.
#   OUT=/tmp/out TOTAL=560 bash scripts/gpu_checks.sh
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/posenc-gpu}
TOTAL=${TOTAL:-560}          # seconds this script may take in all
STORE=${STORE:-/tmp/paper}
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $((TOTAL - ($(date +%s) - start))); }
{
  nvidia-smi -L
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
  # benchmarks in float32 without TF32: the same arithmetic as the eager reference
  for pe in rope alibi; do
    timeout 80 python3 benchmarks/train_step.py --device cuda --preset paper --pe "$pe" \
      --samples 4000 --steps 20
  done
  timeout 60 python3 benchmarks/train_step.py --device cuda --preset quick --pe rope \
    --samples 2000 --steps 30
  timeout 100 python3 benchmarks/ablation.py --device cuda --examples 2048 --batch-size 512
} 2>&1 | tee "$OUT/bench.txt"
budget=$(( $(left) - 150 ))  # probe, process starts, final report and tar come on top
echo "paper sweep budget: ${budget} s" | tee "$OUT/paper_log.txt"
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 timeout $(( $(left) - 45 )) python3 scripts/paper_on_gpu.py \
  "$STORE" --budget "$budget" --workers 15 --seeds 2 --extra=--no-theory 2>&1 \
  | tee -a "$OUT/paper_log.txt"
# if the sweep ran out of time, the report of the runs that finished (the log says which)
[ -f "$STORE/report/report.md" ] || timeout 40 python3 -m posenc report "$STORE" --no-theory \
  2>&1 | tee -a "$OUT/paper_log.txt"
python3 -m posenc runs "$STORE" > "$OUT/paper_runs.txt" 2>&1
(cd "$STORE" && tar czf "$OUT/paper_store.tgz" report \
  $(ls runs/*/result.json runs/*/metrics.jsonl runs/*/dynamics.jsonl runs/*/ablation_zero.json \
    2>/dev/null))
ls -la "$OUT"
echo "total $(( $(date +%s) - start )) s"
