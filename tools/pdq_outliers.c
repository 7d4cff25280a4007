/* pdq_outliers: makes a model with outlier activation channels by a function-preserving rescale,
 * the test bed for CLE / R2 / SmoothQuant. Per layer, K kv channels (g, d) of v_proj get their
 * rows multiplied by F and the o_proj columns that read them (every query head of group g)
 * divided by F; K rows of up_proj are multiplied by F and the matching down_proj columns divided
 * by F. The float model computes the same logits, but the activations entering o_proj and
 * down_proj now have channels F times larger than the rest, and those weight columns are F times
 * smaller than their row's range: exactly what a per-channel 4-bit grid handles badly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/model.h"
#include "pdq/transform.h"

static void usage(FILE *f) {
    fprintf(f, "usage: pdq_outliers --model DIR --out DIR [--factor 50] [--channels 4] [--seed 1]\n");
}

static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* k distinct indices below n. */
static void pick(int *out, int k, int n, uint64_t *s) {
    for (int i = 0; i < k; i++) {
        int v, dup;
        do {
            v = (int)(next(s) % (uint64_t)n);
            dup = 0;
            for (int j = 0; j < i; j++) dup |= out[j] == v;
        } while (dup);
        out[i] = v;
    }
}

int main(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    double factor = 50;
    long k = 4, seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { usage(stderr); return 2; }
        const char *a = argv[i], *v = argv[++i];
        char *end;
        if (!strcmp(a, "--model")) in = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--factor")) { factor = strtod(v, &end); if (*end || !(factor > 0)) { fprintf(stderr, "pdq_outliers: --factor needs a positive number, got '%s'\n", v); return 2; } }
        else if (!strcmp(a, "--channels")) { k = strtol(v, &end, 10); if (*end || k < 1) { fprintf(stderr, "pdq_outliers: --channels needs a positive integer, got '%s'\n", v); return 2; } }
        else if (!strcmp(a, "--seed")) { seed = strtol(v, &end, 10); if (*end) { fprintf(stderr, "pdq_outliers: --seed needs an integer, got '%s'\n", v); return 2; } }
        else { fprintf(stderr, "pdq_outliers: unknown flag %s\n", a); usage(stderr); return 2; }
    }
    if (!in || !out) { usage(stderr); return 2; }
    pdq_status st = {0};
    pdq_model *m = NULL;
    if (pdq_model_load(in, &m, &st)) { fprintf(stderr, "pdq_outliers: %s\n", st.msg); return 1; }
    const pdq_config *c = &m->cfg;
    int D = c->hidden_size, I = c->intermediate_size, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;
    int group = H / KV;
    if (k > KV * hd || k > I) {
        fprintf(stderr, "pdq_outliers: --channels %ld exceeds the %d kv channels or %d MLP channels\n", k, KV * hd, I);
        pdq_model_free(m);
        return 2;
    }
    uint64_t s = (uint64_t)seed;
    int *idx = malloc(sizeof(int) * (size_t)k);
    float f = (float)factor, inv = (float)(1.0 / factor);
    for (int l = 0; idx && l < c->n_layers; l++) {
        pdq_layer *L = &m->layers[l];
        pick(idx, (int)k, KV * hd, &s);
        for (int i = 0; i < k; i++) {
            int g = idx[i] / hd, d = idx[i] % hd;
            for (int x = 0; x < D; x++) L->w[PDQ_LIN_V][(size_t)idx[i] * D + x] *= f;
            for (int h = g * group; h < (g + 1) * group; h++)
                for (int r = 0; r < D; r++) L->w[PDQ_LIN_O][(size_t)r * H * hd + h * hd + d] *= inv;
        }
        pick(idx, (int)k, I, &s);
        for (int i = 0; i < k; i++) {
            for (int x = 0; x < D; x++) L->w[PDQ_LIN_UP][(size_t)idx[i] * D + x] *= f;
            for (int r = 0; r < D; r++) L->w[PDQ_LIN_DOWN][(size_t)r * I + idx[i]] *= inv;
        }
    }
    int rc = !idx || pdq_transform_save(m, in, out, &st);
    if (rc) fprintf(stderr, "pdq_outliers: %s\n", idx ? st.msg : "out of memory");
    else printf("wrote %s: %ld v->o and %ld up->down channels per layer scaled by %g\n", out, k, k, factor);
    free(idx);
    pdq_model_free(m);
    return rc;
}
