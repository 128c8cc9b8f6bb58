// Runs the browser suites (web/suites/*.js) in headless Chromium with WebGPU (SwiftShader here)
// and returns their results: a loopback static server for web/ and the expanded kernels
// (build/generated/kernels, the text the native binary embeds, with /kernels/index.json as the
// contract defines it), POST /api/sim/workload answered by the native loader (`wgfuse sim FILE
// --dump-web`, what `wgfuse serve` answers), and the Chrome DevTools Protocol over node's
// WebSocket to drive the page.
import {execFile, spawn} from 'node:child_process';
import {createHash} from 'node:crypto';
import {existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {createServer} from 'node:http';
import {tmpdir} from 'node:os';
import {extname, join, normalize, resolve as absolutePath, sep} from 'node:path';

const TYPES = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.json': 'application/json',
  '.wgsl': 'text/plain'
};

// { version, kernels: [{name, sha256, bytes}] } over every expanded family, in name order.
export function kernelIndex(kernelDir) {
  const names = readdirSync(kernelDir).filter((f) => f.endsWith('.wgsl')).map((f) => f.slice(0, -5)).sort();
  const kernels = names.map((name) => {
    const text = readFileSync(join(kernelDir, `${name}.wgsl`));
    return {name, sha256: createHash('sha256').update(text).digest('hex'), bytes: text.length};
  });
  const all = kernels.map((k) => `${k.name}\n${k.sha256}\n`).join('');
  return {version: createHash('sha256').update(all).digest('hex').slice(0, 16), kernels};
}

// The page that runs the suites: a device with the optional features the suites use, and the
// kernels context of web/app/suite.js (get(name) -> WGSL text, version).
const RUNNER = `<!doctype html><meta charset="utf-8"><script type="module">
window.runSuites = async (modules, quick, repeats) => {
  if (!navigator.gpu) throw new Error('navigator.gpu is missing: WebGPU is not enabled');
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error('no WebGPU adapter');
  const requiredFeatures = ['timestamp-query', 'subgroups'].filter((f) => adapter.features.has(f));
  const device = await adapter.requestDevice({ requiredFeatures });
  const errors = [];
  device.addEventListener('uncapturederror', (e) => errors.push(e.error.message));
  const index = await (await fetch('/kernels/index.json')).json();
  const cache = new Map();
  const kernels = {
    version: index.version,
    async get(name) {
      if (!cache.has(name)) {
        const r = await fetch('/kernels/' + name + '.wgsl');
        if (!r.ok) throw new Error('kernel ' + name + ': HTTP ' + r.status);
        cache.set(name, await r.text());
      }
      return cache.get(name);
    },
  };
  const info = adapter.info;
  // The page's progress(fraction in [0, 1], label) (web/app/suite.js): a call breaking it is an error.
  const progress = (fraction, label) => {
    if (!(fraction >= 0 && fraction <= 1) || typeof label !== 'string')
      errors.push('progress(' + fraction + ', ' + label + ') does not match progress(fraction, label)');
  };
  const out = { adapter: { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description, subgroupMinSize: info.subgroupMinSize }, features: [...device.features], results: [], outputs: { sim: {}, tiny: {} } };
  for (const path of modules) {
    const m = await import(path);
    for (const suite of m.suites ?? [m.suite]) {
      out.results.push(...await suite.run({ device, kernels, quick, progress, repeats, outputs: out.outputs }));
    }
  }
  await device.queue.onSubmittedWorkDone();
  out.errors = errors;
  return out;
};
window.runnerReady = true;
</script>`;

// POST /api/sim/workload?name=FILE.wgsl with the file's text: the native binary's expansion.
function expandWorkload(wgfuse, req, send) {
  const name = new URL(req.url, 'http://x').searchParams.get('name') ?? 'workload.wgsl';
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,58}\.wgsl$/.test(name)) return send(400, 'application/json', '{}');
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wgfuse-workload-'));
    writeFileSync(join(dir, name), Buffer.concat(chunks));
    execFile(absolutePath(wgfuse), ['sim', name, '--dump-web'], {cwd: dir, maxBuffer: 1 << 24}, (err, stdout, stderr) => {
      rmSync(dir, {recursive: true, force: true});
      if (err) send(422, 'application/json', JSON.stringify({error: stderr.trim() || err.message}));
      else send(200, 'application/json', stdout);
    });
  });
}

