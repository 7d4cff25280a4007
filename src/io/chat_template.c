/* Choosing a chat template: by name, or by detecting the format of tokenizer_config.json's
 * chat_template (else chat_template.jinja) with the substring checks llama.cpp uses for its
 * built-in templates, in its order (ChatML before Mistral before Phi-3 before Gemma before
 * Llama-3), refined where one of llama.cpp's formats covers templates that render differently
 * (a ChatML default system turn, Phi-4-mini's tags without newlines, Llama-3.1's date block). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pdq/chat_template.h"
#include "pdq/file.h"

static const char *const k_names[] = {"none",    "chatml",   "qwen3",     "llama3", "phi3",
                                      "gemma",   "qwen2.5",  "llama3.1",  "phi4-mini", "mistral"};

const char *pdq_chat_template_names(void) { return "chatml, qwen3, llama3, phi3, gemma, qwen2.5, llama3.1, phi4-mini, mistral"; }

/* Qwen2.5's own default system text (the qwen2.5 name; a detected template gives its own). */
#define QWEN25_SYSTEM "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
#define SYSTEM_OPEN "<|im_start|>system\\n" /* as the Jinja source spells it: a backslash and n */

/* The literal system turn a ChatML template writes when the conversation has none: the text of
 * '<|im_start|>system\n...<|im_end|>' inside one quoted string, or NULL. */
static const char *default_system(const char *tmpl, size_t *len) {
    for (const char *p = strstr(tmpl, SYSTEM_OPEN); p; p = strstr(p + 1, SYSTEM_OPEN)) {
        if (p == tmpl || (p[-1] != '\'' && p[-1] != '"')) continue;
        const char *a = p + strlen(SYSTEM_OPEN), *z = strstr(a, "<|im_end|>");
        if (!z || z == a || memchr(a, p[-1], (size_t)(z - a)) || memchr(a, '\\', (size_t)(z - a))) continue;
        *len = (size_t)(z - a);
        return a;
    }
    return NULL;
}

const char *pdq_chat_template_name(pdq_chat_kind k) {
    return (unsigned)k < sizeof k_names / sizeof k_names[0] ? k_names[k] : "none";
}

pdq_chat_kind pdq_chat_template_detect(const char *tmpl) {
#define HAS(s) (strstr(tmpl, s) != NULL)
    size_t n;
    if (HAS("<|im_start|>")) {
        if (HAS("<|im_sep|>")) return PDQ_CHAT_NONE; /* Phi-4's variant: not built in */
        if (HAS("</think>")) return PDQ_CHAT_QWEN3;
        return default_system(tmpl, &n) ? PDQ_CHAT_QWEN25 : PDQ_CHAT_CHATML;
    }
    if (HAS("[INST]")) { /* Mistral v0.1's exact turns; Llama-2's <<SYS>>, later Mistrals: not built in */
        int v01 = HAS("'[INST] ' + message['content'] + ' [/INST]'") && HAS("message['content'] + eos_token") &&
                  !HAS("' [INST] '") && !HAS("<<SYS>>") && !HAS("system_message");
        return v01 ? PDQ_CHAT_MISTRAL : PDQ_CHAT_NONE;
    }
    if (HAS("<|assistant|>") && HAS("<|end|>"))
        return HAS("|>' + message['content']") || HAS("<|tool|>") ? PDQ_CHAT_PHI4MINI : PDQ_CHAT_PHI3;
    if (HAS("<|assistant|>") || HAS("<|user|>")) return PDQ_CHAT_NONE; /* Falcon 3, GLM-Edge, Zephyr */
    if (HAS("<start_of_turn>")) return PDQ_CHAT_GEMMA;
    if (HAS("<|start_header_id|>") && HAS("<|end_header_id|>"))
        return HAS("Cutting Knowledge Date") ? PDQ_CHAT_LLAMA31 : PDQ_CHAT_LLAMA3;
    return PDQ_CHAT_NONE;
#undef HAS
}

static pdq_code by_name(const char *name, pdq_chat_kind *out, pdq_status *st) {
    for (int k = 1; k < (int)(sizeof k_names / sizeof k_names[0]); k++)
        if (strcmp(name, k_names[k]) == 0) {
            *out = (pdq_chat_kind)k;
            return PDQ_OK;
        }
    return pdq_fail(st, PDQ_ERR_UNSUPPORTED, "unknown chat template '%.60s' (known: %s)", name, pdq_chat_template_names());
}

