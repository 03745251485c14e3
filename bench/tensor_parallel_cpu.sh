#!/usr/bin/env bash
# Tensor vs data parallelism of tupa-train on CPU (issue 18; figures in
# docs/trainer.md, "Tensor parallelism"). The wide MLP 784-8192-8192-10,
# global batch 256, AdamW fp32, synthetic data, 2 rank processes on
# loopback with 1 BLAS thread each: T=2 x D=1 (each rank holds half of the
# two big layers, same batch) against T=1 x D=2 (each rank holds the whole
# model, half the batch). Prints each run's rank-0 summary line (JSON):
# param_bytes (parameters + gradients + AdamW state per rank) and
# step_ms_median.
#
#   bench/tensor_parallel_cpu.sh            # BIN=build/bin/tupa-train STEPS=20
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/build/bin/tupa-train}
STEPS=${STEPS:-20}
OUT=${OUT:-$(mktemp -d /tmp/tupa-tp-bench.XXXXXX)}
mkdir -p "$OUT"

spec() {  # file per-rank-batch tensor
  cat >"$1" <<YAML
name: tp-bench
train:
  model: {type: mlp, layers: [784, 8192, 8192, 10]}
  data: {format: synthetic, samples: 8192, test_samples: 256}
  batch_size: $2
  steps: $STEPS
  seed: 1
  log_every: 1000
  parallel: {tensor: $3}
YAML
}

run2() {  # name spec: two ranks on this machine
  local port=$((20000 + RANDOM % 20000)) r
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OPENBLAS_NUM_THREADS=1 \
      "$BIN" -f "$2" --json >"$OUT/$1.$r.out" 2>"$OUT/$1.$r.err" &
  done
  wait
  grep '"summary"' "$OUT/$1.0.out" | sed "s/^{/{\"run\": \"$1\", /"
}

spec "$OUT/tp.yaml" 256 2
spec "$OUT/dp.yaml" 128 1
run2 "T=2xD=1" "$OUT/tp.yaml"
run2 "T=1xD=2" "$OUT/dp.yaml"
