/* Defaults a model directory stores for the commands that run it: a quantized checkpoint's
 * ptq.json holds the max_seq (and graph options) it was calibrated with, so `pdq verify --model
 * out/q4` needs no --max-seq; everything else falls back to the one default, ARGS_MAX_SEQ_DEFAULT. */
#ifndef PDQ_CLI_DIR_DEFAULTS_H
#define PDQ_CLI_DIR_DEFAULTS_H

/* max_seq stored in dir/ptq.json, else in dir/manifest.json; 0 when neither holds one. */
int cli_stored_max_seq(const char *dir);
/* The max_seq to run dir with: given (> 0) wins, then the stored one, then the default. */
int cli_resolve_max_seq(const char *dir, int given);

/* Graph options given on the command line (NULL: not given) against those dir/ptq.json was
 * calibrated with: 0 when they agree or there is no ptq.json, else 2 after naming the mismatch. */
int cli_check_graph_opts(const char *cmd, const char *dir, const char *rope, const char *scale, const char *layout);

#endif
