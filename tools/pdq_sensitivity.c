/* pdq_sensitivity: per-module quantization sensitivity and a mixed-precision suggestion (TICO's
 * --save sensitivity, ExecuTorch's SQNR analyzer, measured end to end instead).
 *
 * For every decoder linear and every bit width, only that module is quantized (per-channel RTN,
 * or GPTQ on Hessians from the float model's activations) and the cost is measured on evaluation
 * windows: perplexity and mean KL(FP32 || quantized) per token. A greedy upgrade (the module
 * whose next bit width buys the most KL per added bit, until the budget of bits per weight over
 * the decoder linears is spent) gives a per-module assignment, printed as pdq quantize
 * --override flags and checked by quantizing all modules at once with it and measuring again. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/file.h"
#include "pdq/model.h"
#include "pdq/quant.h"

#define MAXB 8

typedef struct {
    const pdq_model *m;
    const int32_t *ids; /* nwin * T */
    int nwin, T;
    const float *ref_logp; /* [nwin*T*V] FP32 log-softmax */
    float *logits;         /* scratch [T*V] */
} evalctx;

static void log_softmax(float *x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; i++) mx = fmaxf(mx, x[i]);
    double s = 0;
    for (int i = 0; i < n; i++) s += exp((double)(x[i] - mx));
    float l = mx + (float)log(s);
    for (int i = 0; i < n; i++) x[i] -= l;
}

/* ppl over next-token predictions and mean KL(ref || model) over all positions. */
static pdq_code evaluate(evalctx *e, float *out_logp, double *ppl, double *kl, pdq_status *st) {
    int V = e->m->cfg.vocab_size, T = e->T;
    double nll = 0, kls = 0;
    long n = 0, nk = 0;
    for (int w = 0; w < e->nwin; w++) {
        const int32_t *ids = e->ids + (size_t)w * T;
        pdq_code rc = pdq_model_forward(e->m, NULL, 1, T, ids, NULL, NULL, e->logits, 0, st);
        if (rc) return rc;
        for (int t = 0; t < T; t++) {
            float *lp = e->logits + (size_t)t * V;
            log_softmax(lp, V);
            if (out_logp) memcpy(out_logp + ((size_t)w * T + t) * V, lp, (size_t)V * sizeof(float));
            if (t + 1 < T) { nll -= lp[ids[t + 1]]; n++; }
            if (e->ref_logp) {
                const float *rp = e->ref_logp + ((size_t)w * T + t) * V;
                double k = 0;
                for (int v = 0; v < V; v++) k += exp((double)rp[v]) * ((double)rp[v] - lp[v]);
                kls += k;
                nk++;
            }
        }
    }
    *ppl = exp(nll / (double)n);
    *kl = nk ? kls / (double)nk : 0;
    return PDQ_OK;
}

typedef struct {
    pdq_hessian h[4];
} layer_h;

typedef struct {
    layer_h *lh;
    pdq_status *st;
    pdq_code rc;
} hctx;

static int group_of(pdq_linear_id id) {
    return id <= PDQ_LIN_V ? 0 : id == PDQ_LIN_O ? 1 : id <= PDQ_LIN_UP ? 2 : 3;
}

static void hook(void *ctx, int layer, pdq_linear_id which, const float *x, int rows, int cols) {
    hctx *c = ctx;
    (void)cols;
    if (!c->rc) c->rc = pdq_hessian_add(&c->lh[layer].h[group_of(which)], x, rows, c->st);
}

/* Quantizes w [out, in] in place at bits. */
static pdq_code quantize(float *w, int out, int in, int bits, const float *H, pdq_status *st) {
    pdq_qresult r;
    pdq_code rc;
    if (H) {
        pdq_gptq_opts o;
        pdq_gptq_opts_default(&o, bits);
        rc = pdq_gptq(&o, w, out, in, H, "w", &r, st);
    } else {
        pdq_qscheme s;
        pdq_qscheme_default(&s, bits);
        rc = pdq_rtn_result(&s, w, out, in, NULL, "w", &r, st);
    }
    if (rc) return rc;
    memcpy(w, r.deq, sizeof(float) * (size_t)out * in);
    pdq_qresult_free(&r);
    return PDQ_OK;
}