static const char *token_text(const cJSON *v) {
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

/* The chat_template string: itself, or the "default" entry of a list of {name, template}. */
static const char *template_text(const cJSON *v) {
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *e;
    if (!cJSON_IsArray(v)) return NULL;
    cJSON_ArrayForEach(e, v) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name"), *t = cJSON_GetObjectItemCaseSensitive(e, "template");
        if (cJSON_IsString(n) && strcmp(n->valuestring, "default") == 0 && cJSON_IsString(t)) return t->valuestring;
    }
    return NULL;
}

pdq_code pdq_chat_template_load(const char *dir, const char *name, pdq_chat_template *out, pdq_status *st) {
    memset(out, 0, sizeof *out);
    char path[4096], jpath[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    snprintf(jpath, sizeof jpath, "%s/chat_template.jinja", dir);
    pdq_code rc = name ? by_name(name, &out->kind, st) : PDQ_OK;
    if (rc) return rc;
    char *buf = NULL, *jbuf = NULL;
    size_t len = 0;
    pdq_status ignore = {0};
    cJSON *cfg = NULL;
    if (pdq_file_read(path, PDQ_FILE_MAX_JSON, &buf, &len, &ignore) == PDQ_OK) {
        cfg = cJSON_ParseWithLength(buf, len);
        free(buf);
        if (!cJSON_IsObject(cfg)) {
            cJSON_Delete(cfg);
            return pdq_fail(st, PDQ_ERR_FORMAT, "%s: not a valid JSON object", path);
        }
    }
    const char *bos = token_text(cJSON_GetObjectItemCaseSensitive(cfg, "bos_token"));
    size_t bos_len = bos ? strlen(bos) : 0;
    if (bos_len >= sizeof out->bos) {
        cJSON_Delete(cfg);
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: bos_token of %zu bytes exceeds %zu", path, bos_len, sizeof out->bos - 1);
    }
    if (bos) memcpy(out->bos, bos, strlen(bos) + 1);
    const char *eos = token_text(cJSON_GetObjectItemCaseSensitive(cfg, "eos_token"));
    size_t eos_len = eos ? strlen(eos) : 0; /* eos lives in cfg: measured before cfg is freed */
    if (eos_len >= sizeof out->eos) {
        cJSON_Delete(cfg);
        return pdq_fail(st, PDQ_ERR_LIMIT, "%s: eos_token of %zu bytes exceeds %zu", path, eos_len, sizeof out->eos - 1);
    }
    snprintf(out->eos, sizeof out->eos, "%s", eos ? eos : "</s>");
    snprintf(out->reply_close, sizeof out->reply_close, "%s", out->eos);
    const char *tmpl = template_text(cJSON_GetObjectItemCaseSensitive(cfg, "chat_template")), *from = path;
    if (!tmpl && pdq_file_read(jpath, PDQ_FILE_MAX_JSON, &jbuf, &len, &ignore) == PDQ_OK) {
        tmpl = jbuf;
        from = jpath;
    }
    if (!name && tmpl && (out->kind = pdq_chat_template_detect(tmpl)) == PDQ_CHAT_NONE)
        rc = pdq_fail(st, PDQ_ERR_UNSUPPORTED, "%s: chat_template is none of the built-in formats (%s)", from,
                      pdq_chat_template_names());
    if (tmpl && strstr(tmpl, "message['content'] + eos_token + ' '"))
        snprintf(out->reply_close, sizeof out->reply_close, "%s ", out->eos);
    size_t n = 0;
    const char *sys = tmpl ? default_system(tmpl, &n) : NULL;
    if (!rc && sys && n >= sizeof out->default_system)
        rc = pdq_fail(st, PDQ_ERR_LIMIT, "%s: the default system text of %zu bytes exceeds %zu", from, n,
                      sizeof out->default_system - 1);
    if (!rc && sys) snprintf(out->default_system, sizeof out->default_system, "%.*s", (int)n, sys);
    else snprintf(out->default_system, sizeof out->default_system, "%s", QWEN25_SYSTEM);
    /* Llama-3.1 writes a fixed date; Llama-3.2's template asks for today's (HF: the local date) */
    time_t now = time(NULL);
    struct tm tmv;
    if (tmpl && strstr(tmpl, "strftime_now") && localtime_r(&now, &tmv)) strftime(out->date, sizeof out->date, "%d %b %Y", &tmv);
    else snprintf(out->date, sizeof out->date, "26 Jul 2024");
    free(jbuf);
    cJSON_Delete(cfg);
    return rc;
}
