/* Rendering a conversation with a built-in chat template. Each format is its turn pieces (open,
 * close, trimming, BOS) plus the rules its published Jinja template adds: Phi-3 skips an empty
 * system turn, Gemma folds the system turn into the first user turn and requires alternating
 * roles, Qwen3 drops the <think> block of assistant turns before the last user turn, Qwen2.5
 * writes its default system turn when the conversation has none, Llama-3.1 always opens with a
 * system turn carrying its knowledge/date block, Mistral v0.1 requires alternating user/assistant
 * turns without a system turn. Trimming is JavaScript's String.trim (Jinja's `trim` in
 * transformers.js and @huggingface/jinja, the references). */
#include <stdlib.h>
#include <string.h>

#include "pdq/chat_template.h"
#include "tokenizer_internal.h"

typedef struct { const char *p; size_t n; } span;

static span trim_js(span s) {
    while (s.n) {
        uint32_t cp;
        int l = tk_utf8_decode1(s.p, s.n, &cp);
        if (!tk_is_js_space(cp)) break;
        s.p += l;
        s.n -= (size_t)l;
    }
    while (s.n) {
        size_t k = s.n - 1;
        while (k > 0 && ((unsigned char)s.p[k] & 0xC0) == 0x80) k--;
        uint32_t cp;
        tk_utf8_decode1(s.p + k, s.n - k, &cp);
        if (!tk_is_js_space(cp)) break;
        s.n = k;
    }
    return s;
}

static span strip_nl(span s, int left, int right) { /* Python's str.lstrip/rstrip('\n') */
    while (left && s.n && s.p[0] == '\n') { s.p++; s.n--; }
    while (right && s.n && s.p[s.n - 1] == '\n') s.n--;
    return s;
}

static const char *find_last(span s, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = s.n >= k ? s.n - k + 1 : 0; i-- > 0;)
        if (memcmp(s.p + i, needle, k) == 0) return s.p + i;
    return NULL;
}

static const char *find_first(span s, const char *needle) { return memmem(s.p, s.n, needle, strlen(needle)); }

static int put(tk_buf *b, const char *s) { return tk_buf_put(b, s, strlen(s)); }
static int put_span(tk_buf *b, span s) { return tk_buf_put(b, s.p, s.n); }

/* What closes a turn of `role`. */
static const char *close_of(const pdq_chat_template *t, const char *role) {
    switch (t->kind) {
    case PDQ_CHAT_CHATML:
    case PDQ_CHAT_QWEN25:
    case PDQ_CHAT_QWEN3: return "<|im_end|>\n";
    case PDQ_CHAT_LLAMA3:
    case PDQ_CHAT_LLAMA31: return "<|eot_id|>";
    case PDQ_CHAT_PHI3: return "<|end|>\n";
    case PDQ_CHAT_PHI4MINI: return "<|end|>";
    case PDQ_CHAT_GEMMA: return "<end_of_turn>\n";
    case PDQ_CHAT_MISTRAL: return strcmp(role, "user") ? t->reply_close : " [/INST]";
    default: return "";
    }
}

const char *pdq_chat_end_of_turn(const pdq_chat_template *t) {
    switch (t->kind) {
    case PDQ_CHAT_CHATML:
    case PDQ_CHAT_QWEN25:
    case PDQ_CHAT_QWEN3: return "<|im_end|>";
    case PDQ_CHAT_LLAMA3:
    case PDQ_CHAT_LLAMA31: return "<|eot_id|>";
    case PDQ_CHAT_PHI3:
    case PDQ_CHAT_PHI4MINI: return "<|end|>";
    case PDQ_CHAT_GEMMA: return "<end_of_turn>";
    case PDQ_CHAT_MISTRAL: return t->eos;
    default: return NULL;
    }
}

