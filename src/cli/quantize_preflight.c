#include "quantize_preflight.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "pdq/file.h"
#include "pdq/tokenizer.h"

/* A text input named by option opt: exists, is a readable non-empty file. */
static int check_input(const char *opt, const char *path) {
    long long size = 0;
    pdq_path_kind k = pdq_path_stat(path, &size, NULL);
    if (k == PDQ_PATH_NONE) {
        fprintf(stderr, "pdq quantize: %s %s: cannot open (%s)\n", opt, path, strerror(errno));
        return 1;
    }
    if (k == PDQ_PATH_DIR) {
        fprintf(stderr, "pdq quantize: %s %s: is a directory, not a text file\n", opt, path);
        return 1;
    }
    if (!pdq_path_readable(path)) {
        fprintf(stderr, "pdq quantize: %s %s: cannot open (%s)\n", opt, path, strerror(errno));
        return 1;
    }
    if (k == PDQ_PATH_FILE && size == 0) { /* a pipe is not probed: that would eat its bytes */
        fprintf(stderr, "pdq quantize: %s %s: the file is empty\n", opt, path);
        return 1;
    }
    return 0;
}

/* --out: created, not the source model, and writable (a probe file, removed again). */
static int check_out(const char *src, const char *out) {
    pdq_status dst = {0};
    if (pdq_dir_make(out, 1, &dst) != PDQ_OK) {
        fprintf(stderr, "pdq quantize: --out %s: cannot create the directory (%s)\n", out, dst.msg);
        return 1;
    }
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(src, a) && realpath(out, b) && strcmp(a, b) == 0) {
        fprintf(stderr, "pdq quantize: --out %s is the source model directory: choose another one\n", out);
        return ARGS_USAGE_EXIT;
    }
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s/.pdq-write-probe", out);
    pdq_status st = {0};
    pdq_file_writer *w;
    if (pdq_file_begin(probe, NULL, &w, &st) != PDQ_OK) { /* a temp file beside probe, removed again */
        fprintf(stderr, "pdq quantize: --out %s: cannot write there (%s)\n", out, st.msg);
        return 1;
    }
    pdq_file_abort(w);
    return 0;
}

int quantize_preflight(quantize_plan *p, const pdq_model *m) {
    const pdq_config *c = &m->cfg;
    pdq_status st = {0};
    int quant_act = p->abits != PDQ_ADT_FLOAT;
    /* every tensor's scheme against its shape: bits, group divisibility, overrides, tied head */
    if (pdq_quant_opts_check(m, p->qo, &st) != PDQ_OK) {
        fprintf(stderr, "pdq quantize: %s\n", st.msg);
        return ARGS_USAGE_EXIT;
    }
    /* every path the job takes computes the family's features, or it stops before any work */
    if ((quant_act && pdq_family_require(c, PDQ_PATH_STATIC, &st)) ||
        (p->export_list && pdq_family_require(c, PDQ_PATH_EXPORT, &st))) {
        fprintf(stderr, "pdq quantize: %s\n", st.msg);
        return 1;
    }
    const pdq_qscheme *s = &p->qo->gptq.scheme;
    /* Circle holds groups of contiguous columns (BlockwiseQuantization); GPTQ's act-order groups
     * without static groups are not contiguous */
    if (p->export_list && s->group > 0 && p->qo->method == PDQ_QM_GPTQ && p->qo->gptq.actorder &&
        !p->qo->gptq.static_groups) {
        fprintf(stderr, "pdq quantize: --group %d with act-order GPTQ puts columns in groups out of order, which Circle "
                        "files cannot hold: add --static-groups (or --no-actorder), or drop --group or --export\n",
                s->group);
        return ARGS_USAGE_EXIT;
    }
    if ((quant_act || p->export_list) && c->max_position_embeddings > 0 && p->ro->max_seq > c->max_position_embeddings) {
        fprintf(stderr, "pdq quantize: --max-seq %d exceeds the model's max_position_embeddings %d\n", p->ro->max_seq,
                c->max_position_embeddings);
        return ARGS_USAGE_EXIT;
    }
    if (p->seq_len > 0 && p->qo->method == PDQ_QM_RTN && !quant_act)
        fprintf(stderr, "pdq quantize: note: --seq-len is unused (RTN needs no calibration windows)\n");
    if (p->eval && p->eval_stride > p->eval_len) {
        fprintf(stderr, "pdq quantize: --eval-stride %d exceeds --eval-len %d: tokens between windows would not be scored\n",
                p->eval_stride, p->eval_len);
        return ARGS_USAGE_EXIT;
    }
    if (p->known_fp32 > 0 && !p->eval) {
        fprintf(stderr, "pdq quantize: --eval-fp32-ppl is the FP32 perplexity of the --eval file: give --eval FILE\n");
        return ARGS_USAGE_EXIT;
    }
    if (p->calib && check_input("--calib", p->calib)) return 1;
    if (p->eval && check_input("--eval", p->eval)) return 1;
    return p->out ? check_out(p->src, p->out) : 0; /* NULL: a rank that does not write */
}

int quantize_check_verify(const char *src, const pdq_ptq_run_opts *ro) {
    const char *const *texts = ro->prompts;
    int np = ro->prompts ? ro->n_prompts : pdq_ptq_verify_prompts(&texts), longest = 0;
    pdq_tokenizer *tok = NULL;
    pdq_status st = {0};
    if (pdq_tokenizer_load(src, &tok, &st) != PDQ_OK) {
        fprintf(stderr, "pdq quantize: %s\n", st.msg);
        return 1;
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
        fprintf(stderr, "pdq quantize: the verify step needs the longest verify prompt (%d tokens) + --verify-steps %d "
                        "<= --max-seq %d: raise --max-seq or lower --verify-steps\n", longest, ro->verify_steps, ro->max_seq);
        return ARGS_USAGE_EXIT;
    }
    return 0;
}

static const char *yes(int v) { return v ? "yes" : "no"; }

void quantize_print_config(const quantize_plan *p, const pdq_model *m, FILE *f) {
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
}
