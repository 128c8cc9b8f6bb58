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