static int put_open(tk_buf *b, pdq_chat_kind k, const char *role) {
    switch (k) {
    case PDQ_CHAT_CHATML:
    case PDQ_CHAT_QWEN25:
    case PDQ_CHAT_QWEN3: return put(b, "<|im_start|>") || put(b, role) || put(b, "\n");
    case PDQ_CHAT_LLAMA3:
    case PDQ_CHAT_LLAMA31: return put(b, "<|start_header_id|>") || put(b, role) || put(b, "<|end_header_id|>\n\n");
    case PDQ_CHAT_PHI3: return put(b, "<|") || put(b, role) || put(b, "|>\n");
    case PDQ_CHAT_PHI4MINI: return put(b, "<|") || put(b, role) || put(b, "|>");
    case PDQ_CHAT_GEMMA: return put(b, "<start_of_turn>") || put(b, strcmp(role, "assistant") ? role : "model") || put(b, "\n");
    case PDQ_CHAT_MISTRAL: return strcmp(role, "user") ? 0 : put(b, "[INST] ");
    default: return 0;
    }
}

static int trims(pdq_chat_kind k) { return k == PDQ_CHAT_LLAMA3 || k == PDQ_CHAT_LLAMA31 || k == PDQ_CHAT_GEMMA; }

/* Whether the template requires user/assistant/user/... after an optional system turn (which
 * Mistral v0.1 does not allow at all). */
static pdq_code check_alternation(const pdq_chat_template *t, const pdq_chat_msg *m, size_t n, size_t first,
                                  pdq_status *st) {
    const char *name = pdq_chat_template_name(t->kind);
    for (size_t i = first; i < n; i++)
        if ((strcmp(m[i].role, "user") == 0) != ((i - first) % 2 == 0) ||
            (t->kind == PDQ_CHAT_MISTRAL && strcmp(m[i].role, "system") == 0))
            return pdq_fail(st, PDQ_ERR_ARG, "chat: message %zu (%s): the %s template needs roles alternating "
                            "user/assistant/user/...%s", i, m[i].role, name,
                            t->kind == PDQ_CHAT_MISTRAL ? " and no system turn" : "");
    return PDQ_OK;
}

/* Qwen3: an assistant turn after the last user query keeps its reasoning in a <think> block when it
 * is the last message or has reasoning; other assistant turns show only the text after </think>. */
static int put_qwen3_assistant(tk_buf *b, span c, int after_query, int last) {
    span content = c, reason = {"", 0};
    const char *end = find_last(c, "</think>");
    if (end) {
        content = strip_nl((span){end + 8, (size_t)(c.p + c.n - end - 8)}, 1, 0);
        span before = strip_nl((span){c.p, (size_t)(find_first(c, "</think>") - c.p)}, 0, 1);
        const char *open = find_last(before, "<think>");
        reason = strip_nl(open ? (span){open + 7, (size_t)(before.p + before.n - open - 7)} : before, 1, 0);
    }
    if (after_query && (last || reason.n))
        return put(b, "<think>\n") || put_span(b, strip_nl(reason, 1, 1)) || put(b, "\n</think>\n\n") ||
               put_span(b, strip_nl(content, 1, 0));
    return put_span(b, content);
}

static int is_tool_response(const char *s) {
    size_t n = strlen(s), a = strlen("<tool_response>"), z = strlen("</tool_response>");
    return n >= a && memcmp(s, "<tool_response>", a) == 0 && n >= z && memcmp(s + n - z, "</tool_response>", z) == 0;
}

