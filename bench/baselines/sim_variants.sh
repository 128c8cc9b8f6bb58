#!/usr/bin/env bash
# Issue 27 item 5 (CartPole and MountainCar against CUDA) in one GPU call of about 4 minutes: the
# CUDA team kernel (bench/baselines/sim_cuda.cu) and every wgfuse variant of the step, in 5
# interleaved rounds (every variant and CUDA once per round), team strategy, 128 generations a run;
# every wgfuse variant checked once (--check: every strategy against the others and the CPU
# reference). Variants (GPU_REQUEST.md of the simgap branch says what each tests):
#   <w>              the built-in file (kernels/sim_<w>.wgsl)
#   <w>_tree         the built-in with "policy": "mlp_tree" (kernels/sim_mlp_tree.wgsl)
#   <w>_norobust     the built-in with Dawn's robustness off (--unsafe-no-robustness; diagnostic)
#   and the files of bench/baselines/sim_variants/ (their name: WORKLOAD_WHAT.wgsl), each also
#   with the tree policy (<file>_tree).
# Writes $OUT/summary.md (medians, min-max, CUDA/wgfuse ratios of evaluation time and of
# generations per second) and the raw JSON and logs beside it.
#
#   OUT=/some/dir bench/baselines/sim_variants.sh        (from the repository root)
#   ADAPTER=cpu SIM_SIZES="--pop 64 --steps 40" GENS=2 ROUNDS=1 NO_CUDA=1: a dry run on SwiftShader.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
mkdir -p "$OUT/files"
ROUNDS=${ROUNDS:-5}
GENS=${GENS:-128}
PY=${PY:-python3}
ADAPTER=${ADAPTER:-gpu}
. bench/baselines/tools.sh
LOG=$OUT/sim_variants.log
: >"$LOG"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$LOG"; }
run() {
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
  log "$name: exit $?"
}
read -ra SIZES <<<"${SIM_SIZES:-}"
SIM=("$WGFUSE" --adapter "$ADAPTER" sim "${SIZES[@]}")
log "wgfuse $WGFUSE, git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true

WORKLOADS="cartpole mountaincar acrobot"
# variant name -> "target [extra flags]"
declare -A TARGET
declare -a VARIANTS
add() { VARIANTS+=("$1"); TARGET[$1]=$2; }
tree() { sed 's/"policy": "mlp"/"policy": "mlp_tree"/' "$1" >"$2"; }
for w in $WORKLOADS; do
  add "$w" "$w"
  tree "kernels/sim_$w.wgsl" "$OUT/files/${w}_tree.wgsl"
  add "${w}_tree" "$OUT/files/${w}_tree.wgsl"
  [[ $w != acrobot ]] && add "${w}_norobust" "$w --unsafe-no-robustness"
  for f in bench/baselines/sim_variants/"$w"_*.wgsl; do
    [[ -f $f ]] || continue
    v=$(basename "$f" .wgsl)
    cp "$f" "$OUT/files/$v.wgsl"
    add "$v" "$OUT/files/$v.wgsl"
    tree "$f" "$OUT/files/${v}_tree.wgsl"
    add "${v}_tree" "$OUT/files/${v}_tree.wgsl"
  done
done
printf '%s\n' "${VARIANTS[@]}" >"$OUT/variants.txt"

if [[ -z ${NO_CUDA:-} ]]; then
  run cuda_build 120 "$NVCC" -O3 -arch=sm_90 -Xptxas -v -o "$OUT/sim_cuda" bench/baselines/sim_cuda.cu
fi

log "=== checks (every strategy, the CPU reference)"
for v in "${VARIANTS[@]}"; do
  read -ra T <<<"${TARGET[$v]}"
  run "check_$v" 120 "${SIM[@]}" "${T[@]}" --mode team --check --generations 2 --quiet --json "$OUT/check_$v.json"
done
if [[ -x $OUT/sim_cuda ]]; then
  for w in $WORKLOADS; do
    run "cuda_check_$w" 60 "$OUT/sim_cuda" "$w" --variant team --math fast --generations 2 --check "$OUT/check_$w.json"
  done
fi

