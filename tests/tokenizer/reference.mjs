// Expected ids for tests/test_tokenizer.cpp from @lenml/tokenizers (a JavaScript port of Hugging
// Face tokenizers), and chat renderings from its Jinja templates, through the chat page's own
// tokenizer module (web/chat/tokenizer.js) and, when given, the library file the page is served
// (build/web/vendor/tokenizers/main.mjs), so that the native tokenizer is checked equal to what
// the page runs.
// usage: node reference.mjs MODEL_DIR CORPUS_JSON CHAT_CASES_JSON OUT_JSON [LIBRARY_MJS]
// Corpus entries are strings, or {"repeat": s, "times": n} for very long inputs; the output
// carries the expanded text so the test needs no expansion of its own.
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

import {loadTokenizer} from '../../web/chat/tokenizer.js';

const [modelDir, corpusPath, chatPath, outPath, library] = process.argv.slice(2);
if (!outPath) {
  console.error('usage: node reference.mjs MODEL_DIR CORPUS_JSON CHAT_CASES_JSON OUT_JSON [LIBRARY_MJS]');
  process.exit(2);
}
const {TokenizerLoader} = await import(library ? pathToFileURL(path.resolve(library)).href : '@lenml/tokenizers');
const readJson = (p) => JSON.parse(fs.readFileSync(p, 'utf8'));
const tokenizerJSON = readJson(path.join(modelDir, 'tokenizer.json'));
const tokenizerConfig = readJson(path.join(modelDir, 'tokenizer_config.json'));
const tokenizer = loadTokenizer(TokenizerLoader, tokenizerJSON, tokenizerConfig);

const encode = readJson(corpusPath).map((entry) => {
  const text = typeof entry === 'string' ? entry : entry.repeat.repeat(entry.times);
  const ids = tokenizer.encode(text);
  return {text, ids, decoded: tokenizer.decode(ids, false)};
});

// The same conversations through each fixture template, rendered by the library's Jinja.
const cases = readJson(chatPath);
const chat = [];
for (const [name, template] of Object.entries(cases.templates)) {
  const withTemplate = loadTokenizer(TokenizerLoader, tokenizerJSON, {...tokenizerConfig, chat_template: template});
  for (const conv of cases.conversations)
    chat.push({template: name, ...conv, text: withTemplate.render(conv.messages, conv.add_generation_prompt)});
}
fs.writeFileSync(outPath, JSON.stringify({encode, chat}));