pdq_code pdq_chat_render(const pdq_chat_template *t, const pdq_chat_msg *m, size_t n, int add_generation_prompt,
                         char **text, pdq_status *st) {
    *text = NULL;
    const char *name = pdq_chat_template_name(t->kind);
    if (t->kind == PDQ_CHAT_NONE) return pdq_fail(st, PDQ_ERR_ARG, "chat: the model has no chat template");
    if (n == 0) return pdq_fail(st, PDQ_ERR_ARG, "chat: the conversation is empty");
    for (size_t i = 0; i < n; i++) {
        const char *r = m[i].role;
        size_t len = strlen(m[i].content);
        if (tk_utf8_valid_prefix(m[i].content, len) != len)
            return pdq_fail(st, PDQ_ERR_ARG, "chat: message %zu: content is not valid UTF-8", i);
        if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant"))
            return pdq_fail(st, PDQ_ERR_ARG, "chat: message %zu: role '%.40s' is not supported by the %s template (system, user, assistant)",
                            i, r, name);
    }
    size_t first = 0, last_query = n - 1;
    if (t->kind == PDQ_CHAT_GEMMA || t->kind == PDQ_CHAT_LLAMA31) first = strcmp(m[0].role, "system") == 0;
    if (t->kind == PDQ_CHAT_GEMMA || t->kind == PDQ_CHAT_MISTRAL) {
        pdq_code arc = check_alternation(t, m, n, first, st);
        if (arc) return arc;
    }
    for (size_t i = n; i-- > 0;)
        if (strcmp(m[i].role, "user") == 0 && !is_tool_response(m[i].content)) { last_query = i; break; }
    tk_buf b = {0};
    int rc = tk_buf_put(&b, "", 0);
    if ((t->kind == PDQ_CHAT_LLAMA3 || t->kind == PDQ_CHAT_LLAMA31 || t->kind == PDQ_CHAT_GEMMA ||
         t->kind == PDQ_CHAT_MISTRAL) && !rc)
        rc = put(&b, t->bos);
    if (t->kind == PDQ_CHAT_QWEN25 && strcmp(m[0].role, "system") && !rc)
        rc = put_open(&b, t->kind, "system") || put(&b, t->default_system) || put(&b, close_of(t, "system"));
    if (t->kind == PDQ_CHAT_LLAMA31 && !rc) { /* the system turn, whatever the conversation has */
        span sys = first ? trim_js((span){m[0].content, strlen(m[0].content)}) : (span){"", 0};
        rc = put_open(&b, t->kind, "system") || put(&b, "Cutting Knowledge Date: December 2023\nToday Date: ") ||
             put(&b, t->date) || put(&b, "\n\n") || put_span(&b, sys) || put(&b, close_of(t, "system"));
    }
    for (size_t i = first; i < n && !rc; i++) {
        span c = {m[i].content, strlen(m[i].content)};
        if (t->kind == PDQ_CHAT_PHI3 && c.n == 0 && strcmp(m[i].role, "system") == 0) continue;
        rc = put_open(&b, t->kind, m[i].role);
        if (!rc && t->kind == PDQ_CHAT_GEMMA && i == first && first == 1)
            rc = put(&b, m[0].content) || put(&b, "\n\n"); /* the system turn, untrimmed */
        if (rc) break;
        if (t->kind == PDQ_CHAT_QWEN3 && strcmp(m[i].role, "assistant") == 0)
            rc = put_qwen3_assistant(&b, c, i > last_query, i + 1 == n);
        else
            rc = put_span(&b, trims(t->kind) ? trim_js(c) : c);
        if (!rc) rc = put(&b, close_of(t, m[i].role));
    }
    if (!rc && add_generation_prompt) rc = put_open(&b, t->kind, "assistant");
    if (rc) {
        free(b.p);
        return pdq_fail(st, PDQ_ERR_NOMEM, "chat: out of memory");
    }
    *text = b.p;
    return PDQ_OK;
}

pdq_code pdq_chat_render_next(const pdq_chat_template *t, const char *user, char **text, pdq_status *st) {
    *text = NULL;
    if (t->kind == PDQ_CHAT_NONE) return pdq_fail(st, PDQ_ERR_ARG, "chat: the model has no chat template");
    span c = {user, strlen(user)};
    if (tk_utf8_valid_prefix(c.p, c.n) != c.n) return pdq_fail(st, PDQ_ERR_ARG, "chat: the line is not valid UTF-8");
    tk_buf b = {0};
    if (put(&b, close_of(t, "assistant")) || put_open(&b, t->kind, "user") ||
        put_span(&b, trims(t->kind) ? trim_js(c) : c) || put(&b, close_of(t, "user")) ||
        put_open(&b, t->kind, "assistant")) {
        free(b.p);
        return pdq_fail(st, PDQ_ERR_NOMEM, "chat: out of memory");
    }
    *text = b.p;
    return PDQ_OK;
}
