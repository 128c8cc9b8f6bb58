#!/usr/bin/env bash
# Issue 27's open measurements in one GPU call (about 3 minutes on an H100), into $OUT:
#   1. CartPole / MountainCar / Acrobot: the built-in MLP policy (kernels/sim_mlp.wgsl: a team
#      broadcasts all 16 activations, every lane sums every logit) against the same workload file
#      with "policy": "mlp_tree" (kernels/sim_mlp_tree.wgsl: each lane sums its own units, the team
#      adds the lanes' sums by butterfly shuffles, as bench/baselines/sim_cuda.cu's teams do), in
#      alternating rounds, every strategy checked (--check); then teams of 2, 8 and 16 of both
#      (the tree's branches for 8 and 16 lanes run only where subgroups are 32 wide);
#   2. diagnostics of CartPole's step: its three divisions by constants as products, its step
#      without branches, Dawn's robustness off, 16 generations per submit, the SPIR-V of both team
#      modules;
#   3. the CUDA baseline (sim_cuda.cu) in the same call, checked against wgfuse's reference sample;
#   4. the JAX, PyTorch and CUDA baselines of examples/sim/pendulum.wgsl and option_pricer.wgsl
#      (checked against wgfuse's sample, the option pricer also against Black-Scholes);
#   5. Rastrigin batched, file against built-in, 5 alternating rounds (session 7: 0.872).
# Then $OUT/summary.md: medians per workload and policy, against CUDA.
#
#   OUT=/some/dir bench/baselines/sim_gap.sh          (from the repository root)
#
# Needs what bench/baselines/run_sim.sh needs (wgfuse, nvcc, python3 with torch, jax, numpy).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
mkdir -p "$OUT/files"
ROUNDS=${ROUNDS:-3}
# Generations a timed run: 32 (run_sim.sh's) are 4 command buffers of 8, too few for a stable
# median at ~0.1 ms a generation.
GENS=${GENS:-128}
PY=${PY:-python3}
. bench/baselines/tools.sh
LOG=$OUT/sim_gap.log
: >"$LOG"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$LOG"; }
# run NAME LIMIT CMD...: stdout and stderr to $OUT/NAME.txt, exit status in the log.
run() {
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
  log "$name: exit $?"
}
# ADAPTER=cpu SIM_SIZES="--pop 64 --steps 40" GENS=4 ROUNDS=1: a dry run of the script on SwiftShader.
ADAPTER=${ADAPTER:-gpu}
read -ra SIZES <<<"${SIM_SIZES:-}"
SIM=("$WGFUSE" --adapter "$ADAPTER" sim "${SIZES[@]}")  # `timeout` runs commands, not shell functions
log "wgfuse $WGFUSE, git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true

MLP="cartpole mountaincar acrobot"
for w in $MLP; do
  sed 's/"policy": "mlp"/"policy": "mlp_tree"/' "kernels/sim_$w.wgsl" >"$OUT/files/${w}_tree.wgsl"
done
sed 's#/ total_mass#* (1.0 / total_mass)#g' "$OUT/files/cartpole_tree.wgsl" >"$OUT/files/cartpole_tree_recip.wgsl"
# CartPole without branches in its step: the dynamics computed for a finished episode too and
# kept only while it runs (select), the termination test with | in place of || (the same results).
"$PY" - "$OUT/files/cartpole_tree.wgsl" "$OUT/files/cartpole_tree_branchless.wgsl" <<'EOF_PY'
import re, sys
s = open(sys.argv[1]).read()
def sub(old, new):
    global s
    assert old in s, old
    s = s.replace(old, new)
sub("  if ((*s).done != 0u) {\n    return;\n  }\n", "  let live = (*s).done == 0u;\n")
for v, e in [("x", "(*s).x + tau * (*s).x_dot"), ("x_dot", "(*s).x_dot + tau * xacc"),
             ("theta", "(*s).theta + tau * (*s).theta_dot"), ("theta_dot", "(*s).theta_dot + tau * thetaacc"),
             ("ret", "(*s).ret + 1.0")]:
    sub(f"  (*s).{v} = {e};\n", f"  (*s).{v} = select((*s).{v}, {e}, live);\n")
