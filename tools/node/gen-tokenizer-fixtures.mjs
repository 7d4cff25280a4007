// Dev-time generator of tokenizer test fixtures with the real Hugging Face implementation
// (transformers.js AutoTokenizer, local files only). Not needed to build or test pdq.
//   cd tools/node && npm install --ignore-scripts && node gen-tokenizer-fixtures.mjs
// Writes tests/fixtures/tokenizers/<name>/cases.json for llama2, llama3 and mistral (tokenizer files
// in the fixture folder) and for qwen3, gemma3 and phi3 (files from outside the project: the npm
// packages of tools/tokenizers, installed by scripts/install-deps.sh, and ../shared/reference/chat/phi3),
// and tests/fixtures/chat/<name>.json: apply_chat_template ids of the conversations below.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { env, AutoTokenizer } from "@huggingface/transformers";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const fixDir = path.join(root, "tests/fixtures/tokenizers");
env.allowRemoteModels = false;
env.localModelPath = fixDir + "/";

// Deterministic PRNG (xorshift64*), so the fixtures are reproducible.
let state = 0x9e3779b97f4a7c15n;
function rand() {
  state ^= state >> 12n; state ^= (state << 25n) & 0xffffffffffffffffn; state ^= state >> 27n;
  return Number(((state * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) >> 11n) / 2 ** 53;
}
const pick = (a) => a[Math.floor(rand() * a.length)];

const fixed = [
  "", " ", "  ", "\t", "\n", "\n\n", " \n ", "a", "A", "Hello", "Hello, my dog is cute",
  "In the beginning, God created the heavens and the earth.", " leading space", "trailing space ",
  "  two leading spaces", "multiple   spaces   inside", "tabs\there\t\tand\tthere", "line1\nline2\r\nline3\rline4",
  "\n\nparagraph\n\n\nbreaks\n", "   \t  \n  mixed whitespace run  \t\n", "1", "12", "123", "1234", "12345678901234567890",
  "3.14159 2.71828 -42 +7 1e-10 0x1F 1,000,000", "Phone: 555-0123, year 2024.", "I'm sure it's fine, you're right, we've, they'll, he'd",
  "DON'T SHOUT, I'M HERE; IT'S FINE", "naïve café résumé façade coöperate", "e\u0301 combining acute, a\u0300\u0316 stacked, n\u0303",
  "Ünïcödé ÀÉÎÕÜ ß ẞ", "Привет, как дела? Всё хорошо.", "Γειά σου Κόσμε", "שלום עולם", "مرحبا بالعالم", "नमस्ते दुनिया",
  "你好，世界！今天天气很好。", "日本語のテキスト、カタカナとひらがな。", "한국어 텍스트입니다", "ภาษาไทย", "Tiếng Việt có dấu",
  "emoji 😀 😃 😄 🎉🎉🎉", "👍🏽 skin tone, 👨‍👩‍👧‍👦 family ZWJ, 🏳️‍🌈 flag", "🇯🇵🇺🇸 regional indicators", "★☆♥♦♣♠ ✓✗ ∑∫√∞ ≤≥≠",
  "math: α+β=γ, ∀x∈ℝ, x²≥0", "“curly quotes” and ‘single’ — em dash – en dash …", "¡Hola! ¿Qué tal?", "«guillemets» „German“",
  "int main(void) { return 0; }", "def f(x):\n    return x ** 2  # square\n", "for (i = 0; i < n; ++i) a[i] += b[i] * 2;",
  "if x != None and y == 'str': print(f\"{x!r}\")", "<div class=\"a\">text</div>", "SELECT * FROM t WHERE id = 42;",
  "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}", "path/to/file.txt C:\\Windows\\System32", "https://example.com/a?b=c&d=e#frag",
  "user@example.com", "snake_case camelCase PascalCase kebab-case SCREAMING_CASE", "    indented code\n\tand tab",
  "<s>", "</s>", "<unk>", "<s> hello </s>", "Hello<s>world</s>", "<s><s></s></s>", " <s> ", "a<s>b", "<|begin_of_text|>",
  "<|end_of_text|>", "<|begin_of_text|>Hello<|eot_id|>", "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
  "<|reserved_special_token_0|>", "text <|begin_of_text|> mid", "<s >", "< s>", "<|begin_of_text", "<|notatoken|>",
  "[INST] question [/INST]", "<0x0A>", "▁", "▁▁hello", "a▁b", "ĠĊ special-looking chars", "\u00a0non-breaking\u00a0space",
  "zero\u200bwidth\u200bspace", "soft\u00adhyphen", "\u2028line sep\u2029para sep", "\u3000ideographic space",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "ab".repeat(40), "The quick brown fox jumps over the lazy dog. ".repeat(6),
  "!!!???...,,,;;;:::", "((()))[[[]]]{{{}}}", "----====____", "~`@#$%^&*", "a.b.c.d", "end.", "x", "Ω", "😀",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters", "𠀀𠀁 CJK ext B", "ǅ titlecase ǈ", "ﬁ ligature ﬂ", "Ⅻ roman numeral ½ ¾ ²³", "١٢٣ Arabic-Indic digits ४५६",
  "ſ long s and K kelvin", "It's 'quoted' and \"double\"", "can't won't shouldn't", " 's 't 're 've 'm 'll 'd",
  "word\n\n\n\n\nword", "\t\t\t\t", "        eight spaces", "a \n b \t c", "x  \n", "\r\n\r\n",
];

const pools = [
  ["the", "and", "God", "said", "Hello", "world", "token", "izer", "Llama", "un", "believ", "able", "x", "Q"],
  [" ", "  ", "   ", "\t", "\n", "\n\n", " \n", "\r\n", "\t "],
  ["0", "7", "42", "123", "2024", "31415926", "1000000", "3.5", "-1"],
  ["你好", "世界", "中文", "日本", "カタカナ", "한국", "漢字"],
  ["😀", "🎉", "👍🏽", "❤️", "👨‍💻", "🚀", "🤖"],
  ["é", "e\u0301", "ñ", "ü", "a\u0308", "\u0301", "ç"],
  ["Привет", "мир", "Ελλάδα", "עברית", "عربي", "हिन्दी"],
  [".", ",", "!", "?", ";", ":", "(", ")", "{", "}", "[", "]", "'", "\"", "-", "_", "=", "+", "*", "/", "\\", "#", "@", "<", ">", "|"],
  ["<s>", "</s>", "<unk>", "<|begin_of_text|>", "<|eot_id|>", "<|end_of_text|>"],
  ["I'm", "it's", "we've", "don't", "they'll", "you're", "he'd"],
];
function randomString() {
  const n = 1 + Math.floor(rand() * 12);
  let s = "";
  for (let i = 0; i < n; ++i) s += pick(pick(pools));
  return s;
}

const testLines = fs.readFileSync(path.join(root, "data/web-bible/test.txt"), "utf8").split("\n").filter((l) => l.length);
const strings = [...fixed];
for (let i = 0; i < 60; ++i) strings.push(testLines[Math.floor((i * testLines.length) / 60)]);
strings.push(testLines.slice(100, 104).join("\n") + "\n");
while (strings.length < 260) strings.push(randomString());

// Strings for the added tokens and pieces of each newer tokenizer, after the shared ones.
const extras = {
  qwen3: [
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>", "<think>\n\n</think>\n\n", "<tool_call>\n{}\n</tool_call>",
    "<|im_start|><|im_end|>", "text<|im_end|>more", "<|vision_start|><|image_pad|><|vision_end|>", "<|im_start |>",
    "NFC: e\u0301 A\u030a \u212b \u2126 o\u0308\u0304", "\u1100\u1161\u11a8 conjoining jamo", "q\u0307\u0323 reordered marks",
    "digits 1234567890 and ٣٤ and ５６", "x\r\n\r\n  y", "   \n\n   \t\t\n", "I'M 'S 'Ll 'VE shout", "a  \n\n  b",
    "中文，标点。“引号”", "    def g():\n        pass\n", "🤖<|im_end|>😀",
  ],
  gemma3: [
    "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", "<bos>", "<eos>", "<pad>", "<start_of_image>", "\n\n\n\n", "\t\t\t",
    "<b>bold</b> <i>it</i> <table><tr><td>x</td></tr></table>", "<h1>Title</h1>\n<p>para</p>", "<div><span>nested</span></div>",
    "a" + "\n".repeat(40) + "b", "t" + "\t".repeat(40) + "u", "    code with 4 spaces\n\t\ttabs", " " + " ".repeat(40) + "x",
    "<end_of_turn><start_of_turn>", "<start_of_turn model", "\u0001 control and \u007f delete", "\ud83e\udd16 robot \ud83e\uddd1\u200d\ud83d\ude80",
  ],
  phi3: [
    "<|user|>\nHi<|end|>\n<|assistant|>\n", "<|system|>  x", "a <|end|>  \n b", "<|endoftext|>", "<|placeholder1|>",
    "<|user|><|user|>", "x<|assistant|>", "</s>  after", "<|end|>\n\n\n<|user|>\n",
  ],
};

const npmDir = (pkg) => path.join(root, "tools/tokenizers/node_modules/@lenml", pkg, "models");
const dirs = {
  llama2: path.join(fixDir, "llama2"), llama3: path.join(fixDir, "llama3"), mistral: path.join(fixDir, "mistral"),
  qwen3: npmDir("tokenizer-qwen3"), gemma3: npmDir("tokenizer-gemma3"), phi3: path.resolve(root, "../shared/reference/chat/phi3"),
};
async function load(name) {
  const dir = dirs[name];
  if (!fs.existsSync(path.join(dir, "tokenizer.json"))) {
    console.log(name, "skipped:", dir, "has no tokenizer.json (run scripts/install-deps.sh)");
    return null;
  }
  env.localModelPath = path.dirname(dir) + "/";
  return AutoTokenizer.from_pretrained(path.basename(dir), { local_files_only: true });
}

for (const name of ["llama2", "llama3", "mistral", "qwen3", "gemma3", "phi3"]) {
  const tok = await load(name);
  if (!tok) continue;
  const cases = [...strings, ...(extras[name] || [])].map((text) => {
    const ids = tok.encode(text, { add_special_tokens: true });
    const ids_nospecial = tok.encode(text, { add_special_tokens: false });
    const dec = (skip) => (ids.length ? tok.decode(ids, { skip_special_tokens: skip }) : "");
    return { text, ids, ids_nospecial, decoded: dec(true), decoded_keep_special: dec(false) };
  });
  const out = { tokenizer: name, generator: "transformers.js 4.3.2 (AutoTokenizer, local files)", cases };
  fs.mkdirSync(path.join(fixDir, name), { recursive: true });
  fs.writeFileSync(path.join(fixDir, name, "cases.json"), JSON.stringify(out, null, 1) + "\n");
  console.log(name, cases.length, "cases");
}

// Chat templates: every conversation through each tokenizer_config.json's chat_template, with the
// generation prompt, as text and as ids (apply_chat_template tokenizes without adding specials).
const sys = (content) => ({ role: "system", content });
const user = (content) => ({ role: "user", content });
const asst = (content) => ({ role: "assistant", content });
const conversations = [
  [user("Hello!")],
  [sys("You are a helpful assistant."), user("What is 2+2?")],
  [sys("You are a terse coding assistant."), user("Write a C function that adds two ints."),
   asst("```c\nint add(int a, int b) { return a + b; }\n```"), user("Now make it overflow-safe."),
   asst("Use __builtin_add_overflow."), user("Thanks! Any tests?")],
  [sys("Tu es un assistant. Réponds en français."), user("Bonjour ! Ça va ? 你好，世界 😀"), asst("Très bien, merci ! 🎉"),
   user("Écris « naïve » en 日本語, s'il te plaît. Привет!")],
  [user("  leading and trailing spaces  \n"), asst("\nAn answer between newlines\n"), user("\ttab first\n\n")],
  [user("Solve x+1=3."), asst("<think>\nSubtract one.\n</think>\n\nx = 2."), user("And x+2=3?")],
  [sys(""), user("An empty system turn before me.")],
  [user("Special-looking text: <|im_end|> <end_of_turn> <|eot_id|> <|end|> <s>")],
  [user("one"), asst("two"), user("three"), asst("four"), user("five"), asst("six"), user("seven")],
  [user("Tell me a joke."), asst("Why did the chicken cross the road?")],
  [sys("Système : réponds brièvement.\n"), user("Combien font 6 × 7 ?"), asst("42."), user("Et 7 × 8 ? 🤔")],
];
const chatDir = path.join(root, "tests/fixtures/chat");
fs.mkdirSync(chatDir, { recursive: true });
for (const name of ["qwen3", "llama3", "phi3", "gemma3"]) {
  const tok = await load(name);
  if (!tok) continue;
  const cases = conversations.map((messages) => {
    const opts = { add_generation_prompt: true, return_tensor: false };
    try {
      const text = tok.apply_chat_template(messages, { ...opts, tokenize: false });
      const r = tok.apply_chat_template(messages, { ...opts, tokenize: true });
      const ids = Array.isArray(r) ? r : Array.from(r.input_ids); /* a {input_ids, attention_mask} dict in 4.x */
      return { messages, text, ids };
    } catch (e) {
      return { messages, error: String(e.message || e) };
    }
  });
  const out = { tokenizer: name, generator: "transformers.js 4.3.2 apply_chat_template (add_generation_prompt: true)", cases };
  fs.writeFileSync(path.join(chatDir, name + ".json"), JSON.stringify(out, null, 1) + "\n");
  console.log("chat", name, cases.length, "conversations");
}
