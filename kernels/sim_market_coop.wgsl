// The cooperative strategy of Market (docs/SIMULATIONS.md, "Cooperative fused strategy"): the
// whole episode in one dispatch like sim_fused_main, but a team of COOP_LANES invocations per
// individual instead of one. Included at the bottom of kernels/sim_market.wgsl, after
// sim_entries.wgsl (SimSpec::coop_family names it); it defines no dynamics of its own: it calls
// the pieces of kernels/sim_market.wgsl (market_observe, market_unit / market_hidden,
// market_readout / market_output, market_trade) and sim_init / sim_fitness, exactly as sim_step does.
//
//   lane l of a team holds, in registers for the whole episode, the weights of hidden units
//   l + u * COOP_LANES (u < COOP_UNITS) and of outputs l + q * COOP_LANES (< 6): loaded once
//   per episode, not once per step;
//   step t: every lane computes its hidden units from the observation and the previous h
//   (workgroup memory, double-buffered), barrier; the lanes compute the 6 outputs from the new
//   h, barrier; every lane then runs market_trade on the 6 outputs (the same arithmetic in every
//   lane of the team, so each holds the same portfolio state and fed-back outputs).
// Two barriers per step. The teams of the last workgroup past the population compute a copy of
// the last individual (they must reach the barriers: uniform control flow) and write nothing.
//
// Why 4 lanes of 4 hidden units each rather than 16 of one: the trade (6 tanh, 22 data loads)
// runs in every lane, and a warp pays for it once per instruction whatever the number of
// individuals in it, so its cost per individual falls with the lanes per individual; 4 units
// per lane give 8 independent FMA chains per step, enough to cover the latency. At 10,000
// individuals that is 40,000 invocations, one wave on an H100 at up to ~200 registers each
// (~134 of them weights). Any COOP_LANES dividing 16 and COOP_WG is correct (tested with 2, 4,
// 8, 16).
// Mirrored in C++ by SimSpec::coop_per_workgroup (= COOP_TEAMS).
// #include "sim_entries.wgsl"

const COOP_LANES: u32 = 4u;                                  // invocations per individual
const COOP_UNITS: u32 = 16u / COOP_LANES;                    // hidden units per lane
const COOP_OUTS: u32 = (6u + COOP_LANES - 1u) / COOP_LANES;  // outputs per lane, at most
const COOP_WG: u32 = 32u;
const COOP_TEAMS: u32 = COOP_WG / COOP_LANES;                // individuals per workgroup

// h as 4 vec4s per row: read with 16-byte loads (a row of 16 scalars read by the 8 teams of a
// warp would put 4 teams on each bank).
var<workgroup> coop_h: array<array<vec4<f32>, 4>, 2u * COOP_TEAMS>;  // [buffer * COOP_TEAMS + team]
var<workgroup> coop_out: array<array<f32, 6>, COOP_TEAMS>;

fn coop_load_h(row: u32) -> array<f32, 16> {
  var h: array<f32, 16>;
  for (var q = 0u; q < 4u; q++) {
    let v = coop_h[row][q];
    h[4u * q] = v.x;
    h[4u * q + 1u] = v.y;
    h[4u * q + 2u] = v.z;
    h[4u * q + 3u] = v.w;
  }
  return h;
}

@compute @workgroup_size(COOP_WG)
fn sim_coop_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  if (params.pop == 0u) {
    use_all_bindings();  // never executed: the bind-group layout of the other entry points
  }
  let team = li / COOP_LANES;
  let lane = li % COOP_LANES;
  let ind = wg.x * COOP_TEAMS + team;
  let src = min(ind, params.pop - 1u);

  var units: array<MarketUnit, COOP_UNITS>;
  for (var u = 0u; u < COOP_UNITS; u++) {
    units[u] = market_unit(src, lane + u * COOP_LANES);
  }
  var reads: array<MarketReadout, COOP_OUTS>;
  for (var q = 0u; q < COOP_OUTS; q++) {
    reads[q] = market_readout(src, min(lane + q * COOP_LANES, 5u));
  }

  var total = 0.0;
  for (var e = 0u; e < params.episodes; e++) {
    var s = sim_init(src, e);
    workgroupBarrier();  // the previous episode's last reads of coop_h are done
    for (var u = 0u; u < COOP_UNITS; u++) {
      let j = lane + u * COOP_LANES;
      coop_h[team][j / 4u][j % 4u] = s.h[j];
    }
    workgroupBarrier();
    var cur = 0u;
    for (var t = 0u; t < params.steps; t++) {
      let x = market_observe(t, s);
      let h = coop_load_h(cur * COOP_TEAMS + team);
      let nxt = 1u - cur;
      var hn: array<f32, COOP_UNITS>;
      for (var u = 0u; u < COOP_UNITS; u++) {
        hn[u] = market_hidden(units[u], x, h);
      }
      for (var u = 0u; u < COOP_UNITS; u++) {
        let j = lane + u * COOP_LANES;
        coop_h[nxt * COOP_TEAMS + team][j / 4u][j % 4u] = hn[u];
      }
      workgroupBarrier();
      let hall = coop_load_h(nxt * COOP_TEAMS + team);
      for (var q = 0u; q < COOP_OUTS; q++) {
        let o = lane + q * COOP_LANES;
        if (o < 6u) {
          coop_out[team][o] = market_output(reads[q], hall);
        }
      }
      workgroupBarrier();
      market_trade(t, &s, coop_out[team]);
      cur = nxt;
    }
    total = total + sim_fitness(s);
  }
  if (ind < params.pop && lane == 0u) {
    fitness[ind] = total / f32(params.episodes);
  }
}
