// The kernel sources the native binary embeds, as the server publishes them: /kernels/index.json
// ({version, kernels: [{name, sha256, bytes}]}) and /kernels/<name>.wgsl. No WGSL lives in the
// page; every text fetched is checked against the index's sha256, so a result's kernel_version
// names exactly the code that ran.

// Of a string (its UTF-8) or bytes.
export async function sha256Hex(data) {
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

export async function fetchOk(url, what) {
  let response;
  try {
    response = await fetch(url, {cache: 'no-cache'});
  } catch (e) {
    throw new Error(`${what}: ${url} could not be fetched (${e.message}); is wgfuse serve running?`);
  }
  if (!response.ok) throw new Error(`${what}: ${url} answered ${response.status} ${response.statusText}`);
  return response;
}

// Resolves to {version, names, index, get(name)}; get fetches a family once and caches it.
export async function loadKernels(base = '/kernels/') {
  const index = await (await fetchOk(`${base}index.json`, 'kernel index')).json();
  if (!/^[0-9a-f]{16}$/.test(index.version ?? '') || !Array.isArray(index.kernels)) {
    throw new Error(`kernel index: ${base}index.json lacks a hex16 "version" or a "kernels" array`);
  }
  const byName = new Map(index.kernels.map((k) => [k.name, k]));
  const cache = new Map();
  const get = (name) => {
    if (!cache.has(name)) {
      const entry = byName.get(name);
      if (!entry) return Promise.reject(new Error(`kernel "${name}" is not in ${base}index.json`));
      const text =
          fetchOk(`${base}${encodeURIComponent(name)}.wgsl`, `kernel ${name}`)
              .then((r) => r.text())
              .then(async (wgsl) => {
                const got = await sha256Hex(wgsl);
                if (got !== entry.sha256)
                  throw new Error(`kernel ${name}: sha256 ${got} differs from the index's ${entry.sha256}`);
                return wgsl;
              });
      text.catch(() => cache.delete(name));  // a failed fetch may be retried
      cache.set(name, text);
    }
    return cache.get(name);
  };
  return {version: index.version, names: [...byName.keys()], index, get};
}