sub("if ((*s).x < -2.4 || (*s).x > 2.4 || (*s).theta < -theta_limit || (*s).theta > theta_limit) {",
    "if (((*s).x < -2.4) | ((*s).x > 2.4) | ((*s).theta < -theta_limit) | ((*s).theta > theta_limit)) {")
open(sys.argv[2], "w").write(s)
EOF_PY
sed 's#/ total_mass#* (1.0 / total_mass)#g' kernels/sim_cartpole.wgsl >"$OUT/files/cartpole_recip.wgsl"

log "=== 1. broadcast (built-in) against tree (file), $ROUNDS rounds of team (checked) and fused"
for r in $(seq 1 "$ROUNDS"); do
  for w in $MLP; do
    for pol in mlp tree; do
      target=$w
      [[ $pol == tree ]] && target=$OUT/files/${w}_tree.wgsl
      run "wg_${w}_${pol}_r$r" 120 "${SIM[@]}" "$target" --mode team --check --generations "$GENS" --quiet \
        --json "$OUT/wg_${w}_${pol}_r$r.json"
      run "wg_${w}_${pol}_fused_r$r" 60 "${SIM[@]}" "$target" --mode fused --generations "$GENS" --quiet \
        --json "$OUT/wg_${w}_${pol}_fused_r$r.json"
    done
  done
done
for team in 2 8 16; do
  for w in $MLP; do
    run "wg_${w}_mlp_team$team" 60 "${SIM[@]}" "$w" --mode team --team "$team" --check --generations "$GENS" --quiet \
      --json "$OUT/wg_${w}_mlp_team$team.json"
    run "wg_${w}_tree_team$team" 60 "${SIM[@]}" "$OUT/files/${w}_tree.wgsl" --mode team --team "$team" --check \
      --generations "$GENS" --quiet --json "$OUT/wg_${w}_tree_team$team.json"
  done
done

log "=== 2. CartPole diagnostics"
for v in recip tree_recip tree_branchless; do
  run "wg_cartpole_$v" 60 "${SIM[@]}" "$OUT/files/cartpole_$v.wgsl" --mode all --check --generations "$GENS" --quiet \
    --json "$OUT/wg_cartpole_$v.json"
done
run wg_cartpole_mlp_norobust 60 "${SIM[@]}" cartpole --mode team --unsafe-no-robustness --generations "$GENS" --quiet \
  --json "$OUT/wg_cartpole_mlp_norobust.json"
run wg_cartpole_tree_norobust 60 "${SIM[@]}" "$OUT/files/cartpole_tree.wgsl" --mode team --unsafe-no-robustness \
  --generations "$GENS" --quiet --json "$OUT/wg_cartpole_tree_norobust.json"
for w in cartpole mountaincar; do
  run "wg_${w}_mlp_submit16" 60 "${SIM[@]}" "$w" --mode team --per-submit 16 --generations "$GENS" --quiet \
    --json "$OUT/wg_${w}_mlp_submit16.json"
done
run wg_mountaincar_mlp_gakernels 60 "${SIM[@]}" mountaincar --mode team --time-ga-kernels --generations "$GENS" --quiet \
  --json "$OUT/wg_mountaincar_mlp_gakernels.json"
run spirv_cartpole_mlp 60 "${SIM[@]}" cartpole --mode team --generations 1 --dump-shaders --quiet
run spirv_cartpole_tree 60 "${SIM[@]}" "$OUT/files/cartpole_tree.wgsl" --mode team --generations 1 --dump-shaders --quiet

log "=== 3. CUDA"
run cuda_build 120 "$NVCC" -O3 -arch=sm_90 -Xptxas -v -o "$OUT/sim_cuda" bench/baselines/sim_cuda.cu
if [[ -x $OUT/sim_cuda ]]; then
  for w in $MLP; do
    for v in team thread; do
      run "cuda_${w}_$v" 60 "$OUT/sim_cuda" "$w" --variant "$v" --math fast --generations "$GENS" \
        --check "$OUT/wg_${w}_mlp_r1.json" --json "$OUT/cuda_${w}_$v.json"
    done
  done
fi

