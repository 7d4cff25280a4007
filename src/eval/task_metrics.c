/* The harness's metric formulas: accuracy with its sample standard error, perplexity with its
 * bootstrap standard error (Python's Mersenne Twister reproduced so the numbers match), the
 * pooled standard error of groups, and MMLU's subject groups. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/tasks.h"

pdq_metric pdq_metric_mean01(long hits, long n) {
    pdq_metric m = {NAN, NAN};
    if (n <= 0) return m;
    double p = (double)hits / (double)n;
    m.value = p;
    /* sample stddev / sqrt(n) of 0/1 values = sqrt(p (1 - p) / (n - 1)) */
    if (n > 1) m.stderr_ = sqrt(p * (1.0 - p) / (double)(n - 1));
    return m;
}

/* ---- MT19937 (std::mt19937; CPython's random module seeds it by init_by_array) ---- */
enum { MT_N = 624, MT_M = 397 };

/* std::mt19937(s) (the standard's seeding; CPython's init_genrand) */
void pdq_mt19937_seed(pdq_pyrandom *r, uint32_t s) {
    r->mt[0] = s;
    for (int i = 1; i < MT_N; i++) r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
    r->i = MT_N;
}

void pdq_pyrandom_seed(pdq_pyrandom *r, uint32_t seed) {
    /* random.seed(int): init_by_array over the integer's 32-bit words (one word for < 2^32) */
    const uint32_t key[1] = {seed};
    const int klen = 1;
    pdq_mt19937_seed(r, 19650218u);
    uint32_t *mt = r->mt;
    int i = 1, j = 0;
    for (int k = MT_N > klen ? MT_N : klen; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
        i++, j++;
        if (i >= MT_N) { mt[0] = mt[MT_N - 1]; i = 1; }
        if (j >= klen) j = 0;
    }
    for (int k = MT_N - 1; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
        i++;
        if (i >= MT_N) { mt[0] = mt[MT_N - 1]; i = 1; }
    }
    mt[0] = 0x80000000u;
    r->i = MT_N;
}