log "=== $ROUNDS interleaved rounds"
for r in $(seq 1 "$ROUNDS"); do
  for w in $WORKLOADS; do
    if [[ -x $OUT/sim_cuda ]]; then
      run "cuda_${w}_r$r" 60 "$OUT/sim_cuda" "$w" --variant team --math fast --generations "$GENS" \
        --json "$OUT/cuda_${w}_r$r.json"
    fi
    for v in "${VARIANTS[@]}"; do
      [[ $v == "$w" || $v == "${w}_"* ]] || continue
      read -ra T <<<"${TARGET[$v]}"
      run "wg_${v}_r$r" 60 "${SIM[@]}" "${T[@]}" --mode team --generations "$GENS" --quiet --json "$OUT/wg_${v}_r$r.json"
    done
  done
done
run spirv_cartpole 60 "${SIM[@]}" cartpole --mode team --generations 1 --dump-shaders --quiet
run spirv_mountaincar 60 "${SIM[@]}" mountaincar --mode team --generations 1 --dump-shaders --quiet

log "=== summary"
"$PY" - "$OUT" "$ROUNDS" >"$OUT/summary.md" 2>>"$LOG" <<'EOF'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
variants = open(os.path.join(out, "variants.txt")).read().split()
def load(name):
    p = os.path.join(out, name)
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None
def val(x):
    return x.get("median") if isinstance(x, dict) else x
def stats(xs):
    xs = [x for x in xs if x is not None]
    return (statistics.median(xs), min(xs), max(xs)) if xs else None
def cell(s, d=4):
    return "-" if s is None else f"{s[0]:.{d}g} [{s[1]:.{d}g}–{s[2]:.{d}g}]"
print(f"Team strategy, {rounds} interleaved rounds; medians [min–max] over the rounds of each run's median.\n")
print("| variant | check | GA trajectory = built-in's | eval ms | gen/s | GA ms | between ms | CUDA/wgfuse eval | CUDA/wgfuse gen/s |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for w in ["cartpole", "mountaincar", "acrobot"]:
    cu = [load(f"cuda_{w}_r{r}.json") for r in range(1, rounds + 1)]
    cu = [j["points"][0] for j in cu if j and j.get("points")]
    c_eval = stats([p["eval_ms"]["median"] for p in cu])
    c_gps = stats([p["gen_per_s"]["median"] for p in cu])
    c_ga = stats([p["ga_ms"]["median"] for p in cu])
    c_bw = stats([p["between_generations_ms"]["median"] for p in cu])
    print(f"| **CUDA {w}** (team4, fast math) | - | - | {cell(c_eval)} | {cell(c_gps)} | {cell(c_ga)} | {cell(c_bw)} | | |")
    base = [load(f"wg_{w}_r{r}.json") for r in range(1, rounds + 1)]
    base_traj = [j["modes"]["team"]["mean_fitness"] for j in base if j]
    for v in variants:
        if v != w and not v.startswith(w + "_"):
            continue
        runs = [j for r in range(1, rounds + 1) if (j := load(f"wg_{v}_r{r}.json")) and "team" in j["modes"]]
        ch = load(f"check_{v}.json")
        if ch and "check" in ch:
            c = ch["check"]
            bit = all(c.get(k, {}).get("bitwise") for k in ("team_vs_perstep", "fused_vs_perstep"))
            check = ("pass" if c.get("pass") else "FAIL") + (", bitwise" if bit else "")
        else:
            check = "no check"
        if not runs:
            print(f"| {v} | {check} | no run |"); continue
        t = [j["modes"]["team"] for j in runs]
        traj = [m["mean_fitness"] for m in t]
        same = "-" if v == w else ("yes" if base_traj and all(x == base_traj[0] for x in traj) else "NO")
        e = stats([val(m["gpu_evaluation_ms"]) for m in t])
        g = stats([val(m["gen_per_s"]) for m in t])
        ga = stats([val(m.get("gpu_ga_ms")) for m in t])
        bw = stats([val(m.get("gpu_between_generations_ms")) for m in t])
        re = f"{e[0] / c_eval[0]:.3f}" if e and c_eval else "-"
        rg = f"{c_gps[0] / g[0]:.3f}" if g and c_gps else "-"
        print(f"| {v} | {check} | {same} | {cell(e)} | {cell(g)} | {cell(ga)} | {cell(bw)} | {re} | {rg} |")
print("\nCUDA/wgfuse eval = wgfuse evaluation ms / CUDA's; CUDA/wgfuse gen/s = CUDA gen/s / wgfuse's (both > 1: wgfuse slower).")
print("GA trajectory: the team run's mean fitness per generation equal to the built-in's in every round (same dynamics, same GA);"
      " the _tree variants sum the logits in another order, so theirs may differ by rounding.")
EOF
log "done: $OUT/summary.md"