log "=== 4. examples/sim: wgfuse, JAX, PyTorch"
for w in pendulum option_pricer; do
  run "wg_$w" 120 "${SIM[@]}" "examples/sim/$w.wgsl" --mode all --check --generations 32 --quiet --json "$OUT/wg_$w.json"
  run "jax_$w" 120 "$PY" bench/baselines/sim_jax.py "$w" --generations 5 --compare "$OUT/wg_$w.json" \
    --json "$OUT/jax_$w.json"
  run "torch_eager_$w" 120 "$PY" bench/baselines/sim_torch.py "$w" --mode eager --generations 3 \
    --compare "$OUT/wg_$w.json" --json "$OUT/torch_eager_$w.json"
  if [[ -x $OUT/sim_cuda ]]; then
    for m in fast accurate; do
      run "cuda_${w}_thread_$m" 60 "$OUT/sim_cuda" "$w" --variant thread --math "$m" --generations 32 \
        --check "$OUT/wg_$w.json" --json "$OUT/cuda_${w}_thread_$m.json"
    done
  fi
done

log "=== 5. Rastrigin batched, file against built-in"
run rastrigin_file_vs_builtin 150 "$PY" bench/baselines/sim_file_vs_builtin.py --wgfuse "$WGFUSE" --adapter "$ADAPTER" \
  --workloads rastrigin --mode batched --rounds 5 --json "$OUT/rastrigin_file_vs_builtin.json"

log "=== summary"
"$PY" - "$OUT" "$ROUNDS" >"$OUT/summary.md" 2>>"$LOG" <<'EOF'
import glob, json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(name):
    p = os.path.join(out, name)
    return json.load(open(p)) if os.path.exists(p) else None
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
def f(x, d=4):
    if isinstance(x, dict):  # {"median", "min", "max"}
        x = x.get("median")
    return "-" if x is None else f"{x:.{d}g}"
print("| workload | policy | fused gen/s | team gen/s | team eval ms | team GA ms | between ms | checks | CUDA team gen/s / eval ms | CUDA / wgfuse best |")
print("|---|---|---:|---:|---:|---:|---:|---|---|---:|")
for w in ["cartpole", "mountaincar", "acrobot"]:
    cuda = load(f"cuda_{w}_team.json")
    cp = cuda["points"][0] if cuda else None
    for pol in ["mlp", "tree"]:
        runs = [load(f"wg_{w}_{pol}_r{r}.json") for r in range(1, rounds + 1)]
        runs = [j for j in runs if j] + [j for r in range(1, rounds + 1) if (j := load(f"wg_{w}_{pol}_fused_r{r}.json"))]
        if not runs:
            print(f"| {w} | {pol} | no run |"); continue
        m = lambda mode, k: med([j["modes"][mode][k]["median"] if isinstance(j["modes"][mode][k], dict) else j["modes"][mode][k] for j in runs if mode in j["modes"] and k in j["modes"][mode]])
        fused, team = m("fused", "gen_per_s"), m("team", "gen_per_s")
        checked = [j for j in runs if "check" in j]
        checks = "pass" if checked and all(j["check"].get("pass") for j in checked) else "FAIL"
        bitwise = bool(checked) and all(j["check"]["team_vs_perstep"].get("bitwise") and j["check"]["fused_vs_perstep"].get("bitwise") for j in checked)
        ratio = cp["gen_per_s"]["median"] / max(fused, team) if cp else None
        print(f"| {w} | {pol} | {f(fused)} | {f(team)} | {f(m('team', 'gpu_evaluation_ms'))} | {f(m('team', 'gpu_ga_ms'))} | "
              f"{f(m('team', 'gpu_between_generations_ms'))} | {checks}{', bitwise' if bitwise else ''} | "
              f"{f(cp['gen_per_s']['median']) if cp else '-'} / {f(cp['eval_ms']['median']) if cp else '-'} | {f(ratio, 3)} |")