uint32_t pdq_mt19937_next(pdq_pyrandom *r) {
    uint32_t *mt = r->mt;
    if (r->i >= MT_N) {
        for (int k = 0; k < MT_N; k++) {
            uint32_t y = (mt[k] & 0x80000000u) | (mt[(k + 1) % MT_N] & 0x7fffffffu);
            mt[k] = mt[(k + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        }
        r->i = 0;
    }
    uint32_t y = mt[r->i++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double pdq_pyrandom_random(pdq_pyrandom *r) {
    uint32_t a = pdq_mt19937_next(r) >> 5, b = pdq_mt19937_next(r) >> 6;
    return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

static double mean(const double *x, long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += x[i];
    return s / (double)n;
}

pdq_metric pdq_metric_perplexity(const double *ll, long n, int iters) {
    pdq_metric m = {NAN, NAN};
    if (n <= 0) return m;
    m.value = exp(-mean(ll, n));
    const int chunk = iters < 1000 ? iters : 1000;
    if (iters <= 0 || chunk <= 0 || iters / chunk < 1) return m;
    long reps = (long)(iters / chunk) * chunk;
    double *res = malloc((size_t)reps * sizeof *res);
    double *draw = malloc((size_t)n * sizeof *draw);
    if (!res || !draw) { free(res); free(draw); return m; }
    long r = 0;
    /* chunk c draws with random.Random(c): replicates = perplexity(random.choices(xs, k=n)) */
    for (int c = 0; c < iters / chunk; c++) {
        pdq_pyrandom rng;
        pdq_pyrandom_seed(&rng, (uint32_t)c);
        for (int k = 0; k < chunk; k++) {
            for (long i = 0; i < n; i++) draw[i] = ll[(long)floor(pdq_pyrandom_random(&rng) * (double)n)];
            res[r++] = exp(-mean(draw, n));
        }
    }
    double mu = mean(res, reps), ss = 0;
    for (long i = 0; i < reps; i++) ss += (res[i] - mu) * (res[i] - mu);
    if (reps > 1) m.stderr_ = sqrt(ss / (double)(reps - 1));
    free(res);
    free(draw);
    return m;
}

double pdq_pooled_stderr(const double *stderrs, const long *sizes, int k) {
    double num = 0, total = 0;
    for (int i = 0; i < k; i++) {
        if (isnan(stderrs[i])) return NAN;
        num += (double)(sizes[i] - 1) * stderrs[i] * stderrs[i] * (double)sizes[i];
        total += (double)sizes[i];
    }
    if (total - k <= 0) return NAN;
    return sqrt(num / (total - k) / total);
}

/* ---- MMLU subjects and their groups (lm-eval's mmlu/default task files) ---- */
const char *const pdq_mmlu_category_names[4] = {"stem", "other", "social_sciences", "humanities"};

static const struct {
    const char *name;
    int category;
} k_subjects[] = {
    {"abstract_algebra", PDQ_MMLU_STEM},
    {"anatomy", PDQ_MMLU_STEM},
    {"astronomy", PDQ_MMLU_STEM},
    {"business_ethics", PDQ_MMLU_OTHER},
    {"clinical_knowledge", PDQ_MMLU_OTHER},
    {"college_biology", PDQ_MMLU_STEM},
    {"college_chemistry", PDQ_MMLU_STEM},
    {"college_computer_science", PDQ_MMLU_STEM},
    {"college_mathematics", PDQ_MMLU_STEM},
    {"college_medicine", PDQ_MMLU_OTHER},
    {"college_physics", PDQ_MMLU_STEM},
    {"computer_security", PDQ_MMLU_STEM},
    {"conceptual_physics", PDQ_MMLU_STEM},
    {"econometrics", PDQ_MMLU_SOCIAL},
    {"electrical_engineering", PDQ_MMLU_STEM},
    {"elementary_mathematics", PDQ_MMLU_STEM},
    {"formal_logic", PDQ_MMLU_HUMANITIES},
    {"global_facts", PDQ_MMLU_OTHER},
    {"high_school_biology", PDQ_MMLU_STEM},
    {"high_school_chemistry", PDQ_MMLU_STEM},
    {"high_school_computer_science", PDQ_MMLU_STEM},
    {"high_school_european_history", PDQ_MMLU_HUMANITIES},
    {"high_school_geography", PDQ_MMLU_SOCIAL},
    {"high_school_government_and_politics", PDQ_MMLU_SOCIAL},
    {"high_school_macroeconomics", PDQ_MMLU_SOCIAL},
    {"high_school_mathematics", PDQ_MMLU_STEM},
    {"high_school_microeconomics", PDQ_MMLU_SOCIAL},
    {"high_school_physics", PDQ_MMLU_STEM},
    {"high_school_psychology", PDQ_MMLU_SOCIAL},
    {"high_school_statistics", PDQ_MMLU_STEM},
    {"high_school_us_history", PDQ_MMLU_HUMANITIES},
    {"high_school_world_history", PDQ_MMLU_HUMANITIES},
    {"human_aging", PDQ_MMLU_OTHER},
    {"human_sexuality", PDQ_MMLU_SOCIAL},
    {"international_law", PDQ_MMLU_HUMANITIES},
    {"jurisprudence", PDQ_MMLU_HUMANITIES},
    {"logical_fallacies", PDQ_MMLU_HUMANITIES},
    {"machine_learning", PDQ_MMLU_STEM},
    {"management", PDQ_MMLU_OTHER},
    {"marketing", PDQ_MMLU_OTHER},
    {"medical_genetics", PDQ_MMLU_OTHER},
    {"miscellaneous", PDQ_MMLU_OTHER},
    {"moral_disputes", PDQ_MMLU_HUMANITIES},
    {"moral_scenarios", PDQ_MMLU_HUMANITIES},
    {"nutrition", PDQ_MMLU_OTHER},
    {"philosophy", PDQ_MMLU_HUMANITIES},
    {"prehistory", PDQ_MMLU_HUMANITIES},
    {"professional_accounting", PDQ_MMLU_OTHER},
    {"professional_law", PDQ_MMLU_HUMANITIES},
    {"professional_medicine", PDQ_MMLU_OTHER},
    {"professional_psychology", PDQ_MMLU_SOCIAL},
    {"public_relations", PDQ_MMLU_SOCIAL},
    {"security_studies", PDQ_MMLU_SOCIAL},
    {"sociology", PDQ_MMLU_SOCIAL},
    {"us_foreign_policy", PDQ_MMLU_SOCIAL},
    {"virology", PDQ_MMLU_OTHER},
    {"world_religions", PDQ_MMLU_HUMANITIES},
};

const char *pdq_mmlu_subject(int i) {
    return i >= 0 && i < (int)(sizeof k_subjects / sizeof k_subjects[0]) ? k_subjects[i].name : NULL;
}

int pdq_mmlu_category(const char *subject) {
    for (size_t i = 0; i < sizeof k_subjects / sizeof k_subjects[0]; i++)
        if (strcmp(subject, k_subjects[i].name) == 0) return k_subjects[i].category;
    return -1;
}
