// The little of a WebGPU runtime the suites share: buffers from typed arrays, read-back,
// pipelines cached per (module text, entry, constants), and the two clocks: wall clock around
// onSubmittedWorkDone, and pass timestamps where the device has 'timestamp-query'.

// GPUBufferUsage's values (fixed by the WebGPU spec), so that the suites' pure parts also load
// where there is no WebGPU (node, for their tests).
const S = {
  MAP_READ: 0x1,
  COPY_SRC: 0x4,
  COPY_DST: 0x8,
  UNIFORM: 0x40,
  STORAGE: 0x80,
  QUERY_RESOLVE: 0x200
};
export const STORAGE = S.STORAGE | S.COPY_SRC | S.COPY_DST;
export const UNIFORM = S.UNIFORM | S.COPY_DST;

export function upload(device, data, usage = STORAGE, label = '') {
  const buffer = device.createBuffer({size: Math.max(16, align(data.byteLength, 16)), usage, label});
  device.queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
  return buffer;
}

export function align(n, a) { return Math.ceil(n / a) * a; }

export async function read(device, buffer, ArrayType = Float32Array, offsetBytes = 0, count = null) {
  const bytes = count === null ? buffer.size - offsetBytes : count * ArrayType.BYTES_PER_ELEMENT;
  const staging = device.createBuffer({size: align(bytes, 4), usage: S.MAP_READ | S.COPY_DST});
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(buffer, offsetBytes, staging, 0, align(bytes, 4));
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(0x1);  // GPUMapMode.READ
  const out = new ArrayType(staging.getMappedRange().slice(0, bytes));
  staging.destroy();
  return out;
}

// Pipelines compiled once per (source, entry, constants); modules once per source. Device
// errors raised while compiling are turned into exceptions naming the kernel.
export class Pipelines {
  constructor(device) {
    this.device = device;
    this.modules = new Map();
    this.pipelines = new Map();
  }

  async get(label, code, entryPoint, constants = {}) {
    const key = `${label}|${entryPoint}|${JSON.stringify(constants)}`;
    let p = this.pipelines.get(key);
    if (p) return p;
    const name = `kernel ${label}, entry ${entryPoint}`;
    // The scope holds what the shader module's compilation reports; the pipeline's own errors
    // reject its promise.
    this.device.pushErrorScope('validation');
    let module = this.modules.get(code);
    if (!module) {
      module = this.device.createShaderModule({code, label});
      this.modules.set(code, module);
    }
    const created = this.device.createComputePipelineAsync(
        {label: `${label}.${entryPoint}`, layout: 'auto', compute: {module, entryPoint, constants}});
    // Handled here whichever way the scope goes: where the module's error is told (below), the
    // pipeline's own rejection says less and must not surface as an unhandled one.
    created.catch(() => {});
    const scopeError = await this.device.popErrorScope();
    if (scopeError) throw new Error(`${name}: ${scopeError.message}`);
    p = await created.catch((e) => {
      throw new Error(`${name}: ${e.message}`);
    });
    this.pipelines.set(key, p);
    return p;
  }
}

export function bind(device, pipeline, resources) {
  return device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: resources.map((r, binding) => ({binding, resource: r.buffer ? r : {buffer: r}})),
  });
}

export async function waitIdle(device) { await device.queue.onSubmittedWorkDone(); }

// Wall-clock milliseconds of `issue()` (which records and submits) until the queue is idle.
export async function wallMs(device, issue) {
  const t0 = performance.now();
  await issue();
  await device.queue.onSubmittedWorkDone();
  return performance.now() - t0;
}

// Times one compute pass by timestamps: `pass(encoderArgs)` returns the descriptor fields to
// merge into beginComputePass; `resolve(encoder)` then `ms()` after the submit.
export class PassTimer {
  constructor(device) {
    this.device = device;
    this.enabled = device.features.has('timestamp-query');
    if (!this.enabled) return;
    this.set = device.createQuerySet({type: 'timestamp', count: 2});
    this.resolved = device.createBuffer({size: 16, usage: S.QUERY_RESOLVE | S.COPY_SRC});
  }

  passDescriptor() {
    return this.enabled ?
        {timestampWrites: {querySet: this.set, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1}} :
        {};
  }

  resolve(encoder) {
    if (this.enabled) encoder.resolveQuerySet(this.set, 0, 2, this.resolved, 0);
  }

  // GPU milliseconds of the last timed pass (null without timestamps or when the adapter
  // returned an unordered pair).
  async ms() {
    if (!this.enabled) return null;
    const t = await read(this.device, this.resolved, BigUint64Array);
    return t[1] > t[0] ? Number(t[1] - t[0]) / 1e6 : null;
  }
}

// A 2D grid covering `groups` workgroups (one dimension holds at most 65,535).
export function grid(groups) {
  const x = Math.min(groups, 32768);
  return [x, Math.ceil(groups / x)];
}
