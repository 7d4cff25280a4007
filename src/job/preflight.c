#include "preflight.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdq/file.h"
#include "pdq/tokenizer.h"

/* A text input named by option opt: exists, is a readable non-empty file. */
static int check_input(const job_ctx *j, const char *opt, const char *path) {
    long long size = 0;
    pdq_path_kind k = pdq_path_stat(path, &size, NULL);
    if (k == PDQ_PATH_NONE) {
        return job_fail(j, PDQ_ERR_IO, "%s %s: cannot open (%s)", opt, path, strerror(errno));
    }
    if (k == PDQ_PATH_DIR) {
        return job_fail(j, PDQ_ERR_IO, "%s %s: is a directory, not a text file", opt, path);
    }
    if (!pdq_path_readable(path)) {
        return job_fail(j, PDQ_ERR_IO, "%s %s: cannot open (%s)", opt, path, strerror(errno));
    }
    if (k == PDQ_PATH_FILE && size == 0) { /* a pipe is not probed: that would eat its bytes */
        return job_fail(j, PDQ_ERR_IO, "%s %s: the file is empty", opt, path);
    }
    return 0;
}

/* --out: created, not the source model, and writable (a probe file, removed again). */
static int check_out(const job_ctx *j, const char *src, const char *out) {
    pdq_status dst = {0};
    if (pdq_dir_make(out, 1, &dst) != PDQ_OK) {
        return job_fail(j, PDQ_ERR_IO, "--out %s: cannot create the directory (%s)", out, dst.msg);
    }
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(src, a) && realpath(out, b) && strcmp(a, b) == 0) {
        return job_fail(j, PDQ_ERR_ARG, "--out %s is the source model directory: choose another one", out);
    }
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s/.pdq-write-probe", out);
    pdq_status st = {0};
    pdq_file_writer *w;
    if (pdq_file_begin(probe, NULL, &w, &st) != PDQ_OK) { /* a temp file beside probe, removed again */
        return job_fail(j, PDQ_ERR_IO, "--out %s: cannot write there (%s)", out, st.msg);
    }
    pdq_file_abort(w);
    return 0;
}

int quantize_preflight(const job_ctx *j, quantize_plan *p, const pdq_model *m) {
    const pdq_config *c = &m->cfg;
    pdq_status st = {0};
    int quant_act = p->abits != PDQ_ADT_FLOAT;
    /* every tensor's scheme against its shape: bits, group divisibility, overrides, tied head */
    if (pdq_quant_opts_check(m, p->qo, &st) != PDQ_OK) {
        return job_fail(j, PDQ_ERR_ARG, "%s", st.msg);
    }
    /* every path the job takes computes the family's features, or it stops before any work */
    if ((quant_act && pdq_family_require(c, PDQ_PATH_STATIC, &st)) ||
        (p->export_list && pdq_family_require(c, PDQ_PATH_EXPORT, &st))) {
        return job_fail(j, PDQ_ERR_UNSUPPORTED, "%s", st.msg);
    }
    const pdq_qscheme *s = &p->qo->gptq.scheme;
    /* Circle holds groups of contiguous columns (BlockwiseQuantization); GPTQ's act-order groups
     * without static groups are not contiguous */
    if (p->export_list && s->group > 0 && p->qo->method == PDQ_QM_GPTQ && p->qo->gptq.actorder &&
        !p->qo->gptq.static_groups) {
        return job_fail(j, PDQ_ERR_ARG, "--group %d with act-order GPTQ puts columns in groups out of order, which "
                        "Circle files cannot hold: add --static-groups (or --no-actorder), or drop --group or --export",
                        s->group);
    }
    if ((quant_act || p->export_list) && c->max_position_embeddings > 0 && p->ro->max_seq > c->max_position_embeddings) {
        return job_fail(j, PDQ_ERR_ARG, "--max-seq %d exceeds the model's max_position_embeddings %d", p->ro->max_seq,
                c->max_position_embeddings);
    }
    if (p->seq_len > 0 && p->qo->method == PDQ_QM_RTN && !quant_act)
        job_note(j, "note: --seq-len is unused (RTN needs no calibration windows)");
    if (p->eval && p->eval_stride > p->eval_len) {
        return job_fail(j, PDQ_ERR_ARG, "--eval-stride %d exceeds --eval-len %d: tokens between windows would not be scored",
                p->eval_stride, p->eval_len);
    }
    if (p->known_fp32 > 0 && !p->eval) {
        return job_fail(j, PDQ_ERR_ARG, "--eval-fp32-ppl is the FP32 perplexity of the --eval file: give --eval FILE");
    }
    if (p->calib && check_input(j, "--calib", p->calib)) return 1;
    if (p->eval && check_input(j, "--eval", p->eval)) return 1;
    return p->out ? check_out(j, p->src, p->out) : 0; /* NULL: a rank that does not write */
}

