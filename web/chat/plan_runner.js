// Replays the native engine's written plan (docs/PLAN.md, `wgfuse generate --write-plan`) on a
// WebGPU device: creates its buffers, compiles its kernels (the served expanded WGSL with the
// plan's override constants), and runs its prefill and decode sequences. It knows the plan's
// format and nothing of the model: no step building, tuning or sampling of its own.

const USAGE = {
  storage: GPUBufferUsage.STORAGE,
  uniform: GPUBufferUsage.UNIFORM,
  copy_src: GPUBufferUsage.COPY_SRC,
  copy_dst: GPUBufferUsage.COPY_DST,
  map_read: GPUBufferUsage.MAP_READ,
};

// A limit of the device that the plan exceeds: names the limit, what needs more, and the fix.
export class LimitError extends Error {}

// The (cos, sin) table of a "rope" buffer, as docs/PLAN.md defines it: the plan's frequencies
// (after the model's RoPE scaling) and attention factor, in double, then f32.
function ropeTable({positions, head_dim: headDim, inv_freq: invFreq, attention_factor: factor}) {
  const half = headDim / 2;
  if (!Array.isArray(invFreq) || invFreq.length !== half || typeof factor !== 'number')
    throw new Error(`plan: a rope buffer needs ${half} inv_freq values and an attention_factor`);
  const out = new Float32Array(positions * half * 2);
  for (let pos = 0; pos < positions; ++pos)
    for (let i = 0; i < half; ++i) {
      const angle = pos * invFreq[i];
      out[2 * (pos * half + i)] = Math.cos(angle) * factor;
      out[2 * (pos * half + i) + 1] = Math.sin(angle) * factor;
    }
  return out;
}

export class PlanRunner {
  // kernelSource(family) -> Promise<WGSL text> (the page fetches /kernels/FAMILY.wgsl).
  constructor(device, kernelSource) {
    this.device = device;
    this.kernelSource = kernelSource;
    this.buffers = new Map();  // name -> GPUBuffer
    this.modules = new Map();  // family -> Promise<GPUShaderModule>
    this.pipelines = new Map();  // kernel key -> Promise<GPUComputePipeline>
    this.plan = null;
    this.submits = 0;  // command buffers submitted so far
  }

  // Frees the buffers (the device outlives the runner: the benchmark page's llm suite).
  destroy() {
    for (const b of this.buffers.values()) b.destroy();
    this.buffers.clear();
    this.groups = new Map();
  }

  submit(encoder) {
    this.device.queue.submit([encoder.finish()]);
    ++this.submits;
  }

  // Takes `plan` as the one to run: checks it against the device's limits, creates the buffers
  // it names that do not exist yet (zeros, the rope table, params words), writes params words
  // again (sampling settings change them) and compiles its kernels. Buffers persist across plans
  // (the KV cache holds the conversation); the weights are the caller's (uploadShard).
  async use(plan) {
    if (plan.format !== 'wgfuse-plan' || plan.version !== 1)
      throw new Error(`plan: format ${plan.format} version ${plan.version}; this page reads wgfuse-plan 1`);
    this.checkLimits(plan);
    for (const b of plan.buffers) {
      let buffer = this.buffers.get(b.name);
      if (!buffer || buffer.size !== b.size) {
        buffer?.destroy();
        let usage = GPUBufferUsage.COPY_DST;
        for (const u of b.usage) {
          if (!(u in USAGE)) throw new Error(`plan: buffer ${b.name} has usage "${u}", unknown to this page`);
          usage |= USAGE[u];
        }
        buffer = this.device.createBuffer({label: b.name, size: b.size, usage});
        this.buffers.set(b.name, buffer);
        if (b.contents.kind === 'rope')
          this.device.queue.writeBuffer(buffer, 0, ropeTable(b.contents));
      }
      if (b.contents.kind === 'words') this.device.queue.writeBuffer(buffer, 0, Uint32Array.from(b.contents.words));
      else if (!['zeros', 'rope', 'weights'].includes(b.contents.kind))
        throw new Error(`plan: buffer ${b.name} holds "${b.contents.kind}", unknown to this page`);
    }
    this.kernels = await Promise.all(plan.kernels.map((k) => this.pipeline(k)));
    this.plan = plan;
    this.groups = new Map();  // plan name -> bind group per step
  }

