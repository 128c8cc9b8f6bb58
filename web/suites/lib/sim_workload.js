// Workload files in the browser (docs/SIMULATIONS.md, "Workload files"): the JSON header of a
// workload's file and the WGSL module of each strategy, composed as the native loader and
// fuse::generated_source compose them (src/sim/workloads.cpp, src/fuse/sim_program.cpp): the
// strategy's prefix (sim_solo, or sim_team for the team strategy), sim_common, the policy library
// the header names, the file's text, sim_entries, each on lines of its own.

const HEADER_MARK = '///';
// src/sim/workloads.cpp policies(): the embedded family a header's "policy" adds.
const POLICIES = {mlp: 'sim_mlp'};

// The header of a workload file's `text`: its leading `///` lines, the marks cut off, as JSON.
export function parseHeader(text, origin) {
  let body = '';
  let any = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith(HEADER_MARK)) {
      body += line.slice(HEADER_MARK.length) + '\n';
      any = true;
    } else if (!line.startsWith('//')) {
      break;
    }
  }
  if (!any) throw new Error(`${origin}: no header: a workload file begins with a JSON object in /// lines`);
  try {
    return JSON.parse(body);
  } catch (e) {
    throw new Error(`${origin}: the header (its /// lines) is not valid JSON: ${e.message}`);
  }
}

// The workload of embedded family `family` ('sim_cartpole').
export async function loadWorkload(kernels, family) {
  return {...await workloadFromText(kernels, await kernels.get(family), `kernels/${family}.wgsl`), family};
}

// The workload of a file's `text` (named `origin` in messages): what the suite needs of its header,
// and module(team) composing the module of the one-invocation strategies (team false) or of the
// team strategy.
export async function workloadFromText(kernels, text, origin) {
  const h = parseHeader(text, origin);
  const policy = h.policy === undefined ? null : POLICIES[h.policy];
  if (policy === undefined) throw new Error(`${origin}: header field "policy": no policy "${h.policy}"`);
  const parts = {};
  for (const name of ['sim_solo', 'sim_team', 'sim_common', 'sim_entries', ...(policy ? [policy] : [])])
    parts[name] = await kernels.get(name);
  const line = (s) => (s.endsWith('\n') ? s : s + '\n');
  const module = (team) => line(parts[team ? 'sim_team' : 'sim_solo']) + line(parts.sim_common) +
      (policy ? line(parts[policy]) : '') + line(text) + parts.sim_entries;
  const length = h.genome?.length;
  return {
    name: h.name,
    stateBytes: h.state_bytes,
    maxTeam: h.team?.max ?? 16,
    // 0: the genome length is the step count
    genomeLen: length === 'steps' ? 0 : length,
    scale: h.genome?.init_scale ?? 1,
    data: h.data ?? null,
    // the tolerance against the CPU double reference (native: reference_atol, reference_rtol)
    reference: {atol: h.reference?.atol ?? 0, rtol: h.reference?.rtol ?? 0},
    module,
  };
}
