/* Embedding example: quantize a model directory through the library, as `pdq quantize` does.
 * GPTQ 4-bit weights from a few calibration windows, then the perplexity of the float and the
 * quantized model on an evaluation text; OUTDIR gets the same files `pdq quantize` writes
 * (model.q.safetensors, pdq_quant.json, hf/, report.json, report.html).
 *
 *   cc quantize_model.c $(pkg-config --cflags --libs pdq) -o quantize_model
 *   ./quantize_model models/web-bible-llama-19m data/web-bible/train.txt /tmp/q data/web-bible/valid.txt
 *
 * is `pdq quantize --model models/web-bible-llama-19m --calib data/web-bible/train.txt --method gptq
 * --wbits 4 --nsamples 4 --seq-len 128 --abits none --eval data/web-bible/valid.txt --eval-tokens 4096
 * --quiet --threads 2 --out /tmp/q`. */
#include <stdio.h>

#include <pdq/quantize_job.h>

static const char *const k_step[PDQ_QSTEP_COUNT] = {"fp32 eval", "calibration", "weights", "save", "quant eval",
                                                    "activations", "export", "export check"};

/* Results (the perplexity line) on stdout, notes and progress on stderr. */
static void on_message(void *user, pdq_quantize_msg kind, const char *text) {
    (void)user;
    if (kind == PDQ_QMSG_RESULT) fputs(text, stdout);
    else if (kind == PDQ_QMSG_NOTE) fprintf(stderr, "quantize_model: %s\n", text);
    else fputs(text, stderr);
}

static void on_step(void *user, pdq_quantize_step step, int done, double seconds) {
    (void)user;
    if (done) fprintf(stderr, "quantize_model: %s done in %.2f s\n", k_step[step], seconds);
    else fprintf(stderr, "quantize_model: %s ...\n", k_step[step]);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL_DIR CALIB_TEXT OUTDIR [EVAL_TEXT]\n", argv[0]);
        return 2;
    }
    pdq_quantize_plan plan;
    pdq_quantize_plan_default(&plan);
    plan.model_dir = argv[1];
    plan.calib = argv[2];
    plan.out_dir = argv[3];
    /* GPTQ, 4-bit per-channel weights, 8-bit embedding and lm_head: the plan's defaults (another
     * width: pdq_gptq_opts_default(&plan.qo.gptq, BITS), then group_scale PDQ_QSCALE_F16) */
    plan.nsamples = 4;
    plan.seq_len = 128;
    plan.abits = PDQ_ADT_FLOAT; /* weights only */
    if (argc > 4) {
        plan.eval = argv[4];
        plan.eval_tokens = 4096;
    }
    plan.quiet = 1;
    plan.threads = 2;

    pdq_quantize_callbacks cb = {NULL, on_message, on_step};
    pdq_quantize_result res;
    pdq_status st;
    if (pdq_quantize_run(&plan, &cb, &res, &st) != PDQ_OK) {
        fprintf(stderr, "quantize_model: %s\n", st.msg);
        return res.usage ? 2 : 1;
    }
    printf("wrote %s in %.2f s\n", plan.out_dir, res.total);
    return 0;
}
