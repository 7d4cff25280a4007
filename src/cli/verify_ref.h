/* What `pdq verify` compares against, and with which prompts when none are given. */
#ifndef PDQ_CLI_VERIFY_REF_H
#define PDQ_CLI_VERIFY_REF_H

#include <stdint.h>

#include "pdq/model.h"
#include "pdq/tokenizer.h"

#define VERIFY_REF_USAGE                                                                                   \
    "  --ref DIR            reference model (default: --model itself; on a quantized directory that is its\n" \
    "                       dequantized weights, so pass the original checkpoint to compare with FP32)\n"   \
    "  --text FILE          default prompts: the first lines of FILE (alias --eval); without prompts and\n" \
    "                       without FILE the tokenizer's BOS alone is the prompt\n"

typedef struct {
    pdq_model *model;  /* the reference: m itself or the --ref model */
    int owned;         /* model was loaded here (freed by verify_ref_close) */
    int fp32;          /* a float checkpoint (not a quantized directory's dequantized weights) */
    char name[4200];   /* what it is, for every line that names it */
} verify_ref;

/* Opens the reference for model m loaded from dir: --ref ref_dir (same vocabulary and layer
 * shape required) or m. Prints the error and returns -1 on failure. */
int verify_ref_open(const char *cmd, const char *dir, const char *ref_dir, pdq_model *m, int threads, verify_ref *r);
void verify_ref_close(verify_ref *r);

/* Default prompts: up to max_rows first non-empty lines of text_file (NULL: none), each cut to
 * max_tokens, or one row holding BOS alone (tok's, else the config's). rows[i] malloc'd. Returns
 * the row count and prints where they came from to stderr, or -1 after printing the error. */
int verify_default_prompts(const char *cmd, const char *text_file, const pdq_tokenizer *tok, const pdq_config *cfg,
                           int max_tokens, int32_t **rows, int *lens, int max_rows);

#endif
