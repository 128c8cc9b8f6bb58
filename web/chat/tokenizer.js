// The chat page's tokenizer: @lenml/tokenizers (served vendored at /vendor/tokenizers/main.mjs,
// passed in as `TokenizerLoader` so that the tests run this very module under node) over the
// model's tokenizer.json and tokenizer_config.json, and its chat template through the library's
// Jinja. tests/tokenizer/reference.mjs checks it against the native tokenizer on the corpus.
export function loadTokenizer(TokenizerLoader, tokenizerJSON, tokenizerConfig) {
  const t = TokenizerLoader.fromPreTrained({tokenizerJSON, tokenizerConfig});
  return {
    // Ids as Hugging Face's encode with its defaults (special tokens added as the config says).
    encode: (text) => t.encode(text),
    decode: (ids, skipSpecial = true) => (ids.length ? t.decode(ids, {skip_special_tokens: skipSpecial}) : ''),
    // The conversation ([{role, content}]) rendered by the model's chat template.
    render: (messages, addGenerationPrompt = true) =>
        t.apply_chat_template(messages, {tokenize: false, add_generation_prompt: addGenerationPrompt}),
  };
}

// The same in a worker (web/chat/tokenizer_worker.js, which loads the served model's tokenizer
// files itself): encode, decode and render return promises, answered in the order asked.
// `loaded` settles once the tokenizer is built.
export function tokenizerWorker() {
  const worker = new Worker(new URL('./tokenizer_worker.js', import.meta.url), {type: 'module'});
  const pending = new Map();
  let next = 0;
  worker.onmessage = ({data: {id, result, error}}) => {
    const p = pending.get(id);
    pending.delete(id);
    if (error === undefined) p.resolve(result);
    else p.reject(new Error(error));
  };
  worker.onerror = (e) => {
    for (const p of pending.values()) p.reject(new Error(`tokenizer worker: ${e.message ?? 'failed to start'}`));
    pending.clear();
  };
  const call = (op, ...args) => new Promise((resolve, reject) => {
    pending.set(++next, {resolve, reject});
    worker.postMessage({id: next, op, args});
  });
  return {
    loaded: call('load'),
    encode: (text) => call('encode', text),
    decode: (ids, skipSpecial = true) => call('decode', ids, skipSpecial),
    render: (messages, addGenerationPrompt = true) => call('render', messages, addGenerationPrompt),
  };
}
