// The submission of a run to the results server: POST /api/results (docs/WEB_API.md).
import {describeAdapter, describeClient} from './adapter.js';
import {el, fill} from './format.js';

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

// "suite name, …" of result rows ({result, problems}).
export function failedNames(rows) { return rows.map((r) => `${r.result.suite} ${r.result.name}`).join(', '); }

// Submits the rows ({result, problems}) of a run on `adapter` that passed their checks (the server
// accepts only those) and tells the outcome in the element `status`, naming those left out and
// linking the results page; `button` is enabled again where the server refused.
export async function submitPassedRows({adapter, rows, status, button}) {
  button.disabled = true;
  status.textContent = 'Submitting…';
  const failed = rows.filter((r) => r.problems.length);
  const submission = buildSubmission({
    adapter: describeAdapter(adapter),
    client: await describeClient(),
    results: rows.filter((r) => !r.problems.length).map((r) => r.result)
  });
  const outcome = await submitResults(submission);
  if (outcome.ok) {
    const flagged = outcome.flagged ? ` ${outcome.flagged} flagged as implausible by the server.` : '';
    const left = failed.length ? ` Not submitted (failed their checks): ${failedNames(failed)}.` : '';
    fill(
        status, `Submitted: id ${outcome.id}, ${outcome.accepted} results accepted.${flagged}${left} `,
        el('a', {href: `/results?submission=${outcome.id}`}, 'See them on the results page.'));
    status.dataset.submissionId = outcome.id;
  } else {
    status.textContent = `Not accepted: ${outcome.reason}`;
    button.disabled = false;
  }
}
