/* The reference and default prompts of pdq verify (see verify_ref.h). */
#include "verify_ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "pdq/quant.h"

int verify_ref_open(const char *cmd, const char *dir, const char *ref_dir, pdq_model *m, int threads, verify_ref *r) {
    memset(r, 0, sizeof *r);
    if (!ref_dir) {
        r->model = m;
        r->fp32 = !pdq_quant_is_checkpoint(dir);
        if (r->fp32) snprintf(r->name, sizeof r->name, "FP32 model %s", dir);
        else snprintf(r->name, sizeof r->name, "dequantized weights of %s (float activations; --ref DIR for FP32)", dir);
        return 0;
    }
    if (!(r->model = cli_load_model(cmd, ref_dir, threads))) return -1;
    r->owned = 1;
    const pdq_config *a = &m->cfg, *b = &r->model->cfg;
    if (a->vocab_size != b->vocab_size || a->hidden_size != b->hidden_size || a->n_layers != b->n_layers) {
        fprintf(stderr, "pdq %s: --ref %s is not the same model as %s (vocab %d/%d, hidden %d/%d, layers %d/%d)\n", cmd,
                ref_dir, dir, b->vocab_size, a->vocab_size, b->hidden_size, a->hidden_size, b->n_layers,
                a->n_layers);
        verify_ref_close(r);
        return -1;
    }
    r->fp32 = !pdq_quant_is_checkpoint(ref_dir);
    snprintf(r->name, sizeof r->name, "%s model %s", r->fp32 ? "FP32" : "dequantized", ref_dir);
    return 0;
}

void verify_ref_close(verify_ref *r) {
    if (r->owned) pdq_model_free(r->model);
    memset(r, 0, sizeof *r);
}

int verify_default_prompts(const char *cmd, const char *text_file, const pdq_tokenizer *tok, const pdq_config *cfg,
                           int max_tokens, int32_t **rows, int *lens, int max_rows) {
    if (max_tokens < 1) max_tokens = 1;
    if (!text_file) {
        int bos = tok ? pdq_tokenizer_bos_id(tok) : -1;
        if (bos < 0) bos = cfg->bos_token_id;
        if (bos < 0) {
            fprintf(stderr, "pdq %s: no prompt given and the model has no BOS token: pass --prompt, --ids or --text FILE\n", cmd);
            return -1;
        }
        if (!(rows[0] = malloc(sizeof(int32_t)))) { fprintf(stderr, "pdq %s: out of memory\n", cmd); return -1; }
        rows[0][0] = bos;
        lens[0] = 1;
        fprintf(stderr, "pdq %s: prompt: BOS (%d) alone\n", cmd, bos);
        return 1;
    }
    if (!tok) { fprintf(stderr, "pdq %s: --text needs the model's tokenizer\n", cmd); return -1; }
    size_t len;
    char *buf = cli_read_text(cmd, text_file, &len);
    if (!buf) return -1;
    int n = 0;
    pdq_status st = {0};
    for (char *line = buf, *next; line && *line && n < max_rows; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        size_t k = strlen(line);
        while (k && (line[k - 1] == '\r' || line[k - 1] == ' ' || line[k - 1] == '\t')) line[--k] = 0;
        if (!k) continue;
        size_t nn;
        if (pdq_tokenizer_encode(tok, line, k, 1, &rows[n], &nn, &st) != PDQ_OK) {
            fprintf(stderr, "pdq %s: %s: %s\n", cmd, text_file, st.msg);
            for (int i = 0; i < n; i++) free(rows[i]);
            free(buf);
            return -1;
        }
        lens[n] = nn > (size_t)max_tokens ? max_tokens : (int)nn;
        n++;
    }
    free(buf);
    if (!n) { fprintf(stderr, "pdq %s: %s has no non-empty line to use as a prompt\n", cmd, text_file); return -1; }
    fprintf(stderr, "pdq %s: prompts: the first %d line%s of %s (at most %d tokens each)\n", cmd, n, n > 1 ? "s" : "", text_file,
            max_tokens);
    return n;
}
