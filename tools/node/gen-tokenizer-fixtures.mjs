// Dev-time generator of tokenizer test fixtures with the real Hugging Face implementation
// (transformers.js AutoTokenizer, local files only). Not needed to build or test pdq.
//   cd tools/node && npm install --ignore-scripts && node gen-tokenizer-fixtures.mjs
// Writes tests/fixtures/tokenizers/<name>/cases.json for llama2, llama3 and mistral.
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

for (const name of ["llama2", "llama3", "mistral"]) {
  const tok = await AutoTokenizer.from_pretrained(name, { local_files_only: true });
  const cases = strings.map((text) => {
    const ids = tok.encode(text, { add_special_tokens: true });
    const ids_nospecial = tok.encode(text, { add_special_tokens: false });
    const dec = (skip) => (ids.length ? tok.decode(ids, { skip_special_tokens: skip }) : "");
    return { text, ids, ids_nospecial, decoded: dec(true), decoded_keep_special: dec(false) };
  });
  const out = { tokenizer: name, generator: "transformers.js 4.3.2 (AutoTokenizer, local files)", cases };
  fs.writeFileSync(path.join(fixDir, name, "cases.json"), JSON.stringify(out, null, 1) + "\n");
  console.log(name, cases.length, "cases");
}
