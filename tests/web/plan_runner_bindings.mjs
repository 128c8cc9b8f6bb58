// PlanRunner's bind groups (web/chat/plan_runner.js) for a plan step whose bindings include an
// unused number (null in the plan file, docs/PLAN.md): the group gets the other bindings under
// their own numbers, as Context::bind makes them natively. A stand-in device records the calls.
// Usage: node plan_runner_bindings.mjs
import assert from 'node:assert/strict';

// The usage flags the module reads on load (the WebGPU specification's values); no device needed.
globalThis.GPUBufferUsage ??= {MAP_READ: 1, MAP_WRITE: 2, COPY_SRC: 4, COPY_DST: 8, INDEX: 16, VERTEX: 32,
                               UNIFORM: 64, STORAGE: 128, INDIRECT: 256, QUERY_RESOLVE: 512};
const {PlanRunner} = await import('../../web/chat/plan_runner.js');

const groups = [];
const device = {createBindGroup: (d) => (groups.push(d), {label: d.label})};
const runner = new PlanRunner(device, async () => '');
runner.buffers = new Map([['parts', {name: 'parts'}], ['bias', {name: 'bias'}]]);
runner.kernels = [{getBindGroupLayout: (i) => `layout ${i}`}];
runner.commands = new Map();
runner.plan = {plans: {prefill: [
  {name: 'qkv_rope_sum', kernel: 0, grid: [3, 7],
   bindings: [{buffer: 'parts', offset: 0, size: 64}, null, null, {buffer: 'bias', offset: 16, size: 32}]},
  {end_pass: true},
]}};
const commands = runner.commandsOf('prefill');
assert.equal(commands.dispatches, 1);
assert.equal(groups.length, 1);
assert.equal(groups[0].layout, 'layout 0');
assert.deepEqual(groups[0].entries, [
  {binding: 0, resource: {buffer: {name: 'parts'}, offset: 0, size: 64}},
  {binding: 3, resource: {buffer: {name: 'bias'}, offset: 16, size: 32}},
]);
assert.deepEqual([commands[0].x, commands[0].y, commands[0].z], [3, 7, 1]);
console.log('plan_runner_bindings: an unused binding number is left out of the group, the others keep theirs');
