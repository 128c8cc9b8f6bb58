// The submission of a run to the results server: POST /api/results (docs/WEB_API.md,
// docs/WEB_API.md).

export const PAGE_VERSION = 'wgfuse-web 0.1.0';

export function buildSubmission({adapter, client, results}) {
  return {
    schema_version: 1,
    source: 'browser',
    client_version: PAGE_VERSION,
    adapter,
    browser: client.browser,
    os: client.os,
    results,
  };
}

// Resolves to {ok: true, id, accepted, flagged} or {ok: false, reason} with the server's reason.
export async function submitResults(submission, url = '/api/results') {
  let response;
  try {
    response = await fetch(
        url,
        {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(submission)});
  } catch (e) {
    return {ok: false, reason: `the server could not be reached (${e.message})`};
  }
  const body = await response.json().catch(() => null);
  if (response.status === 201 && body && body.id !== undefined)
    return {ok: true, id: body.id, accepted: body.accepted, flagged: body.flagged ?? 0};
  let reason = body?.error ?? `${response.status} ${response.statusText}`;
  if (response.status === 429) reason += ` (retry after ${response.headers.get('Retry-After') ?? '?'} s)`;
  return {ok: false, reason: `${response.status}: ${reason}`};
}