print()
print("Team sizes (team gen/s, eval ms, check):")
for w in ["cartpole", "mountaincar", "acrobot"]:
    for pol in ["mlp", "tree"]:
        cells = []
        for t in [2, 8, 16]:
            j = load(f"wg_{w}_{pol}_team{t}.json")
            if not j or "team" not in j["modes"]:
                cells.append(f"{t}: no run"); continue
            tm = j["modes"]["team"]
            cells.append(f"{t}: {f(tm['gen_per_s']['median'])} / {f(tm['gpu_evaluation_ms'])} ms / "
                         f"{'pass' if j.get('check', {}).get('pass') else 'FAIL'}"
                         f"{' bitwise' if j.get('check', {}).get('team_vs_perstep', {}).get('bitwise') else ''}")
        print(f"- {w} {pol}: " + "; ".join(cells))
print()
print("CartPole diagnostics (gen/s, eval ms):")
for name in ["cartpole_recip", "cartpole_tree_recip", "cartpole_tree_branchless", "cartpole_mlp_norobust", "cartpole_tree_norobust",
             "cartpole_mlp_submit16", "mountaincar_mlp_submit16"]:
    j = load(f"wg_{name}.json")
    if not j:
        print(f"- {name}: no run"); continue
    cells = [f"{mode} {f(v['gen_per_s']['median'])} / {f(v.get('gpu_evaluation_ms'))} ms"
             for mode, v in j["modes"].items() if mode in ("fused", "team")]
    print(f"- {name}: " + "; ".join(cells) + (f"; check {'pass' if j['check'].get('pass') else 'FAIL'}" if "check" in j else ""))
print()
print("CUDA thread (gen/s, eval ms):", ", ".join(
    f"{w} {f(j['points'][0]['gen_per_s']['median'])} / {f(j['points'][0]['eval_ms']['median'])}"
    for w in ["cartpole", "mountaincar", "acrobot"] if (j := load(f"cuda_{w}_thread.json"))))
print()
print("| example | wgfuse fused gen/s | wgfuse eval ms | wgfuse check | JAX gen/s | JAX sample | PyTorch eager gen/s | PyTorch sample | Black-Scholes (JAX / PyTorch) | CUDA thread fast gen/s / eval ms / check |")
print("|---|---:|---:|---|---:|---|---:|---|---|---|")
for w in ["pendulum", "option_pricer"]:
    wg = load(f"wg_{w}.json")
    row = [w]
    if wg:
        fz = wg["modes"].get("fused", {})
        row += [f(fz.get("gen_per_s", {}).get("median")), f(fz.get("gpu_evaluation_ms")),
                "pass" if wg.get("check", {}).get("pass") else "FAIL"]
    else:
        row += ["-", "-", "no run"]
    bs = []
    for fw in ["jax", "torch_eager"]:
        j = load(f"{fw}_{w}.json")
        p = j["points"][0] if j and j.get("points") else {}
        if "gen_per_s" not in p:
            row += ["failed" if p else "no run", "-"]; bs.append("-"); continue
        c = (p.get("comparison") or {})
        a = c.get("vs_wgfuse_at_horizon") or c.get("vs_wgfuse") or {}
        row += [f(p["gen_per_s"]["median"]), f"{a.get('agree', '-')}/{a.get('samples', '-')} at {c.get('horizon', '-')} steps"]
        b = p.get("black_scholes")
        bs.append(f"{b['monte_carlo']:.4f}±{b['standard_error']:.4f} vs {b['black_scholes']:.4f} {'ok' if b['pass'] else 'FAIL'}" if b else "-")
    row.append(" / ".join(bs))
    cu = load(f"cuda_{w}_thread_fast.json")
    cp = cu["points"][0] if cu and cu.get("points") else None
    row.append(f"{f(cp['gen_per_s']['median'])} / {f(cp['eval_ms']['median'])} / "
               f"{'pass' if (cu.get('check') or {}).get('pass') else 'FAIL'}" if cp else "no run")
    print("| " + " | ".join(row) + " |")
print()
r = load("rastrigin_file_vs_builtin.json")
if r:
    d = r["workloads"]["rastrigin"]
    print("Rastrigin batched rounds: built-in", [round(x["batched"], 1) for x in d["rounds"]["builtin"]],
          "file", [round(x["batched"], 1) for x in d["rounds"]["file"]], "ratio", round(d["modes"]["batched"]["ratio"], 3))
EOF
log "done: $OUT/summary.md"