  // The plan's `device` needs (docs/PLAN.md) against this device; then each buffer and binding, so
  // that a refusal names the one over the limit.
  checkLimits(plan) {
    const limits = this.device.limits, need = plan.device ?? {};
    const fix = 'start wgfuse serve with --limits BYTES at most this limit (the plan split to fit), ' +
        'or use a browser or GPU that grants more';
    for (const f of need.features ?? [])
      if (this.device.features && !this.device.features.has(f))
        throw new LimitError(`the plan's kernels need the WebGPU feature "${f}", which this device lacks`);
    const subgroup = this.device.adapterInfo?.subgroupMaxSize;
    if (need.subgroup_max_size && subgroup > need.subgroup_max_size)
      throw new LimitError(`this GPU's subgroups have up to ${subgroup} invocations; the plan's kernels were tuned ` +
                           `for at most ${need.subgroup_max_size} (a subgroup must not span two rows' teams): ` +
                           'serve the model from a machine whose GPU has subgroups at least this large');
    for (const b of plan.buffers)
      if (b.size > limits.maxBufferSize)
        throw new LimitError(`buffer ${b.name} needs ${b.size} bytes; maxBufferSize is ${limits.maxBufferSize}: ${fix}`);
    for (const [name, steps] of Object.entries(plan.plans))
      for (const s of steps)
        for (const g of s.bindings ?? []) {
          if (g.size > limits.maxStorageBufferBindingSize)
            throw new LimitError(`${name}/${s.name} binds ${g.size} bytes of ${g.buffer}; ` +
                                 `maxStorageBufferBindingSize is ${limits.maxStorageBufferBindingSize}: ${fix}`);
          if (g.offset % (limits.minStorageBufferOffsetAlignment ?? 1))
            throw new LimitError(`${name}/${s.name} binds ${g.buffer} at offset ${g.offset}, not a multiple of ` +
                                 `this device's minStorageBufferOffsetAlignment ${limits.minStorageBufferOffsetAlignment}`);
        }
  }

  async pipeline(k) {
    const key = JSON.stringify([k.family, k.entry, Object.entries(k.overrides).sort()]);
    if (!this.pipelines.has(key)) {
      if (!this.modules.has(k.family))
        this.modules.set(k.family, this.kernelSource(k.family).then((code) => this.device.createShaderModule({label: k.family, code})));
      const module = await this.modules.get(k.family);
      this.pipelines.set(key, this.device.createComputePipelineAsync({
        label: `${k.family}.${k.entry}`,
        layout: 'auto',
        compute: {module, entryPoint: k.entry, constants: k.overrides},
      }));
    }
    return this.pipelines.get(key);
  }

  buffer(name) {
    const b = this.buffers.get(name);
    if (!b) throw new Error(`plan: no buffer named ${name}`);
    return b;
  }

  // Writes bytes of a weight buffer (a shard of the packed arena).
  uploadShard(shard, bytes) {
    if (bytes.byteLength !== shard.bytes)
      throw new Error(`shard ${shard.buffer}/${shard.index}: ${bytes.byteLength} bytes, index says ${shard.bytes}`);
    this.device.queue.writeBuffer(this.buffer(shard.buffer), shard.offset, bytes);
  }

  stepsOf(name) {
    const steps = this.plan.plans[name];
    if (!steps) throw new Error(`plan: no plan named ${name}`);
    if (!this.groups.has(name))
      this.groups.set(name, steps.map((s) => s.kernel === undefined ? null : this.device.createBindGroup({
        label: `${name}/${s.name}`,
        layout: this.kernels[s.kernel].getBindGroupLayout(0),
        entries: s.bindings.map((g, i) => ({binding: i, resource: {buffer: this.buffer(g.buffer), offset: g.offset, size: g.size}})),
      })));
    return {steps, groups: this.groups.get(name)};
  }

  // Records plan `name` into `encoder`; the number of dispatches.
  encode(encoder, name) {
    const {steps, groups} = this.stepsOf(name);
    let pass = null, dispatches = 0;
    const end = () => {
      pass?.end();
      pass = null;
    };
    steps.forEach((s, i) => {
      if (s.copy) {
        end();
        this.copy(encoder, s.copy, {});
      } else if (s.end_pass) {
        end();
      } else {
        pass ??= encoder.beginComputePass({label: name});
        pass.setPipeline(this.kernels[s.kernel]);
        pass.setBindGroup(0, groups[i]);
        pass.dispatchWorkgroups(...s.grid);
        ++dispatches;
      }
    });
    end();
    return dispatches;
  }

  // A copy step; an offset may be {row_bytes, row: "chunk_length - 1"} (after a prefill chunk).
  copy(encoder, c, values) {
    const offset = (o) => {
      if (typeof o === 'number') return o;
      if (o.row !== 'chunk_length - 1') throw new Error(`plan: copy offset row "${o.row}" is unknown to this page`);
      return o.row_bytes * (values.chunk_length - 1);
    };
    encoder.copyBufferToBuffer(this.buffer(c.src), offset(c.src_offset), this.buffer(c.dst), offset(c.dst_offset), c.bytes);
  }

  // A sequence entry: {plan} or {copy}; "decode" stands for the variant feeding `pos`.
  run(encoder, entry, pos, values = {}) {
    if (entry.copy) {
      this.copy(encoder, entry.copy, values);
      return 0;
    }
    return this.encode(encoder, entry.plan === 'decode' ? this.decodePlan(pos) : entry.plan);
  }

