#!/usr/bin/env bash
# Runs every `wgfuse sim` measurement and its baselines on an NVIDIA GPU machine, writing JSON and
# logs into $OUT, then bench/baselines/sim_report.py turns them into the tables of docs/RESULTS.md.
#
#   OUT=/some/dir bench/baselines/run_sim.sh          (from the repository root)
#
# Needs: wgfuse built (dist/wgfuse-linux-x64/ from scripts/package, or build/wgfuse with the Dawn
# library of node_modules/bun-webgpu-linux-x64 or WGFUSE_WEBGPU_LIB), python3 with torch, jax and
# numpy, nvcc. Designed to finish in about 8 minutes on an H100: stages run in order of
# importance and a stage is skipped (and logged as skipped) when the time budget is spent.
#
# Stages: 1 wgfuse, default sizes, all three strategies, --check (5 workloads)
#         2 hand-written CUDA (bench/baselines/sim_cuda.cu): acrobot and market, one thread and 4-lane
#           teams, fast intrinsics (default sizes and the sweeps) and accurate libm (default sizes);
#           the other workloads fast, both variants, default sizes (Rastrigin's team: 64 threads
#           per 4 individuals, float4 loads)
#         3 JAX jit+lax.scan+vmap, default sizes (5 workloads)
#         4 PyTorch eager per step, default sizes (5 workloads)
#         5 wgfuse sweeps: population 512..65,536 at the default L, L 100..5,000 at the default
#           population (acrobot, market)
#         6 JAX sweeps (acrobot, market)
#         7 PyTorch eager L sweep (acrobot, market)
#         8 torch.compile of the step function (acrobot, market)
#         9 torch.compile of the whole episode (acrobot L=100 and 500; failures reported as they are)
# STAGES="1 2 ..." runs a subset; BUDGET and HARD (seconds) move the time limits; EPISODES=N
# (default 1) scores every individual by its mean return over N start states, in wgfuse and the
# Python baselines alike (the sweeps keep 1).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
mkdir -p "$OUT"
BUDGET=${BUDGET:-400}  # seconds: no stage starts after this
HARD=${HARD:-500}      # seconds: no command runs past this
PY=${PY:-python3}
EPISODES=${EPISODES:-1}
. bench/baselines/tools.sh
ADAPTER=${ADAPTER:-gpu}

LOG=$OUT/run_sim.log
: >"$LOG"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$LOG"; }

# run NAME LIMIT CMD...: runs CMD with stdout+stderr to $OUT/NAME.txt, at most LIMIT seconds and
# never past HARD; records the exit status (124 = timed out) in the log.
run() {
  local name=$1 limit=$2
  shift 2
  local left=$((HARD - SECONDS))
  ((left < limit)) && limit=$left
  if ((limit < 10)); then
    log "SKIPPED $name (time budget spent)"
    return 0
  fi
  log "start $name (limit ${limit}s): $*"
  timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  log "end   $name: exit $rc$([[ $rc == 124 ]] && echo ' (timed out)')"
  return 0
}
STAGES=${STAGES:-1 2 3 4 5 6 7 8 9}  # e.g. STAGES="2 3" to run only those
stage() {
  if [[ " $STAGES " != *" ${1%%:*} "* ]]; then
    log "not selected: stage $1"
    return 1
  fi
  if ((SECONDS > BUDGET)); then
    log "SKIPPED stage $1 (over the ${BUDGET}s budget)"
    return 1
  fi
  log "=== stage $1"
  return 0
}

log "wgfuse: $WGFUSE, WGFUSE_WEBGPU_LIB=${WGFUSE_WEBGPU_LIB:-}, adapter $ADAPTER, git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true
"$WGFUSE" --adapter "$ADAPTER" info --json >"$OUT/wgfuse_info.json" 2>"$OUT/wgfuse_info.err" || log "wgfuse info failed"
"$PY" -c "import torch, jax; print('torch', torch.__version__, 'jax', jax.__version__, jax.devices())" \
  >"$OUT/python_versions.txt" 2>&1 || true
"$NVCC" --version >"$OUT/nvcc_version.txt" 2>&1 || true

