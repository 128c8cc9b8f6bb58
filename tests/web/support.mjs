// What the browser tests under tests/web share: `wgfuse serve` on a free port with a temporary
// database, and playwright pages that collect their errors and report the page's state
// (document.body.dataset.state).
import {spawn} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {freePort} from './free_port.mjs';

// Starts `WGFUSE serve` with `serveArgs` on a free loopback port and a temporary database; resolves
// once it answers /kernels/index.json (within `timeoutMs`: a --model loads first). `step` logs what
// happens.
export async function startServer(wgfuse, serveArgs = [], step = () => {}, timeoutMs = 30_000) {
  const port = await freePort();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wgfuse-e2e-'));
  const args = [
    'serve', '--host', '127.0.0.1', '--port', String(port), '--db', path.join(tmp, 'results.sqlite'),
    ...serveArgs
  ];
  step(`starting ${wgfuse} ${args.join(' ')}`);
  const child = spawn(wgfuse, args, {stdio: ['ignore', 'inherit', 'inherit']});
  let exited = null;
  child.on('exit', (code, signal) => {
    exited = {code, signal};
  });
  const base = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline;) {
    if (exited)
      throw new Error(`wgfuse serve exited before answering (code ${exited.code}, signal ${exited.signal})`);
    const ok = await fetch(`${base}/kernels/index.json`).then((r) => r.ok, () => false);
    if (ok) return {base, child, tmp, exitStatus: () => exited};
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`wgfuse serve did not answer ${base}/kernels/index.json within ${timeoutMs / 1000} s`);
}

export async function stopServer(server) {
  if (!server.exitStatus()) {
    const done = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.kill('SIGTERM');
    await Promise.race([done, new Promise((r) => setTimeout(r, 10_000))]);
    if (!server.exitStatus()) server.child.kill('SIGKILL');
  }
  fs.rmSync(server.tmp, {recursive: true, force: true});
}

export async function newPage(browser, errors) {
  const page = await browser.newPage({viewport: {width: 1280, height: 900}});
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on(
      'console',
      (m) => m.type() === 'error' && !/Failed to load resource/.test(m.text()) &&
          errors.push(`console: ${m.text()}`));
  return page;
}

export const state = (page) => page.evaluate(() => document.body.dataset.state);

export async function waitForState(page, wanted, timeout) {
  await page.waitForFunction((w) => w.includes(document.body.dataset.state), wanted, {timeout})
      .catch(async () => {
        throw new Error(
            `page state is "${await state(page)}", not one of ${wanted.join(', ')}, after ${timeout} ms`);
      });
  return state(page);
}