static void usage(FILE *f) {
    fprintf(f, "usage: pdq_sensitivity --model DIR --eval FILE [--calib FILE] [--method rtn|gptq] [--bits 2,3,4,8]\n"
               "                       [--budget BPW] [--windows 4] [--len 128] [--nsamples 16] [--seq-len 256]\n"
               "                       [--json OUT] [--threads N]\n");
}

int main(int argc, char **argv) {
    const char *dir = NULL, *evalf = NULL, *calibf = NULL, *method = "rtn", *bitsarg = "2,3,4,8", *json = NULL;
    double budget = 4.0;
    int nwin = 4, T = 128, ns = 16, sl = 256, threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { usage(stderr); return 2; }
        const char *a = argv[i], *v = argv[++i];
        if (!strcmp(a, "--model")) dir = v;
        else if (!strcmp(a, "--eval")) evalf = v;
        else if (!strcmp(a, "--calib")) calibf = v;
        else if (!strcmp(a, "--method")) method = v;
        else if (!strcmp(a, "--bits")) bitsarg = v;
        else if (!strcmp(a, "--json")) json = v;
        else if (!strcmp(a, "--budget")) budget = atof(v);
        else if (!strcmp(a, "--windows")) nwin = atoi(v);
        else if (!strcmp(a, "--len")) T = atoi(v);
        else if (!strcmp(a, "--nsamples")) ns = atoi(v);
        else if (!strcmp(a, "--seq-len")) sl = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else { fprintf(stderr, "pdq_sensitivity: unknown flag %s\n", a); usage(stderr); return 2; }
    }
    int gptq = !strcmp(method, "gptq");
    if (!dir || !evalf || (!gptq && strcmp(method, "rtn")) || (gptq && !calibf) || nwin < 1 || T < 2 || ns < 1 || sl < 2) {
        usage(stderr);
        if (gptq && !calibf) fprintf(stderr, "pdq_sensitivity: --method gptq needs --calib FILE\n");
        return 2;
    }
    int bits[MAXB], nb = 0;
    for (const char *p = bitsarg; *p && nb < MAXB;) {
        char *end;
        long b = strtol(p, &end, 10);
        if (end == p || b < 2 || b > 8 || (nb && b <= bits[nb - 1])) {
            fprintf(stderr, "pdq_sensitivity: --bits needs increasing widths in 2..8, got '%s'\n", bitsarg);
            return 2;
        }
        bits[nb++] = (int)b;
        p = *end == ',' ? end + 1 : end;
    }
    pdq_status st = {0};
    pdq_model *m = NULL;
    int32_t *text = NULL, *win = NULL, *ctext = NULL, *cwin = NULL;
    long n = 0, cn = 0;
    int bos = -1, rc = 1;
    float *ref = NULL, *keep = NULL, *scratch = NULL;
    double *cost_kl = NULL, *cost_ppl = NULL;
    int *assign = NULL;
    layer_h *lh = NULL;
    FILE *jf = NULL;
    pdq_file_writer *jw = NULL; /* jf is its stream: written atomically, pdq/file.h */
    if (pdq_model_load(dir, &m, &st) || pdq_calib_tokenize(dir, evalf, &text, &n, &bos, &st) ||
        pdq_calib_windows(text, n, nwin, T, bos, 1, &win, &st))
        goto fail;
    pdq_set_threads(m, threads);
    const pdq_config *c = &m->cfg;
    int V = c->vocab_size, L = c->n_layers, nm = L * PDQ_LIN_COUNT;
    ref = malloc(sizeof(float) * (size_t)nwin * T * V);
    scratch = malloc(sizeof(float) * (size_t)T * V);
    if (!ref || !scratch) { pdq_fail(&st, PDQ_ERR_NOMEM, "out of memory for %d x %d logits", nwin * T, V); goto fail; }
    evalctx e = {m, win, nwin, T, NULL, scratch};
    double ppl0, kl0;
    if (evaluate(&e, ref, &ppl0, &kl0, &st)) goto fail_s;
    e.ref_logp = ref;
    if (gptq) { /* Hessians of every linear group from the float model */
        int D = c->hidden_size;
        lh = calloc((size_t)L, sizeof *lh);
        if (!lh || pdq_calib_tokenize(dir, calibf, &ctext, &cn, &bos, &st) ||
            pdq_calib_windows(ctext, cn, ns, sl, bos, 0, &cwin, &st))
            goto fail_s;
        hctx hc = {lh, &st, PDQ_OK};
        static const pdq_linear_id first[4] = {PDQ_LIN_Q, PDQ_LIN_O, PDQ_LIN_GATE, PDQ_LIN_DOWN};
        for (int l = 0; l < L; l++)
            for (int g = 0; g < 4; g++) {
                int o, in;
                pdq_linear_shape(c, first[g], &o, &in);
                if (pdq_hessian_init(&lh[l].h[g], in, &st)) goto fail_s;
            }
        float *x = malloc(sizeof(float) * (size_t)sl * D);
        for (int s = 0; x && !hc.rc && s < ns; s++) {
            hc.rc = pdq_model_embed(m, sl, cwin + (size_t)s * sl, x, &st);
            for (int l = 0; !hc.rc && l < L; l++)
                hc.rc = pdq_model_layer_forward(m, l, &m->layers[l], NULL, 1, sl, x, NULL, NULL, hook, &hc, &st);
        }
        free(x);
        if (!x || hc.rc) goto fail_s;
    }
    cost_kl = calloc((size_t)nm * nb, sizeof(double));
    cost_ppl = calloc((size_t)nm * nb, sizeof(double));
    assign = calloc((size_t)nm, sizeof(int));
    size_t maxw = 0;
    long long total_w = 0;
    for (int i = 0; i < PDQ_LIN_COUNT; i++) {
        int o, in;
        pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
        if ((size_t)o * in > maxw) maxw = (size_t)o * in;
        total_w += (long long)o * in * L;
    }
    keep = malloc(sizeof(float) * maxw);
    float *H = malloc(sizeof(float) * (size_t)(c->intermediate_size > c->hidden_size ? c->intermediate_size : c->hidden_size) *
                      (size_t)(c->intermediate_size > c->hidden_size ? c->intermediate_size : c->hidden_size));
    if (!cost_kl || !cost_ppl || !assign || !keep || !H) { free(H); pdq_fail(&st, PDQ_ERR_NOMEM, "out of memory"); goto fail_s; }
    printf("FP32 ppl %.4f on %d windows of %d (%s), per-module %s at bits %s\n", ppl0, nwin, T, evalf, method, bitsarg);
    printf("%-36s", "module");
    for (int b = 0; b < nb; b++) printf("  w%d ppl    w%d KL    ", bits[b], bits[b]);
    printf("\n");
    for (int l = 0; l < L; l++)
        for (int i = 0; i < PDQ_LIN_COUNT; i++) {
            int o, in, k = l * PDQ_LIN_COUNT + i;
            pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
            float *w = m->layers[l].w[i];
            memcpy(keep, w, sizeof(float) * (size_t)o * in);
            if (gptq) pdq_hessian_get(&lh[l].h[group_of((pdq_linear_id)i)], H);
            char nm[128];
            pdq_linear_module(c, l, (pdq_linear_id)i, nm, sizeof nm);
            printf("%-36s", nm);
            for (int b = 0; b < nb; b++) {
                if (quantize(w, o, in, bits[b], gptq ? H : NULL, &st) ||
                    evaluate(&e, NULL, &cost_ppl[k * nb + b], &cost_kl[k * nb + b], &st)) { free(H); goto fail_s; }
                memcpy(w, keep, sizeof(float) * (size_t)o * in);
                printf("  %8.4f %9.3e", cost_ppl[k * nb + b], cost_kl[k * nb + b]);
            }
            printf("\n");
            fflush(stdout);
        }
    /* greedy upgrades from the lowest width: best KL drop per added bit, within the budget */
    double used = 0;
    for (int k = 0; k < nm; k++) {
        int o, in;
        pdq_linear_shape(c, (pdq_linear_id)(k % PDQ_LIN_COUNT), &o, &in);
        used += (double)o * in * bits[0];
    }
    for (;;) {
        int bk = -1;
        double best = -1;
        for (int k = 0; k < nm; k++) {
            if (assign[k] + 1 >= nb) continue;
            int o, in;
            pdq_linear_shape(c, (pdq_linear_id)(k % PDQ_LIN_COUNT), &o, &in);
            double add = (double)o * in * (bits[assign[k] + 1] - bits[assign[k]]);
            if ((used + add) / (double)total_w > budget + 1e-12) continue;
            double gain = (cost_kl[k * nb + assign[k]] - cost_kl[k * nb + assign[k] + 1]) / add;
            if (gain > best) { best = gain; bk = k; }
        }
        if (bk < 0) break;
        int o, in;
        pdq_linear_shape(c, (pdq_linear_id)(bk % PDQ_LIN_COUNT), &o, &in);
        used += (double)o * in * (bits[assign[bk] + 1] - bits[assign[bk]]);
        assign[bk]++;
    }
    /* the most common width becomes --wbits, the rest overrides */
    int count[MAXB] = {0}, base = 0;
    for (int k = 0; k < nm; k++) count[assign[k]]++;
    for (int b = 1; b < nb; b++) if (count[b] > count[base]) base = b;
    double pred = 0;
    for (int k = 0; k < nm; k++) pred += cost_kl[k * nb + assign[k]];
    printf("\nbudget %.3f bits per weight (decoder linears): suggestion uses %.3f\n  --wbits %d", budget,
           used / (double)total_w, bits[base]);
    for (int k = 0; k < nm; k++)
        if (assign[k] != base)
        {
            char mn[128];
            pdq_linear_module(c, k / PDQ_LIN_COUNT, (pdq_linear_id)(k % PDQ_LIN_COUNT), mn, sizeof mn);
            printf(" --override %s=%d", mn, bits[assign[k]]);
        }
    printf("\n");
    /* check: all modules at once with the suggestion, and each uniform width for comparison */
    double chk_ppl[MAXB + 1], chk_kl[MAXB + 1];
    float **orig = calloc((size_t)nm, sizeof(float *));
    int ok = orig != NULL;
    for (int k = 0; ok && k < nm; k++) {
        int o, in;
        pdq_linear_shape(c, (pdq_linear_id)(k % PDQ_LIN_COUNT), &o, &in);
        if ((orig[k] = malloc(sizeof(float) * (size_t)o * in)))
            memcpy(orig[k], m->layers[k / PDQ_LIN_COUNT].w[k % PDQ_LIN_COUNT], sizeof(float) * (size_t)o * in);
        else ok = 0;
    }
    pdq_code qrc = ok ? PDQ_OK : pdq_fail(&st, PDQ_ERR_NOMEM, "out of memory");
    for (int pass = 0; !qrc && pass <= nb; pass++) { /* pass nb: the suggestion */
        for (int k = 0; !qrc && k < nm; k++) {
            int l = k / PDQ_LIN_COUNT, i = k % PDQ_LIN_COUNT, o, in;
            pdq_linear_shape(c, (pdq_linear_id)i, &o, &in);
            if (gptq) pdq_hessian_get(&lh[l].h[group_of((pdq_linear_id)i)], H);
            memcpy(m->layers[l].w[i], orig[k], sizeof(float) * (size_t)o * in);
            qrc = quantize(m->layers[l].w[i], o, in, pass < nb ? bits[pass] : bits[assign[k]], gptq ? H : NULL, &st);
        }
        if (!qrc) qrc = evaluate(&e, NULL, &chk_ppl[pass], &chk_kl[pass], &st);
    }
    for (int k = 0; orig && k < nm; k++) {
        int o, in;
        pdq_linear_shape(c, (pdq_linear_id)(k % PDQ_LIN_COUNT), &o, &in);
        if (orig[k]) memcpy(m->layers[k / PDQ_LIN_COUNT].w[k % PDQ_LIN_COUNT], orig[k], sizeof(float) * (size_t)o * in);
        free(orig[k]);
    }
    free(orig);
    if (qrc) { free(H); goto fail_s; }
    printf("check, all decoder linears quantized (%s; embedding and lm_head float):\n", method);
    for (int b = 0; b < nb; b++)
        printf("  uniform w%d           ppl %.4f (%+.2f%%)  KL %.4e\n", bits[b], chk_ppl[b], (chk_ppl[b] / ppl0 - 1) * 100, chk_kl[b]);
    printf("  suggestion %.3f bpw   ppl %.4f (%+.2f%%)  KL %.4e  (sum of the modules' KL alone: %.4e)\n",
           used / (double)total_w, chk_ppl[nb], (chk_ppl[nb] / ppl0 - 1) * 100, chk_kl[nb], pred);
    if (json && pdq_file_begin(json, NULL, &jw, &st) == PDQ_OK && (jf = pdq_file_stream(jw))) {
        fprintf(jf, "{\"model\": \"%s\", \"method\": \"%s\", \"fp32_ppl\": %.6f, \"budget\": %g, \"used_bpw\": %.6f,\n",
                dir, method, ppl0, budget, used / (double)total_w);
        fprintf(jf, " \"suggestion\": {\"ppl\": %.6f, \"kl\": %.6e}, \"uniform\": [", chk_ppl[nb], chk_kl[nb]);
        for (int b = 0; b < nb; b++) fprintf(jf, "%s{\"bits\": %d, \"ppl\": %.6f, \"kl\": %.6e}", b ? ", " : "", bits[b], chk_ppl[b], chk_kl[b]);
        fprintf(jf, "],\n \"modules\": [\n");
        for (int k = 0; k < nm; k++) {
            char mn[128];
            pdq_linear_module(c, k / PDQ_LIN_COUNT, (pdq_linear_id)(k % PDQ_LIN_COUNT), mn, sizeof mn);
            fprintf(jf, "  {\"name\": \"%s\", \"assigned_bits\": %d, \"cost\": [", mn, bits[assign[k]]);
            for (int b = 0; b < nb; b++)
                fprintf(jf, "%s{\"bits\": %d, \"ppl\": %.6f, \"kl\": %.6e}", b ? ", " : "", bits[b], cost_ppl[k * nb + b], cost_kl[k * nb + b]);
            fprintf(jf, "]}%s\n", k + 1 < nm ? "," : "");
        }
        fprintf(jf, " ]}\n");
        jf = NULL;
        pdq_code wrc = pdq_file_commit(jw, &st);
        jw = NULL;
        if (wrc) { free(H); goto fail_s; }
    } else if (json) {
        free(H);
        if (!st.code) pdq_fail(&st, PDQ_ERR_NOMEM, "%s: out of memory", json);
        goto fail_s;
    }
    free(H);
    rc = 0;
    goto done;
fail_s:
    fprintf(stderr, "pdq_sensitivity: %s\n", st.msg);
    goto done;
fail:
    fprintf(stderr, "pdq_sensitivity: %s\n", st.msg);
done:
    pdq_file_abort(jw);
    if (lh) {
        for (int l = 0; l < m->cfg.n_layers; l++)
            for (int g = 0; g < 4; g++) pdq_hessian_free(&lh[l].h[g]);
        free(lh);
    }
    free(text); free(win); free(ctext); free(cwin); free(ref); free(keep); free(scratch);
    free(cost_kl); free(cost_ppl); free(assign);
    pdq_model_free(m);
    return rc;
}
