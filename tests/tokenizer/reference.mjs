// Expected ids for tests/test_tokenizer.cpp from @lenml/tokenizers (a JavaScript port of Hugging
// Face tokenizers), and chat renderings from its Jinja templates.
// usage: node reference.mjs MODEL_DIR CORPUS_JSON CHAT_CASES_JSON OUT_JSON
// Corpus entries are strings, or {"repeat": s, "times": n} for very long inputs; the output
// carries the expanded text so the test needs no expansion of its own.
import { TokenizerLoader } from "@lenml/tokenizers";
import fs from "node:fs";
import path from "node:path";

const [modelDir, corpusPath, chatPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node reference.mjs MODEL_DIR CORPUS_JSON CHAT_CASES_JSON OUT_JSON");
  process.exit(2);
}
const readJson = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const tokenizerJSON = readJson(path.join(modelDir, "tokenizer.json"));
const tokenizerConfig = readJson(path.join(modelDir, "tokenizer_config.json"));
const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });

const encode = readJson(corpusPath).map((entry) => {
  const text = typeof entry === "string" ? entry : entry.repeat.repeat(entry.times);
  const ids = tokenizer.encode(text); // add_special_tokens defaults to true, as in HF
  return { text, ids, decoded: ids.length ? tokenizer.decode(ids) : "" };
});

// The same conversations through each fixture template, rendered by the reference's Jinja.
const cases = readJson(chatPath);
const chat = [];
for (const [name, template] of Object.entries(cases.templates)) {
  const withTemplate = TokenizerLoader.fromPreTrained({
    tokenizerJSON,
    tokenizerConfig: { ...tokenizerConfig, chat_template: template },
  });
  for (const conv of cases.conversations) {
    const text = withTemplate.apply_chat_template(conv.messages, {
      tokenize: false,
      add_generation_prompt: conv.add_generation_prompt,
    });
    chat.push({ template: name, ...conv, text });
  }
}
fs.writeFileSync(outPath, JSON.stringify({ encode, chat }));
