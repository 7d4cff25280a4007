// Renders one conversation with a model's published chat_template through @huggingface/jinja
// (the engine transformers.js's apply_chat_template uses), as apply_chat_template(tokenize=False,
// add_generation_prompt=True) does: the template gets messages, add_generation_prompt and the
// special tokens of tokenizer_config.json. Prints the text; exit 3 with the message when the
// template raises (raise_exception).
// usage: node render_chat.cjs JINJA_PACKAGE_DIR TOKENIZER_CONFIG.json CONV.json
'use strict';
const fs = require('fs');
const [pkg, cfgPath, convPath] = process.argv.slice(2);
const { Template } = require(pkg);
const cfg = JSON.parse(fs.readFileSync(cfgPath, 'utf8'));
let tmpl = cfg.chat_template;
if (Array.isArray(tmpl)) tmpl = tmpl.find((t) => t.name === 'default').template;
const ctx = { messages: JSON.parse(fs.readFileSync(convPath, 'utf8')), add_generation_prompt: true };
for (const k of ['bos_token', 'eos_token', 'unk_token', 'pad_token']) {
    const v = cfg[k];
    if (v !== undefined && v !== null) ctx[k] = typeof v === 'string' ? v : v.content;
}
let out;
try {
    out = new Template(tmpl).render(ctx);
} catch (e) {
    process.stderr.write(String(e.message) + '\n');
    process.exit(3);
}
process.stdout.write(out);
