// The page's weight cache (shardStore in model_client.js): shards kept as files of the origin
// private file system, each named by its SHA-256, read and written through sync access handles,
// which only a worker may open. Off the main thread, and straight into the buffer that is then
// transferred to the page. Answers {id, op, ...} with {id, result} (transferring bytes) or
// {id, error}:
//   get {name, bytes}: the file's bytes, or null when absent or not `bytes` long (a write cut short)
//   put {name, bytes: Uint8Array}: writes the file
//   verify {names}: hashes each file; deletes those whose hash is not their name: their names
//   clear: removes every shard
import {sha256Hex} from '../app/kernels.js';

const DIR = 'wgfuse-model-shards';
let dir = null;
const folder = async () => (dir ??= await (await navigator.storage.getDirectory()).getDirectoryHandle(DIR, {create: true}));

async function read(name, size) {
  let handle;
  try {
    handle = await (await (await folder()).getFileHandle(name)).createSyncAccessHandle();
  } catch (e) {
    if (e.name === 'NotFoundError') return null;
    throw e;
  }
  try {
    if (size !== undefined && handle.getSize() !== size) return null;
    const bytes = new Uint8Array(handle.getSize());
    if (handle.read(bytes, {at: 0}) !== bytes.byteLength) return null;
    return bytes;
  } finally {
    handle.close();
  }
}

const ops = {
  get: ({name, bytes}) => read(name, bytes),
  async put({name, bytes}) {
    const handle = await (await (await folder()).getFileHandle(name, {create: true})).createSyncAccessHandle();
    try {
      handle.truncate(0);
      handle.write(bytes, {at: 0});
      handle.flush();
    } finally {
      handle.close();
    }
    return null;
  },
  async verify({names}) {
    const bad = [];
    for (const name of names) {
      const bytes = await read(name);
      if (bytes && (await sha256Hex(bytes)) !== name) {
        bad.push(name);
        await (await folder()).removeEntry(name);
      }
    }
    return bad;
  },
  async clear() {
    dir = null;
    await (await navigator.storage.getDirectory()).removeEntry(DIR, {recursive: true}).catch((e) => {
      if (e.name !== 'NotFoundError') throw e;
    });
    return null;
  },
};

self.onmessage = async ({data: {id, op, ...args}}) => {
  try {
    const result = await ops[op](args);
    self.postMessage({id, result}, result instanceof Uint8Array ? [result.buffer] : []);
  } catch (e) {
    self.postMessage({id, error: `${e.name}: ${e.message}`});
  }
};