int quantize_check_verify(const job_ctx *j, const char *src, const pdq_ptq_run_opts *ro) {
    const char *const *texts = ro->prompts;
    int np = ro->prompts ? ro->n_prompts : pdq_ptq_verify_prompts(&texts), longest = 0;
    pdq_tokenizer *tok = NULL;
    pdq_status st = {0};
    if (pdq_tokenizer_load(src, &tok, &st) != PDQ_OK) {
        return job_fail(j, st.code == PDQ_ERR_ARG ? PDQ_ERR_IO : st.code, "%s", st.msg);
    }
    for (int i = 0; i < np; i++) {
        int32_t *ids = NULL;
        size_t n = 0;
        if (pdq_tokenizer_encode(tok, texts[i], strlen(texts[i]), 1, &ids, &n, &st) == PDQ_OK && (int)n > longest)
            longest = (int)n;
        free(ids);
    }
    pdq_tokenizer_free(tok);
    if (longest + ro->verify_steps > ro->max_seq) {
        return job_fail(j, PDQ_ERR_ARG, "the verify step needs the longest verify prompt (%d tokens) + --verify-steps %d "
                        "<= --max-seq %d: raise --max-seq or lower --verify-steps", longest, ro->verify_steps, ro->max_seq);
    }
    return 0;
}

static const char *yes(int v) { return v ? "yes" : "no"; }

void quantize_print_config(const job_ctx *j, const quantize_plan *p, const pdq_model *m) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return;
    const pdq_quant_opts *q = p->qo;
    const pdq_qscheme *s = &q->gptq.scheme;
    char group[32];
    if (s->per_tensor) snprintf(group, sizeof group, "per-tensor");
    else if (s->group) snprintf(group, sizeof group, "group %d%s", s->group, s->partial_groups ? " (partial)" : "");
    else snprintf(group, sizeof group, "per-channel");
    fprintf(f, "pdq quantize: %s -> %s (%d layers, hidden %d, vocab %d)\n", p->src, p->out, m->cfg.n_layers,
            m->cfg.hidden_size, m->cfg.vocab_size);
    fprintf(f, "  weights      %s w%d %s %s", q->method == PDQ_QM_GPTQ ? "gptq" : "rtn", s->bits, group,
            s->sym ? "sym" : "asym");
    if (q->method == PDQ_QM_GPTQ)
        fprintf(f, ", act-order %s, percdamp %g, block %d", yes(q->gptq.actorder), (double)q->gptq.percdamp, q->gptq.blocksize);
    if (s->mse) fprintf(f, ", mse search");
    for (int i = 0; i < q->n_overrides; i++) fprintf(f, "%s%s=%d", i ? "," : "; overrides ", q->overrides[i].name, q->overrides[i].bits);
    char eb[24], lb[32];
    if (q->embed_bits) snprintf(eb, sizeof eb, "uint%d rtn", q->embed_bits);
    else snprintf(eb, sizeof eb, "float");
    if (q->lm_head_bits) snprintf(lb, sizeof lb, "uint%d %s", q->lm_head_bits, q->lm_head_gptq ? "gptq" : "rtn");
    else snprintf(lb, sizeof lb, "float");
    fprintf(f, "\n  embed/head   embedding %s, lm_head %s%s\n", eb, lb, m->cfg.tie_word_embeddings ? " (tied)" : "");
    if (q->method == PDQ_QM_GPTQ) {
        if (p->seq_len > 0) fprintf(f, "  calibration  %s: %d windows x %d tokens, seed %llu\n", p->calib, p->nsamples, p->seq_len, (unsigned long long)q->seed);
        else fprintf(f, "  calibration  %s: %d windows x auto tokens, seed %llu\n", p->calib, p->nsamples, (unsigned long long)q->seed);
    }
    const pdq_ptq_run_opts *r = p->ro;
    if (p->abits != PDQ_ADT_FLOAT)
        fprintf(f, "  activations  %s, %s observer, max_seq %d, %d windows, %d decode steps, rope %s, scale %s, layout %s\n",
                pdq_adtype_name((pdq_adtype)p->abits), pdq_obs_name(r->po.observer), r->max_seq, r->nsamples, r->decode_steps,
                r->so.rope == PDQ_RT_ROPE_PRE_NEGATED_SIN ? "pre_negated_sin" : "hf",
                r->so.scale == PDQ_RT_SCALE_K_PROJ ? "k_proj" : "none",
                r->so.layout == PDQ_RT_LAYOUT_UNROLLED ? "unrolled" : "batched");
    else fprintf(f, "  activations  float (no --calib / --abits none)\n");
    if (p->eval) fprintf(f, "  evaluation   %s, windows %d stride %d%s\n", p->eval, p->eval_len, p->eval_stride,
                         p->known_fp32 > 0 ? ", FP32 perplexity given" : "");
    if (p->export_list)
        fprintf(f, "  export       %s -> %s/circle (%s files, max_seq %d)\n", p->export_list, p->out,
                p->abits != PDQ_ADT_FLOAT ? "quantized .q.circle" : "float .circle", r->max_seq);
    if (p->threads > 0) fprintf(f, "  threads      %d\n", p->threads);
    else fprintf(f, "  threads      all cores\n");
    fclose(f);
    job_text(j, "%s", text);
    free(text);
}
