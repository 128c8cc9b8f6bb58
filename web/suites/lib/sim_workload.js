// Workload files in the browser (docs/SIMULATIONS.md, "Workload files"). The page does not parse a
// file's header or compose its modules itself: the server does, with the native loader
// (POST /api/sim/workload, sim::web_workload), so that the browser runs the very module native
// `wgfuse sim FILE` runs and is told the same errors. The built-ins go the same way, from the text
// of their embedded files.

// The largest file the server takes (serve::ServerOptions::max_workload_bytes).
export const MAX_WORKLOAD_BYTES = 64 * 1024;

// Thrown when the server refuses a file: `message` is its reason, which names the file's line or
// header field where it can.
export class WorkloadError extends Error {
  name = 'WorkloadError';
}

// The workload of a file's `text`, called `fileName` in messages ('pendulum.wgsl'), as the server
// expands it: what the suite needs of its header, module(team) the module of the one-invocation
// strategies (team false) or of the team strategy, and locate(team, message) a compiler message
// with the lines of that module told as lines of the file where they lie there
// (fuse::locate_wgsl_error).
export async function expandWorkload(text, fileName, url = '/api/sim/workload') {
  let response;
  try {
    response = await fetch(
        `${url}?name=${encodeURIComponent(fileName)}`,
        {method: 'POST', headers: {'Content-Type': 'text/plain'}, body: text});
  } catch (e) {
    throw new WorkloadError(`${url} could not be reached (${e.message}); is wgfuse serve running?`);
  }
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const retry =
        response.status === 429 ? ` (retry after ${response.headers.get('Retry-After') ?? '?'} s)` : '';
    throw new WorkloadError(`${body?.error ?? `${response.status} ${response.statusText}`}${retry}`);
  }
  return fromExpansion(body, text);
}

// The workload of embedded family `family` ('sim_cartpole'), expanded like a visitor's file.
export async function loadWorkload(kernels, family) {
  return {...await expandWorkload(await kernels.get(family), `${family}.wgsl`), family};
}

// The suite's view of the server's JSON `e` for the file `text`.
export function fromExpansion(e, text) {
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  const mod = (team) => e.modules[team ? 'team' : 'solo'];
  return {
    name: e.name,
    summary: e.summary,
    origin: e.origin,
    slotBytes: e.slot_bytes,
    workgroup: e.workgroup,
    teamWorkgroup: e.team_workgroup,
    maxTeam: e.max_team,
    teamSplitsSteps: e.team_splits_steps,
    overrides: e.overrides,
    defaults: e.defaults,
    // 0: the genome length is the step count
    genomeLen: e.genome_len,
    scale: e.init_scale,
    data: e.data,
    // the tolerance against the CPU double reference (native: reference_atol, reference_rtol)
    reference: e.reference,
    module: (team) => mod(team).source,
    // The WGSL compiler's messages place an error at ":LINE:COLUMN" of the module.
    locate: (team, message) => message.replace(
        /(^|\s):(\d+):(\d+)(?=\s)/g,
        (_, space, l, c) => {
          const n = Number(l), first = mod(team).first_line;
          return n >= first && n < first + lines ?
              `${space}${e.origin}:${n - first + 1}:${c}` :
              `${space}line ${n}, column ${c} of wgfuse's part of the ${team ? 'team ' : ''}module`;
        }),
  };
}