WORKLOADS="rastrigin acrobot cartpole mountaincar market"
# The Market prices: prefix-consistent, so one 5,000-step file serves every L up to 5,000.
DATA=$OUT/market_5000.f32
"$WGFUSE" --adapter "$ADAPTER" sim market --pop 64 --steps 5000 --generations 1 --mode fused --quiet \
  --write-data "$DATA" >"$OUT/market_data.txt" 2>&1 || log "writing the market data failed"

ACRO_POPS="512,2048,8192,32768,65536"
MARKET_POPS="512,2048,10000,32768,65536"
LS="100,500,1500,5000"
dedup() { echo "$1" | tr ',' '\n' | awk 'NF && !seen[$0]++' | paste -sd, -; }
sizes() {  # sizes POPS L  |  sizes POP Ls  -> "PxL,..."
  local a=$1 b=$2 out="" x
  if [[ $a == *,* ]]; then for x in ${a//,/ }; do out+="${out:+,}${x}x$b"; done
  else for x in ${b//,/ }; do out+="${out:+,}${a}x$x"; done; fi
  echo "$out"
}

if stage "1: wgfuse default sizes, all strategies, --check"; then
  for w in $WORKLOADS; do
    run "wgfuse_$w" 150 "$WGFUSE" --adapter "$ADAPTER" sim "$w" --mode all --episodes "$EPISODES" --generations 32 --check --quiet --json "$OUT/wgfuse_$w.json"
  done
fi

if stage "2: hand-written CUDA"; then
  # One binary, every variant (bench/baselines/sim_cuda.cu); -Xptxas -v records registers and spills.
  run cuda_build 240 "$NVCC" -O3 -arch=sm_90 -Xptxas -v -o "$OUT/sim_cuda" bench/baselines/sim_cuda.cu
  if [[ -x $OUT/sim_cuda ]]; then
    # cuda WORKLOAD VARIANT MATH LIMIT [SIZES]: checked against wgfuse's reference sample of stage 1
    # first (exit 3 on mismatch, nothing timed), then timed into cuda_<workload>_<variant>_<math>.json.
    cuda() {
      local w=$1 v=$2 m=$3 limit=$4 sizes=${5:-} check=()
      [[ -f $OUT/wgfuse_$w.json ]] && check=(--check "$OUT/wgfuse_$w.json")
      local name="cuda_${w}_${v}_$m"
      run "$name" "$limit" "$OUT/sim_cuda" "$w" --variant "$v" --math "$m" --data "$DATA" --episodes "${EPISODES:-1}" \
        --generations 32 ${sizes:+--sizes "$sizes"} "${check[@]}" --json "$OUT/$name.json"
    }
    cuda acrobot team fast 60 "$(dedup "4096x500,$(sizes $ACRO_POPS 500),$(sizes 4096 $LS)")"
    cuda market team fast 90 "$(dedup "10000x1500,$(sizes $MARKET_POPS 1500),$(sizes 10000 $LS)")"
    cuda acrobot thread fast 60 "$(dedup "4096x500,$(sizes $ACRO_POPS 500),$(sizes 4096 $LS)")"
    cuda market thread fast 90 "$(dedup "10000x1500,$(sizes $MARKET_POPS 1500),$(sizes 10000 $LS)")"
    for w in acrobot market; do
      for v in team thread; do cuda "$w" "$v" accurate 60; done
    done
    for w in rastrigin cartpole mountaincar; do
      for v in team thread; do cuda "$w" "$v" fast 30; done
    done
  fi
fi

if stage "3: JAX default sizes"; then
  for w in $WORKLOADS; do
    run "jax_$w" 90 "$PY" bench/baselines/sim_jax.py "$w" --episodes "$EPISODES" --generations 5 --data "$DATA" --compare "$OUT/wgfuse_$w.json" --json "$OUT/jax_$w.json"
  done
fi

if stage "4: PyTorch eager default sizes"; then
  for w in $WORKLOADS; do
    run "torch_eager_$w" 90 "$PY" bench/baselines/sim_torch.py "$w" --mode eager --episodes "$EPISODES" --generations 2 --data "$DATA" --compare "$OUT/wgfuse_$w.json" --json "$OUT/torch_eager_$w.json"
  done
fi

if stage "5: wgfuse sweeps"; then
  # 16 generations (the default sizes take 32): command buffers of 8 (wgfuse's and sim_cuda's
  # --per-submit default), each generation's time a share of its buffer's interval; session 4's
  # sweeps took the median of 3 single-generation intervals with two in flight, which could land on
  # a near-zero or a doubled one (rows scattered 800-350,000 gen/s).
  mkdir -p "$OUT/sweep"
  for p in ${ACRO_POPS//,/ }; do
    run "sweep/wgfuse_acrobot_p${p}_L500" 60 "$WGFUSE" --adapter "$ADAPTER" sim acrobot --mode all --pop "$p" --steps 500 --generations 16 --quiet --json "$OUT/sweep/wgfuse_acrobot_p${p}_L500.json"
  done
  for L in ${LS//,/ }; do
    run "sweep/wgfuse_acrobot_p4096_L$L" 60 "$WGFUSE" --adapter "$ADAPTER" sim acrobot --mode all --pop 4096 --steps "$L" --generations 16 --quiet --json "$OUT/sweep/wgfuse_acrobot_p4096_L$L.json"
  done
  for p in ${MARKET_POPS//,/ }; do
    run "sweep/wgfuse_market_p${p}_L1500" 60 "$WGFUSE" --adapter "$ADAPTER" sim market --mode all --pop "$p" --steps 1500 --generations 16 --quiet --json "$OUT/sweep/wgfuse_market_p${p}_L1500.json"
  done
  for L in ${LS//,/ }; do
    run "sweep/wgfuse_market_p10000_L$L" 60 "$WGFUSE" --adapter "$ADAPTER" sim market --mode all --pop 10000 --steps "$L" --generations 16 --quiet --json "$OUT/sweep/wgfuse_market_p10000_L$L.json"
  done
fi

if stage "6: JAX sweeps"; then
  run jax_sweep_acrobot 90 "$PY" bench/baselines/sim_jax.py acrobot --sizes "$(dedup "$(sizes $ACRO_POPS 500),$(sizes 4096 $LS)")" --generations 3 --json "$OUT/jax_sweep_acrobot.json"
  run jax_sweep_market 120 "$PY" bench/baselines/sim_jax.py market --data "$DATA" --sizes "$(dedup "$(sizes $MARKET_POPS 1500),$(sizes 10000 $LS)")" --generations 3 --json "$OUT/jax_sweep_market.json"
fi

if stage "7: PyTorch eager L sweep"; then
  run torch_eager_sweep_acrobot 60 "$PY" bench/baselines/sim_torch.py acrobot --mode eager --sizes "$(sizes 4096 $LS)" --generations 1 --json "$OUT/torch_eager_sweep_acrobot.json"
  run torch_eager_sweep_market 90 "$PY" bench/baselines/sim_torch.py market --mode eager --data "$DATA" --sizes "$(sizes 10000 $LS)" --generations 1 --json "$OUT/torch_eager_sweep_market.json"
fi

if stage "8: torch.compile of the step"; then
  for w in acrobot market; do
    run "torch_compile_step_$w" 120 "$PY" bench/baselines/sim_torch.py "$w" --mode compile-step --episodes "$EPISODES" --generations 2 --data "$DATA" --compare "$OUT/wgfuse_$w.json" --json "$OUT/torch_compile_step_$w.json"
  done
fi

if stage "9: torch.compile of the whole episode"; then
  run torch_compile_episode_acrobot 150 "$PY" bench/baselines/sim_torch.py acrobot --mode compile-episode --sizes "4096x100,4096x500" --generations 2 --json "$OUT/torch_compile_episode_acrobot.json"
fi

"$PY" bench/baselines/sim_report.py "$OUT" >"$OUT/report.md" 2>"$OUT/report.err" || log "sim_report.py failed (see report.err)"
log "done in ${SECONDS}s; report: $OUT/report.md"
