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
    this.staging = [];  // read-back buffers free for the next read (readBack)
  }

  // Frees the buffers (the device outlives the runner: the benchmark page's llm suite).
  destroy() {
    for (const b of this.buffers.values()) b.destroy();
    this.buffers.clear();
    for (const slot of this.staging) for (const b of Object.values(slot)) b.destroy();
    this.staging = [];
    this.commands = new Map();
  }

  submit(encoder) {
    this.device.queue.submit([encoder.finish()]);
    ++this.submits;
  }

  // Takes `plan` as the one to run: prepare(), then its kernels compiled.
  async use(plan) {
    if (this.prepared !== plan) this.prepare(plan);
    this.kernels = await Promise.all(plan.kernels.map((k) => this.pipeline(k)));
    this.plan = plan;
    this.commands = new Map();  // plan name -> its commands (commandsOf)
  }

  // Checks `plan` against the device's limits, creates the buffers it names that do not exist yet
  // (zeros, the rope table, params words) and writes params words again (sampling settings change
  // them): synchronous, so that the weights can be uploaded (uploadShard) as soon as it returns.
  // Buffers persist across plans (the KV cache holds the conversation); the weights are the
  // caller's.
  prepare(plan) {
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
    this.prepared = plan;
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
    const smallest = this.device.adapterInfo?.subgroupMinSize ?? 4;  // unknown: WebGPU's minimum
    if (need.subgroup_min_size && smallest < need.subgroup_min_size)
      throw new LimitError(`this GPU's subgroups can have as few as ${smallest} invocations; ` +
                           `the plan's kernels reduce across ${need.subgroup_min_size} lanes of one subgroup: ` +
                           'serve the model from a machine whose GPU\'s subgroups can be as small as this one\'s');
    for (const b of plan.buffers)
      if (b.size > limits.maxBufferSize)
        throw new LimitError(`buffer ${b.name} needs ${b.size} bytes; maxBufferSize is ${limits.maxBufferSize}: ${fix}`);
    for (const [name, steps] of Object.entries(plan.plans))
      for (const s of steps)
        for (const g of (s.bindings ?? []).filter((g) => g)) {  // null: an unused binding number
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

  // Plan `name` as the commands encode() records, built once per plan: per compute step its
  // pipeline, bind group and grid; a copy or an end_pass as a pass boundary.
  commandsOf(name) {
    let commands = this.commands.get(name);
    if (commands) return commands;
    const steps = this.plan.plans[name];
    if (!steps) throw new Error(`plan: no plan named ${name}`);
    commands = steps.map((s) => {
      if (s.copy) return {copy: s.copy};
      if (s.end_pass) return {endPass: true};
      const pipeline = this.kernels[s.kernel];
      const [x, y = 1, z = 1] = s.grid;
      return {
        pipeline,
        group: this.device.createBindGroup({
          label: `${name}/${s.name}`,
          layout: pipeline.getBindGroupLayout(0),
          entries: s.bindings.flatMap((g, i) => g ? [{binding: i, resource: {buffer: this.buffer(g.buffer), offset: g.offset, size: g.size}}] : []),
        }),
        x, y, z,
      };
    });
    commands.dispatches = commands.filter((c) => c.pipeline).length;
    this.commands.set(name, commands);
    return commands;
  }

  // Records plan `name` into `encoder`; the number of dispatches. A pipeline or bind group the pass
  // already has is not set again.
  encode(encoder, name) {
    const commands = this.commandsOf(name);
    let pass = null, pipeline = null, group = null;
    for (const c of commands) {
      if (c.pipeline) {
        if (!pass) {
          pass = encoder.beginComputePass({label: name});
          pipeline = group = null;
        }
        if (c.pipeline !== pipeline) pass.setPipeline(pipeline = c.pipeline);
        if (c.group !== group) pass.setBindGroup(0, group = c.group);
        pass.dispatchWorkgroups(c.x, c.y, c.z);
      } else {
        pass?.end();
        pass = null;
        if (c.copy) this.copy(encoder, c.copy, {});
      }
    }
    pass?.end();
    return commands.dispatches;
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

  // A read-back of `count` token ids (and, with `logits`, the logits), recorded into `encoder`
  // after the steps that write them: {ids: Promise<Uint32Array>} once the encoder is submitted and
  // started(). The staging buffers are kept for the next read (release()).
  readBack(encoder, first, count, logits) {
    const plan = this.plan, vocab = plan.model.vocab_size;
    const slot = this.staging.pop() ?? {};
    if (!(slot.words?.size >= 4 * count)) {
      slot.words?.destroy();
      slot.words = this.device.createBuffer({label: 'read-back ids', size: 4 * Math.max(count, 8), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
    }
    if (logits && !slot.logits)
      slot.logits = this.device.createBuffer({label: 'read-back logits', size: 4 * vocab, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
    encoder.copyBufferToBuffer(this.buffer(plan.tokens.buffer), 4 * first, slot.words, 0, 4 * count);
    if (logits) encoder.copyBufferToBuffer(this.buffer(plan.logits), 0, slot.logits, 0, 4 * vocab);
    const read = {
      // Called right after the submit: the maps are queued behind this command buffer only.
      start: () => {
        read.done = Promise.all([slot.words.mapAsync(GPUMapMode.READ, 0, 4 * count),
                                 logits && slot.logits.mapAsync(GPUMapMode.READ, 0, 4 * vocab)]);
        return read;
      },
      // The ids (and logits) copied out; the staging buffers go back to the pool.
      result: async () => {
        await read.done;
        const ids = new Uint32Array(slot.words.getMappedRange(0, 4 * count).slice(0));
        const row = logits ? new Float32Array(slot.logits.getMappedRange(0, 4 * vocab).slice(0)) : null;
        read.release();
        return {ids, logits: row};
      },
      // For a read whose result is not wanted (a generation that stopped first).
      release: () => {
        if (read.released) return;
        read.released = true;
        slot.words.unmap();
        if (logits) slot.logits.unmap();
        this.staging.push(slot);
      },
    };
    return read;
  }

  // Generates after a prefill that fed positions ..last and picked tokens[last + 1]: yields
  // {id, pos} per token until `stop(id)`, `maxTokens` or the context's end. As native decoding
  // does, up to `inFlight` command buffers of `stepsPerSubmit` decode steps are queued ahead of the
  // read-back being awaited: the picker leaves each token in the tokens buffer, so a step needs
  // nothing from the host, and the steps past a stop are discarded (the cache past what was fed
  // is written over by the next prefill). With `logits` (an array), each token's logits are
  // pushed too (one step per command buffer). `onBatch(dispatches, steps, encodeMs, inFlight)`
  // after each submit (encodeMs: the JS time spent recording and submitting it; inFlight: the
  // command buffers whose read-backs are pending, this one's included).
  async *generate(last, {maxTokens, stepsPerSubmit = 8, inFlight = 2, stop = () => false, signal, onBatch, logits}) {
    const k = logits ? 1 : stepsPerSubmit;
    const final = Math.min(last + maxTokens, this.plan.ctx - 1);  // the last position whose token is read
    const pending = [];
    let encoder = this.device.createCommandEncoder();
    const queue = (read) => {
      this.submit(encoder);
      pending.push(read.start());
    };
    queue(this.readBack(encoder, last + 1, 1, logits));  // the prefill's token
    let encoded = last + 1;  // the steps submitted feed positions up to `encoded` (exclusive)
    let pos = last, emitted = 0;
    try {
      while (pending.length) {
        while (pending.length < inFlight && encoded < final && !signal?.aborted) {
          const t0 = performance.now(), count = Math.min(k, final - encoded);
          encoder = this.device.createCommandEncoder();
          let dispatches = 0;
          for (let i = 0; i < count; ++i) dispatches += this.encodeToken(encoder, encoded + i);
          queue(this.readBack(encoder, encoded + 1, count, logits));
          encoded += count;
          onBatch?.(dispatches, count, performance.now() - t0, pending.length);
        }
        const read = pending.shift();
        const {ids, logits: row} = await read.result();
        if (logits) logits.push(row);
        for (const id of ids) {
          yield {id, pos: ++pos};
          if (stop(id) || ++emitted >= maxTokens) return;
        }
        if (signal?.aborted) return;
      }
    } finally {
      for (const read of pending) read.done.then(read.release, read.release);
    }
  }
}
