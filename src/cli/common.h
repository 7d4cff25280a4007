/* Helpers shared by subcommands: loading with messages, reading prompts. */
#ifndef PDQ_CLI_COMMON_H
#define PDQ_CLI_COMMON_H

#include <stdint.h>

#include "args.h"
#include "pdq/model.h"
#include "pdq/runtime.h"
#include "pdq/tokenizer.h"

/* Loads the model at dir with n threads (<=0: all cores); prints the error and returns NULL. */
pdq_model *cli_load_model(const char *cmd, const char *dir, int threads);
/* The same for the weight-only reference commands: a quantized OUTDIR keeps its weights packed
 * (pdq_model_load_packed); any other directory loads as cli_load_model. */
pdq_model *cli_load_model_packed(const char *cmd, const char *dir, int threads);
/* Loads the tokenizer from dir; prints the error and returns NULL. */
pdq_tokenizer *cli_load_tokenizer(const char *cmd, const char *dir);
/* Parses "1 2 3" (spaces/commas) into ids; returns count or -1 after printing an error. */
long cli_parse_ids(const char *cmd, const char *s, int32_t **ids);
/* Whole file into a malloc'd NUL-terminated buffer, or NULL after printing an error. */
char *cli_read_text(const char *cmd, const char *path, size_t *len);

/* Static-graph options from --rope, --scale-fusion, --layout and --padding (defaults first).
 * Returns 1 when any of the three graph options was given explicitly, 0 when none was, or -1
 * after printing which value is unknown. pad may be NULL (the command has no --padding). */
int cli_static_opts(pdq_args *a, pdq_static_opts *o, pdq_padding *pad);

/* Every id of a prompt in [0, vocab): 0, or 1 after naming the first that is not ("what": "row 2"). */
int cli_check_ids(const char *cmd, const char *what, const int32_t *ids, long n, int vocab);
/* Pre-flight for an input file named by option opt: exists and is not a directory (which would
 * read as empty). Returns 0, or 1 after printing which. */
int cli_check_in_file(const char *cmd, const char *opt, const char *path);
/* Pre-flight for an output file named by option opt (written after the work): not a directory,
 * and its directory exists and is writable. Returns 0, or 1 after printing which. */
int cli_check_out_file(const char *cmd, const char *opt, const char *path);

/* Prints the text of ids[0..n) that *printed bytes of it have not covered yet, and advances
 * *printed. The whole sequence is decoded each time, so multi-byte characters split over
 * byte-fallback tokens appear once complete (a trailing U+FFFD is held back) and the tokenizer's
 * leading-space rule applies only at the true start. On a decode error, st says why and nothing
 * is printed. */
pdq_code cli_stream_text(const pdq_tokenizer *tok, const int32_t *ids, size_t n, size_t *printed, pdq_status *st);

#endif