  decodePlan(pos) {
    let name = null;
    for (const v of this.plan.decode.variants)
      if (v.from <= pos) name = v.plan;
    if (!name) throw new Error(`plan: no decode variant for position ${pos}`);
    return name;
  }

  writeState(words) {
    this.device.queue.writeBuffer(this.buffer(this.plan.state.buffer), 0, Uint32Array.from(words));
  }

  // Feeds ids at positions start.. (the KV cache before start is kept) and picks the token after
  // them into tokens[start + ids.length]. Returns the dispatches recorded.
  prefill(ids, start) {
    const plan = this.plan, p = plan.prefill, last = start + ids.length - 1;
    if (!ids.length || last + 1 >= plan.ctx)
      throw new Error(`prefill: positions ${start}..${last} do not fit the context of ${plan.ctx}`);
    this.device.queue.writeBuffer(this.buffer(plan.tokens.buffer), 4 * start, Uint32Array.from(ids));
    let encoder = this.device.createCommandEncoder(), dispatches = 0;
    if (p.chunk_tokens > 0) {
      let values = null;
      for (let p0 = start; p0 <= last; p0 += p.chunk_tokens) {
        const T = Math.min(p.chunk_tokens, last + 1 - p0);
        const name = p.chunk_plans[T];
        if (!name) throw new Error(`plan: no prefill plan for a chunk of ${T} tokens (the plan was written for ${plan.prompt_length})`);
        values = {last_position: last, chunk_start: p0, chunk_length: T};
        this.writeState(p.state_words_before_chunk.map((w) => {
          if (!(w in values)) throw new Error(`plan: state word "${w}" is unknown to this page`);
          return values[w];
        }));
        dispatches += this.encode(encoder, name);
        if (p0 + T <= last) {  // the next chunk's state write must follow this chunk
          this.submit(encoder);
          encoder = this.device.createCommandEncoder();
        }
      }
      for (const e of p.after_last_chunk) dispatches += this.run(encoder, e, last, values);
    } else {
      this.writeState([start]);
      for (let pos = start; pos < last; ++pos)
        for (const e of p.each_position_but_the_last) dispatches += this.run(encoder, e, pos);
      for (const e of p.last_position) dispatches += this.run(encoder, e, last);
    }
    dispatches += this.encode(encoder, plan.picker);
    this.submit(encoder);
    return dispatches;
  }

  // Records the steps of one token after the prompt: the decode step feeding `pos`, the LM head
  // and the picker (tokens[pos + 1]). Returns the dispatches.
  encodeToken(encoder, pos) {
    let dispatches = 0;
    for (const name of this.plan.decode.token) dispatches += this.run(encoder, {plan: name}, pos);
    return dispatches;
  }

  // Reads u32 words [first, first + count) of a buffer.
  async readWords(name, first, count) {
    const staging = this.device.createBuffer({size: 4 * count, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(this.buffer(name), 4 * first, staging, 0, 4 * count);
    this.submit(encoder);
    await staging.mapAsync(GPUMapMode.READ);
    const out = new Uint32Array(staging.getMappedRange().slice(0));
    staging.destroy();
    return out;
  }

  async readLogits() {
    const words = await this.readWords(this.plan.logits, 0, this.plan.model.vocab_size);
    return new Float32Array(words.buffer);
  }

  // Generates after a prefill that fed positions ..last and picked tokens[last + 1]: yields
  // {id, pos} per token, `stepsPerSubmit` decode steps per command buffer, until `stop(id)`,
  // `maxTokens` or the context's end. `onBatch(dispatches)` after each submit.
  async *generate(last, {maxTokens, stepsPerSubmit = 4, stop = () => false, signal, onBatch, logits}) {
    const tokens = this.plan.tokens.buffer;
    let pos = last + 1, emitted = 0;
    const [first] = await this.readWords(tokens, pos, 1);
    if (logits) logits.push(await this.readLogits());
    yield {id: first, pos};
    if (stop(first) || ++emitted >= maxTokens) return;
    const k = logits ? 1 : stepsPerSubmit;
    while (emitted < maxTokens && pos + 1 < this.plan.ctx && !signal?.aborted) {
      const count = Math.min(k, maxTokens - emitted, this.plan.ctx - 1 - pos);
      const encoder = this.device.createCommandEncoder();
      let dispatches = 0;
      for (let i = 0; i < count; ++i) dispatches += this.encodeToken(encoder, pos + i);
      this.submit(encoder);
      onBatch?.(dispatches, count);
      const ids = await this.readWords(tokens, pos + 1, count);
      if (logits) logits.push(await this.readLogits());
      for (const id of ids) {
        ++pos;
        yield {id, pos};
        if (stop(id) || ++emitted >= maxTokens) return;
      }
    }
  }
}
