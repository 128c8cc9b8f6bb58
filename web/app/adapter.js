// WebGPU detection: the adapter and device the suites run on, what the page shows and submits
// about them, and, where WebGPU is missing, why and what to do.

// The limits a compute benchmark depends on, shown on the page and submitted with the results.
export const KEY_LIMITS = [
  'maxComputeWorkgroupSizeX',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupStorageSize',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxStorageBuffersPerShaderStage',
  'minStorageBufferOffsetAlignment',
];
// Requested where offered, as the native runtime does (src/gpu/context.cpp).
const WANTED_FEATURES = ['subgroups', 'timestamp-query', 'shader-f16'];

// Thrown when WebGPU cannot be used; `advice` lists what the visitor can do.
export class WebGPUUnavailable extends Error {
  constructor(message, advice) {
    super(message);
    this.advice = advice;
  }
}

function browserAdvice() {
  const ua = navigator.userAgent;
  if (/Firefox\//.test(ua)) {
    return [
      'Firefox ships WebGPU on Windows from version 141; on other systems try Firefox Nightly with ' +
          'dom.webgpu.enabled set to true in about:config.',
      'Or use Chrome or Edge 113 or newer.'
    ];
  }
  if (/Safari\//.test(ua) && !/Chrom(e|ium)\//.test(ua)) {
    return [
      'Safari ships WebGPU from Safari 26 (macOS 26, iOS 26); on older versions enable WebGPU under ' +
      'Develop > Feature Flags.'
    ];
  }
  if (/Chrom(e|ium)\//.test(ua)) {
    return [
      'Chrome and Edge ship WebGPU from version 113 on Windows, macOS and ChromeOS; on Linux and Android ' +
          'it depends on the version and the GPU: update the browser.',
      'On Linux (or a GPU not yet enabled) open chrome://flags/#enable-unsafe-webgpu and ' +
          'chrome://flags/#enable-vulkan, enable both and restart (or start the browser with ' +
          '--enable-unsafe-webgpu --enable-features=Vulkan).',
      'chrome://gpu tells whether WebGPU is blocked for this GPU or driver.'
    ];
  }
  return ['Use a browser with WebGPU: Chrome or Edge 113+, Firefox 141+ (Windows), Safari 26+.'];
}

const ADAPTER_ATTEMPTS = 4, ADAPTER_RETRY_MS = 500;

// Resolves to {adapter, device}, or throws WebGPUUnavailable explaining why not.
export async function openDevice() {
  if (!window.isSecureContext) {
    throw new WebGPUUnavailable(
        'WebGPU needs a secure context, and this page is not one.',
        [`Open it over https, or over http://localhost or http://127.0.0.1 ` +
         `(this is ${location.origin}).`]);
  }
  if (!('gpu' in navigator)) {
    throw new WebGPUUnavailable(
        'This browser does not offer WebGPU (navigator.gpu is missing).', browserAdvice());
  }
  // A browser whose GPU process is still starting can answer null (seen in a fresh headless
  // chromium on an NVIDIA machine when the chat page was its first page): asked again a few
  // times before the page gives up.
  let adapter = null;
  for (let attempt = 0; attempt < ADAPTER_ATTEMPTS && !adapter; ++attempt) {
    if (attempt) await new Promise((resolve) => setTimeout(resolve, ADAPTER_RETRY_MS));
    adapter = await navigator.gpu.requestAdapter({powerPreference: 'high-performance'});
  }
  if (!adapter) {
    throw new WebGPUUnavailable(
        'The browser has WebGPU but gave no adapter: no usable GPU or driver, or the ' +
            'GPU is blocklisted.',
        [
          'Update the GPU driver (on Linux, the Vulkan driver: mesa-vulkan-drivers or ' +
              'the vendor\'s).',
          ...browserAdvice()
        ]);
  }
  const requiredFeatures = WANTED_FEATURES.filter((f) => adapter.features.has(f));
  const requiredLimits = {};
  for (const name of KEY_LIMITS) {
    // Alignments are minimums: the adapter's value is the loosest allowed, which is the default.
    if (!name.startsWith('min') && adapter.limits[name] !== undefined)
      requiredLimits[name] = adapter.limits[name];
  }
  let device;
  try {
    device = await adapter.requestDevice({requiredFeatures, requiredLimits});
  } catch (e) {
    throw new WebGPUUnavailable(`The adapter refused a device: ${e.message}`, browserAdvice());
  }
  return {adapter, device};
}

// The `adapter` object of a submission (docs/WEB_API.md). Browsers do not say which native
// backend (Vulkan, D3D12, Metal) they use, hence backend "".
export function describeAdapter(adapter) {
  const info = adapter.info ?? {};
  const limits = {};
  for (const name of KEY_LIMITS)
    if (adapter.limits[name] !== undefined) limits[name] = adapter.limits[name];
  if (info.subgroupMinSize) limits.subgroupMinSize = info.subgroupMinSize;
  if (info.subgroupMaxSize) limits.subgroupMaxSize = info.subgroupMaxSize;
  return {
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
    backend: '',
    features: [...adapter.features].sort(),
    limits,
  };
}

const UA_BRANDS = ['Microsoft Edge', 'Google Chrome', 'Opera', 'Brave', 'HeadlessChrome', 'Chromium'];

// {browser: {name, version}, os} of a submission, from User-Agent Client Hints where the browser
// has them (full version, architecture), else from the User-Agent string.
export async function describeClient() {
  const uaData = navigator.userAgentData;
  if (uaData?.getHighEntropyValues) {
    const hints = await uaData.getHighEntropyValues(['fullVersionList', 'architecture', 'bitness']);
    const brands = hints.fullVersionList ?? uaData.brands;
    const brand = UA_BRANDS.map((name) => brands.find((b) => b.brand === name)).find(Boolean) ?? brands[0];
    const arch = hints.architecture === 'x86' && hints.bitness === '64' ? 'x86_64' :
        hints.architecture === 'arm' && hints.bitness === '64'          ? 'arm64' :
                                                                          hints.architecture;
    return {
      browser: {name: brand?.brand ?? 'unknown', version: brand?.version ?? ''},
      os: [uaData.platform, arch].filter(Boolean).join(' '),
    };
  }
  const ua = navigator.userAgent;
  const match = /(Firefox|Edg|Chrome|Version)\/([\d.]+)/.exec(ua);
  const name = !match        ? 'unknown' :
      match[1] === 'Edg'     ? 'Microsoft Edge' :
      match[1] === 'Version' ? 'Safari' :
                               match[1];
  return {browser: {name, version: match?.[2] ?? ''}, os: navigator.platform};
}