function serve(webRoot, kernelDir, wgfuse) {
  const index = JSON.stringify(kernelIndex(kernelDir));
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const send = (status, type, body) => {
      res.writeHead(status, {'Content-Type': `${type}; charset=utf-8`, 'Cache-Control': 'no-cache'});
      res.end(body);
    };
    if (path === '/__runner.html') return send(200, 'text/html', RUNNER);
    if (path === '/kernels/index.json') return send(200, 'application/json', index);
    if (req.method === 'POST' && path === '/api/sim/workload') return expandWorkload(wgfuse, req, send);
    const file =
        path.startsWith('/kernels/') ? join(kernelDir, path.slice(9)) : join(webRoot, normalize(path));
    const root = path.startsWith('/kernels/') ? kernelDir : webRoot;
    if (!file.startsWith(root + sep) || !existsSync(file)) return send(404, 'text/plain', 'not found');
    send(200, TYPES[extname(file)] ?? 'application/octet-stream', readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

class Cdp {
  constructor(url) {
    this.ws = new WebSocket(url);
    this.next = 1;
    this.pending = new Map();
    this.ws.onmessage = (e) => {
      const msg = JSON.parse(e.data);
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error)
        p.reject(new Error(`${msg.error.message}`));
      else
        p.resolve(msg.result);
    };
    this.opened = new Promise((resolve, reject) => {
      this.ws.onopen = resolve;
      this.ws.onerror = () => reject(new Error(`cannot connect to ${url}`));
    });
  }

  send(method, params = {}) {
    const id = this.next++;
    this.ws.send(JSON.stringify({id, method, params}));
    return new Promise((resolve, reject) => this.pending.set(id, {resolve, reject}));
  }

  async evaluate(expression) {
    const r = await this.send('Runtime.evaluate', {expression, awaitPromise: true, returnByValue: true});
    if (r.exceptionDetails)
      throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value;
  }
}

async function waitFor(what, poll, timeoutMs) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await poll().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Runs `modules` (paths under the web root, e.g. '/suites/sim.js') in quick mode; returns
// { adapter, features, results, errors }.
export async function runInBrowser({
  wgfuse,
  webRoot,
  kernelDir,
  modules,
  quick = true,
  repeats = null,
  chromium = '/usr/bin/chromium',
  timeoutMs = 600_000
}) {
  const server = await serve(webRoot, kernelDir, wgfuse);
  const profile = mkdtempSync(join(tmpdir(), 'wgfuse-chromium-'));
  const browser = spawn(
      chromium,
      [
        '--headless=new',
        '--no-sandbox',
        '--enable-unsafe-webgpu',
        '--enable-features=Vulkan',
        '--use-vulkan=swiftshader',
        '--use-webgpu-adapter=swiftshader',
        '--disable-gpu-sandbox',
        '--remote-debugging-port=0',
        `--user-data-dir=${profile}`,
        'about:blank',
      ],
      // Its own process group: Chromium's helper processes (GPU, crashpad) go with it.
      {stdio: ['ignore', 'ignore', 'pipe'], detached: true});
  let stderr = '';
  browser.stderr.on('data', (d) => {
    stderr += d;
  });
  try {
    const port = await waitFor('Chromium to listen for DevTools', async () => {
      const m = stderr.match(/DevTools listening on ws:\/\/[^:]+:(\d+)\//);
      return m && m[1];
    }, 30_000);
    const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
    const page = targets.find((t) => t.type === 'page');
    const cdp = new Cdp(page.webSocketDebuggerUrl);
    await cdp.opened;
    await cdp.send('Runtime.enable');
    await cdp.send('Page.navigate', {url: `http://127.0.0.1:${server.address().port}/__runner.html`});
    await waitFor('the runner page', () => cdp.evaluate('window.runnerReady === true'), 30_000);
    const run =
        cdp.evaluate(`window.runSuites(${JSON.stringify(modules)}, ${quick}, ${repeats ?? 'undefined'})`);
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('the suites timed out')), timeoutMs);
    });
    const out = await Promise.race([run, timeout]).finally(() => clearTimeout(timer));
    cdp.ws.close();
    return out;
  } catch (e) {
    e.message += `\nChromium's stderr (tail):\n${stderr.slice(-2000)}`;
    throw e;
  } finally {
    // The profile can go once Chromium and its helpers have exited (they write there until then).
    const exited =
        new Promise((resolve) => browser.exitCode !== null ? resolve() : browser.once('exit', resolve));
    const killGroup = (signal) => {
      try {
        process.kill(-browser.pid, signal);
      } catch {
        // the group is gone
      }
    };
    killGroup('SIGTERM');
    server.close();
    let grace;
    await Promise.race([
      exited, new Promise((resolve) => {
        grace = setTimeout(resolve, 10_000);
      })
    ]);
    clearTimeout(grace);
    killGroup('SIGKILL');
    // Removing the profile is cleanup, not part of the result: a helper that still writes there
    // leaves it behind with a warning rather than failing a run whose results are in.
    try {
      rmSync(profile, {recursive: true, force: true, maxRetries: 10, retryDelay: 500});
    } catch (e) {
      console.error(`browser: could not remove Chromium's profile ${profile}: ${e.message}`);
    }
  }
}
