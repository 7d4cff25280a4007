/* pdq ppl: perplexity of a text or id file with strided sliding windows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "pdq/eval.h"
#include "ptq_args.h"

static const char *k_usage =
    "usage: pdq ppl --model DIR (--text FILE | --ids-file F) [--max-len N] [--stride N] [--json] [--threads N]\n"
    "               [--static [--max-seq N]]  (static prefill graph, windows of max_seq; fake-quant with ptq.json)\n";

int cmd_ppl(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "ppl", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *dir = args_str(&a, "--model"), *text = args_str(&a, "--text"), *ids_file = args_str(&a, "--ids-file");
    long max_len = args_int(&a, "--max-len", 0), stride = args_int(&a, "--stride", 0);
    int json = args_flag(&a, "--json"), threads = (int)args_int(&a, "--threads", 0);
    int use_static = args_flag(&a, "--static"), max_seq = (int)args_int(&a, "--max-seq", 0);
    if (args_finish(&a)) { fputs(k_usage, stderr); return 2; }
    if (!dir || !text == !ids_file) { fputs(k_usage, stderr); return 2; }

    pdq_status st = {0};
    int32_t *ids = NULL;
    long n = 0;
    if (text) {
        pdq_tokenizer *tok = cli_load_tokenizer("ppl", dir);
        if (!tok) return 1;
        size_t len, nn;
        char *buf = cli_read_text("ppl", text, &len);
        pdq_code rc = buf ? pdq_tokenizer_encode(tok, buf, len, 1, &ids, &nn, &st) : PDQ_ERR_IO;
        free(buf);
        pdq_tokenizer_free(tok);
        if (rc != PDQ_OK) {
            if (buf) fprintf(stderr, "pdq ppl: %s\n", st.msg);
            return 1;
        }
        n = (long)nn;
    } else if (pdq_read_ids_file(ids_file, &ids, &n, &st) != PDQ_OK) {
        fprintf(stderr, "pdq ppl: %s\n", st.msg);
        return 1;
    }
    pdq_model *m = cli_load_model("ppl", dir, threads);
    if (!m) { free(ids); return 1; }
    pdq_rt *rt = NULL;
    pdq_ptq *ptq = NULL;
    if (use_static) {
        /* max_seq: --max-seq, else --max-len, else the calibrated one (ptq.json), else 256. */
        if (max_seq <= 0) max_seq = (int)max_len;
        if (max_seq <= 0 && !pdq_ptq_in_dir(dir)) max_seq = 256;
        if (cli_static_runtime("ppl", dir, m, 1, max_seq, NULL, 0, &rt, &ptq)) { free(ids); pdq_model_free(m); return 1; }
        max_len = pdq_rt_max_seq(rt);
    }
    if (max_len <= 0) max_len = m->cfg.max_position_embeddings < 2048 ? m->cfg.max_position_embeddings : 2048;
    if (stride <= 0) stride = max_len;
    int status = 1;
    pdq_ppl_result r;
    if (max_len > m->cfg.max_position_embeddings) {
        fprintf(stderr, "pdq ppl: --max-len %ld exceeds the model's max_position_embeddings %d\n", max_len, m->cfg.max_position_embeddings);
    } else if (rt ? pdq_ppl_windows(pdq_rt_window_logits, rt, m->cfg.vocab_size, ids, n, (int)max_len, (int)stride,
                                    "perplexity (static)", &r, &st) != PDQ_OK
                  : pdq_ppl_model(m, ids, n, (int)max_len, (int)stride, "perplexity", &r, &st) != PDQ_OK) {
        fprintf(stderr, "pdq ppl: %s\n", st.msg);
    } else {
        if (json)
            printf("{\"ppl\": %.6f, \"tokens\": %ld, \"nll\": %.6f, \"windows\": %d, \"max_len\": %ld, \"stride\": %ld}\n",
                   r.ppl, r.tokens, r.nll, r.windows, max_len, stride);
        else
            printf("perplexity %.4f over %ld tokens (%d windows of %ld, stride %ld)\n", r.ppl, r.tokens, r.windows, max_len, stride);
        status = 0;
    }
    free(ids);
    pdq_rt_free(rt);
    pdq_ptq_free(ptq);
    pdq_model_free(m);
    return status;
}
