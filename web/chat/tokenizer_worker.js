// The chat page's tokenizer off the main thread (tokenizerWorker in tokenizer.js): parsing the
// model's tokenizer.json (megabytes) and building the tokenizer's tables would hold the page for
// hundreds of milliseconds while the weights load. Answers {id, op, args} with {id, result} or
// {id, error}; op "load" first.
import {loadFile} from './model_client.js';
import {loadTokenizer} from './tokenizer.js';

let tokenizer = null;
const ops = {
  async load() {
    const {TokenizerLoader} = await import('/vendor/tokenizers/main.mjs');
    const [tokenizerJSON, tokenizerConfig] = await Promise.all([loadFile('tokenizer.json'), loadFile('tokenizer_config.json')]);
    tokenizer = loadTokenizer(TokenizerLoader, tokenizerJSON, tokenizerConfig);
  },
  encode: (text) => tokenizer.encode(text),
  decode: (ids, skipSpecial) => tokenizer.decode(ids, skipSpecial),
  render: (messages, addGenerationPrompt) => tokenizer.render(messages, addGenerationPrompt),
};

self.onmessage = async ({data: {id, op, args}}) => {
  try {
    if (op !== 'load' && !tokenizer) throw new Error('the tokenizer is not loaded');
    self.postMessage({id, result: await ops[op](...args)});
  } catch (e) {
    self.postMessage({id, error: `tokenizer: ${e.message}`});
  }
};
