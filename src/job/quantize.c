/* The quantize job: GPTQ or RTN weight quantization of a whole model and every step after it
 * (pdq/quantize_job.h; each step's logic lives in its library folder, the order here). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "job.h"
#include "kld.h"
#include "pdq/eval.h"
#include "pdq/progress.h"
#include "pdq/ptq.h"
#include "pdq/quant.h"
#include "pdq/quantize_job.h"
#include "pdq/report.h"
#include "preflight.h"
#include "profile.h"
#include "prompts.h"
#include "ranks.h"
#include "summary.h"
#include "tasks.h"
#include "transform.h"

_Static_assert((int)QS_COUNT == (int)PDQ_QSTEP_COUNT, "the steps of summary.h are the public ones");

void pdq_quantize_plan_default(pdq_quantize_plan *p) {
    memset(p, 0, sizeof *p);
    pdq_quant_opts_default(&p->qo, 4);
    p->qo.gptq.scheme.group_scale = PDQ_QSCALE_F16;
    p->qo.embed_bits = 8;
    p->qo.lm_head_bits = 8;
    p->qo.calib_chunk = 1;
    p->nsamples = 128;
    pdq_transform_opts_default(&p->transform);
    p->abits = PDQ_ADT_FLOAT;
    pdq_ptq_run_opts_default(&p->ptq);
    p->eval_len = 256;
    p->eval_stride = 256;
}

static pdq_code quantize_model_window(void *ctx, const int32_t *ids, int T, float *logits, pdq_status *st) {
    return pdq_model_forward((const pdq_model *)ctx, NULL, 1, T, ids, NULL, NULL, logits, 0, st);
}

static void step(const job_ctx *j, pdq_quantize_step s, int done, double seconds) {
    if (!j->quiet_results && j->cb && j->cb->step) j->cb->step(j->cb->user, s, done, seconds);
}

/* Split over the job's ranks (every rank calls it; the numbers do not depend on how many). */
static int eval_ppl(const job_ctx *j, const quantize_job *job, const pdq_model *m, const int32_t *ids, long n, int len,
                    int stride, const char *label, double *ppl, long *tokens) {
    pdq_status st = {0};
    pdq_ppl_result r;
    if (pdq_ppl_model_split(job->d, m, ids, n, len, stride, label, &r, &st)) return job_fail(j, st.code, "eval: %s", st.msg);
    *ppl = r.ppl;
    *tokens = r.tokens;
    return 0;
}

/* What a plan must hold before any file is touched (the command line checks the same earlier). */
static int plan_check(const job_ctx *j, const pdq_quantize_plan *p, int *whole, int *per_layer) {
    pdq_status st = {0};
    if (!p->model_dir || !p->out_dir) return job_fail(j, PDQ_ERR_ARG, "the plan needs a model directory and an OUTDIR");
    if (p->qo.method == PDQ_QM_GPTQ && !p->calib) return job_fail(j, PDQ_ERR_ARG, "GPTQ needs --calib FILE (or use --method rtn)");
    if (p->abits != PDQ_ADT_FLOAT && !p->calib)
        return job_fail(j, PDQ_ERR_ARG, "--abits %s needs calibration text (--calib FILE)", pdq_adtype_name((pdq_adtype)p->abits));
    if (p->kld && !p->eval) return job_fail(j, PDQ_ERR_ARG, "--kld needs --eval FILE (the text it compares the two models on)");
    if (p->tasks && !p->task_data)
        return job_fail(j, PDQ_ERR_ARG, "--eval-task needs --task-data PATH (the task data sets, as pdq eval's --data)");
    if (p->append_buckets && !p->export_list) return job_fail(j, PDQ_ERR_ARG, "--append-bucket needs --export");
    if (p->export_list && pdq_quantize_export_parse(p->export_list, whole, per_layer, &st))
        return job_fail(j, st.code, "%s", st.msg);
    if (p->transform.smooth && !p->calib)
        return job_fail(j, PDQ_ERR_ARG, "--transform smooth needs --calib FILE (activation ranges)");
    return 0;
}

/* The job itself on this rank; the result's error in j. 0 on success. */
static int run(const job_ctx *jc, const pdq_quantize_plan *plan, pdq_quantize_result *res) {
    pdq_status *stp = jc->st;
    job_ctx jl = *jc;
    const job_ctx *j = &jl;
    const char *dir = plan->model_dir, *fp32_dir = dir, *out = plan->out_dir, *calib = plan->calib;
    const char *evalf = plan->eval, *export = plan->export_list, *buckets = plan->append_buckets;
    int ex_whole = 0, ex_per = 0;
    if (plan_check(j, plan, &ex_whole, &ex_per)) {
        res->usage = 1;
        return 1;
    }
    pdq_quant_opts o = plan->qo;
    pdq_ptq_run_opts ro = plan->ptq;
    pdq_transform_opts tro = plan->transform;
    int nsamples = plan->nsamples, seq_len = plan->seq_len, threads = plan->threads, abits = plan->abits;
    int eval_len = plan->eval_len, eval_stride = plan->eval_stride, want_kld = plan->kld;
    long eval_tokens = plan->eval_tokens;
    quantize_tasks_opts tko = {plan->tasks, plan->task_data, plan->task_limit, plan->task_shots};
    if (pdq_transform_any(&tro)) o.transforms = &tro;
    tro.dist = NULL; /* set to the job's ranks once it has started */
    char tdir[4096];

    quantize_times tm;
    quantize_times_init(&tm);
    quantize_profile prof = {0};
    double t_start = pdq_now(), t0;
    int status = 1;
    int32_t *eval_ids = NULL, *text = NULL, *windows = NULL;
    size_t n_eval = 0;
    long n_text = 0;
    pdq_quant_eval ev = {0};
    pdq_qmodel q = {0};
    quantize_prompts prompts = {0};
    pdq_status st = {0};
    job_stream rs = {0};
    /* Quantization needs one layer in memory at a time (lazy model); the FP32 perplexity needs the
     * whole float model, loaded for it and freed before quantizing. */
    pdq_model *m = NULL;
    quantize_view tview = {0};
    quantize_job job; /* under mpirun: this rank of the job (pdq-mpi); else a job of one */
    if (quantize_job_start(&job, j)) return 1;
    jl.quiet_results = !job.lead;
    res->lead = job.lead;
    o.dist = job.d;
    tro.dist = job.d;
    if (pdq_model_load_lazy(dir, &m, &st)) {
        quantize_job_fail(&job, st.msg);
        job_fail(j, st.code, "%s", st.msg);
        quantize_job_end(&job);
        return 1;
    }
    quantize_job_check(&job, plan->argc, plan->argv, dir, calib, evalf);
    pdq_set_threads(m, threads);
    if (plan->profile && job.lead) {
        if (quantize_profile_probe(j, &prof, threads, 0)) goto done;
        o.prof = &prof.q;
        pdq_set_threads(m, threads);
    }
    if (evalf && eval_len > m->cfg.max_position_embeddings) {
        job_note(j, "note: --eval-len %d capped to max_position_embeddings %d", eval_len, m->cfg.max_position_embeddings);
        eval_len = m->cfg.max_position_embeddings;
        if (eval_stride > eval_len) eval_stride = eval_len;
    }
    /* ranks other than 0 calibrate only: no --out, evaluation or later steps */
    quantize_plan pf = {dir, job.lead ? out : NULL, calib, evalf, export, ex_whole, ex_per, &o, &ro, abits, nsamples,
                        seq_len, eval_len, eval_stride, plan->eval_fp32_ppl, threads};
    /* Everything that can fail without computing fails here, before the FP32 evaluation and GPTQ.
     * Under mpirun rank 0 checks first and the others follow once it passed (one message). */
    if (!job.lead && pdq_dist_barrier(job.d, &st)) goto fail;
    if (quantize_preflight(j, &pf, m)) {
        res->usage = stp->code == PDQ_ERR_ARG;
        goto done;
    }
    if (job.lead && tko.tasks && quantize_tasks_check(j, &tko)) goto done;
    if (!job.lead) export = NULL; /* --eval stays: the perplexities are split over the ranks */
    if ((abits != PDQ_ADT_FLOAT || export) && job.lead && quantize_prompts_load(j, evalf ? evalf : calib, &prompts, &ro))
        goto done;
    if ((abits != PDQ_ADT_FLOAT || export) && job.lead && quantize_check_verify(j, dir, &ro)) {
        res->usage = stp->code == PDQ_ERR_ARG;
        goto done;
    }
    int bos = -1;
    t0 = pdq_now();
    step(j, PDQ_QSTEP_CALIB, 0, 0);
    if (calib && (o.method == PDQ_QM_GPTQ || abits != PDQ_ADT_FLOAT || tro.smooth) &&
        pdq_calib_tokenize(dir, calib, &text, &n_text, &bos, &st))
        goto fail;
    prof.tokenize_s = pdq_now() - t0;
    if (o.method == PDQ_QM_GPTQ || tro.smooth) {
        int cap = m->cfg.max_position_embeddings;
        if (seq_len <= 0) {
            seq_len = 2048 < cap ? 2048 : cap;
            if (n_text + (bos >= 0) < seq_len) seq_len = (int)n_text + (bos >= 0);
        } else if (seq_len > cap) {
            job_note(j, "--seq-len %d capped to max_position_embeddings %d", seq_len, cap);
            seq_len = cap;
        }
        pf.seq_len = seq_len;
        if (pdq_calib_windows(text, n_text, nsamples, seq_len, bos, o.seed, &windows, &st)) goto calib_fail;
    }
    if (abits != PDQ_ADT_FLOAT) { /* the activation step's windows, drawn now only to check they fit */
        int32_t *w = NULL;
        pdq_code rc = pdq_calib_windows(text, n_text, ro.nsamples, ro.max_seq, bos, o.seed, &w, &st);
        free(w);
        if (rc) goto calib_fail;
    }
    if (job.lead && pdq_dist_barrier(job.d, &st)) goto fail;
    if (evalf) {
        pdq_tokenizer *tok = job_load_tokenizer(j, dir);
        size_t len;
        char *buf = tok ? job_read_text(j, evalf, &len) : NULL;
        pdq_code rc = buf ? pdq_tokenizer_encode(tok, buf, len, 1, &eval_ids, &n_eval, &st) : PDQ_ERR_IO;
        if (rc && buf) job_fail(j, st.code, "%s: %s", evalf, st.msg);
        free(buf);
        pdq_tokenizer_free(tok);
        if (rc) goto done;
        if (n_eval < 2) {
            job_fail(j, PDQ_ERR_LIMIT, "--eval %s: %zu token(s), perplexity needs at least 2", evalf, n_eval);
            goto done;
        }
        if (eval_tokens > 0 && (size_t)eval_tokens < n_eval) n_eval = (size_t)eval_tokens;
    }
    if (job.lead) quantize_print_config(j, &pf, m);
    if (prompts.file)
        job_text(j, "  verify       the first %d line%s of %s (%d words each) as prompts\n", prompts.n,
                 prompts.n > 1 ? "s" : "", prompts.file, QUANTIZE_PROMPT_WORDS);
    if (evalf) {
        ev.has = 1;
        ev.file = evalf;
        ev.max_len = eval_len;
        ev.stride = eval_stride;
        if (plan->eval_fp32_ppl > 0) ev.fp32_ppl = plan->eval_fp32_ppl;
        else {
            double te = pdq_now();
            step(j, PDQ_QSTEP_FP32_EVAL, 0, 0);
            pdq_model *fm = job_load_model(j, dir, threads);
            int bad = !fm || eval_ppl(j, &job, fm, eval_ids, (long)n_eval, eval_len, eval_stride, "ppl fp32", &ev.fp32_ppl,
                                      &ev.tokens);
            pdq_model_free(fm);
            tm.t[QS_FP32_EVAL] = pdq_now() - te;
            if (bad) goto done;
            step(j, PDQ_QSTEP_FP32_EVAL, 1, tm.t[QS_FP32_EVAL]);
        }
    }
    if (o.transforms && plan->save_transformed) { /* from here on the run works on the transformed checkpoint */
        pdq_model_free(m);
        m = NULL;
        /* rank 0 writes the transformed checkpoint, the others then read it */
        if (job.lead && quantize_transform_run(j, dir, out, &tro, windows, nsamples, seq_len, threads, tdir, sizeof tdir))
            goto done;
        /* the others take their share of SmoothQuant's windows in the same pass, writing nothing */
        if (!job.lead && tro.smooth && quantize_transform_share(j, dir, &tro, windows, nsamples, seq_len, threads)) goto done;
        if (!job.lead) snprintf(tdir, sizeof tdir, "%s/transformed", out);
        if (pdq_dist_barrier(job.d, &st)) goto fail;
        dir = tdir;
        if (pdq_model_load_lazy(dir, &m, &st)) goto fail;
        pdq_set_threads(m, threads);
    } else if (o.transforms && quantize_transform_attach(j, m, &tro, windows, nsamples, seq_len, threads, &tview)) {
        goto done;
    }
    if (pdq_quantize_model(m, &o, windows, nsamples, seq_len, &q, &st)) goto fail;
    quantize_job_report(&job, q.comm_bytes, q.comm_seconds);
    ro.seed = o.seed;
    ro.dist = job.d;
    if (!job.lead) { /* rank 0 alone writes; the others then read OUTDIR for their share of the evaluation
                      * and of the activation calibration */
        if (ev.has || abits != PDQ_ADT_FLOAT) {
            if (pdq_dist_barrier(job.d, &st)) goto fail;
            pdq_model_free(m);
            if (!(m = job_load_model(j, out, threads))) {
                char msg[4400];
                snprintf(msg, sizeof msg, "cannot read the checkpoint rank 0 wrote to %s (--eval and --abits read it on "
                         "every rank: OUTDIR must be on a file system all ranks share)", out);
                quantize_job_fail(&job, msg);
                goto done;
            }
        }
        double qp;
        long qt;
        if (ev.has && eval_ppl(j, &job, m, eval_ids, (long)n_eval, eval_len, eval_stride, NULL, &qp, &qt)) goto done;
        if (ev.has && want_kld) { /* the same KLD call as rank 0's below: its share of both sides */
            kld_opts ko = {dir, NULL, 0, 0, threads, job.d};
            int reused;
            char cache[4600];
            pdq_kld_result kr;
            pdq_ppl_result pr;
            if (job_kld(j, &ko, eval_ids, (long)n_eval, eval_len, eval_stride, quantize_model_window, m,
                        m->cfg.vocab_size, &kr, &pr, &reused, cache, (int)sizeof cache))
                goto done;
        }
        if (abits != PDQ_ADT_FLOAT && pdq_ptq_calibrate_share(m, &ro, text, n_text, bos, &st)) goto fail;
        status = 0;
        goto done;
    }
    tm.t[QS_CALIB] = pdq_now() - t0 - tm.t[QS_FP32_EVAL]; /* split with QS_WEIGHTS by the summary */
    tm.t[QS_WEIGHTS] = 0;
    step(j, PDQ_QSTEP_CALIB, 1, tm.t[QS_CALIB]);
    if (!plan->quiet) {
        FILE *f = job_stream_open(&rs);
        if (f) pdq_qmodel_print(&q, f);
        job_stream_close(j, &rs);
    }
    t0 = pdq_now();
    step(j, PDQ_QSTEP_SAVE, 0, 0);
    if (pdq_quant_save(out, dir, m, &q, &st)) goto fail;
    tm.t[QS_SAVE] = pdq_now() - t0;
    step(j, PDQ_QSTEP_SAVE, 1, tm.t[QS_SAVE]);
    /* the checkpoint is complete: the other ranks may read it */
    if ((ev.has || abits != PDQ_ADT_FLOAT) && pdq_dist_barrier(job.d, &st)) goto fail;
    if (ev.has || abits != PDQ_ADT_FLOAT) {
        /* the steps below run the whole quantized model: loaded from OUTDIR (dequantized there
         * exactly as the quantizer computed it) */
        pdq_model_free(m);
        if (!(m = job_load_model(j, out, threads))) goto done;
    }
    t0 = pdq_now();
    if (ev.has) step(j, PDQ_QSTEP_QUANT_EVAL, 0, 0);
    if (ev.has && eval_ppl(j, &job, m, eval_ids, (long)n_eval, eval_len, eval_stride, "ppl quant", &ev.quant_ppl, &ev.tokens))
        goto done;
    if (ev.has && want_kld) {
        kld_opts ko = {dir, NULL, 0, 0, threads, job.d};
        int reused;
        char cache[4600];
        pdq_ppl_result pr;
        if (job_kld(j, &ko, eval_ids, (long)n_eval, eval_len, eval_stride, quantize_model_window, m, m->cfg.vocab_size,
                    &res->kld, &pr, &reused, cache, (int)sizeof cache))
            goto done;
        res->have_kld = 1;
        job_note(j, "kld: FP32 logits %s %s", reused ? "reused from" : "cached in", cache);
    }
    if (ev.has) {
        tm.t[QS_QUANT_EVAL] = pdq_now() - t0;
        step(j, PDQ_QSTEP_QUANT_EVAL, 1, tm.t[QS_QUANT_EVAL]);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/report.json", out);
    if (pdq_quant_write_report(path, &q, &ev, &st)) goto fail;
    if (ev.has)
        job_result(j, "perplexity fp32 %.4f  quantized %.4f  (+%.4f)\n", ev.fp32_ppl, ev.quant_ppl, ev.quant_ppl - ev.fp32_ppl);
    t0 = pdq_now();
    if (abits != PDQ_ADT_FLOAT) {
        step(j, PDQ_QSTEP_ACT, 0, 0);
        FILE *f = job_stream_open(&rs);
        pdq_code rc = f ? pdq_ptq_quantize_dir(dir, out, m, &ro, text, n_text, bos, eval_ids, (long)n_eval, f, &st)
                        : pdq_fail(&st, PDQ_ERR_NOMEM, "the activation step's report: out of memory");
        job_stream_close(j, &rs);
        if (rc) goto fail;
        tm.t[QS_ACT] = pdq_now() - t0;
        step(j, PDQ_QSTEP_ACT, 1, tm.t[QS_ACT]);
    }
    t0 = pdq_now();
    if (export) step(j, PDQ_QSTEP_EXPORT, 0, 0);
    if (export && quantize_export(j, dir, out, ex_whole, ex_per, buckets, &ro, eval_ids, (long)n_eval, threads)) goto done;
    if (export) {
        quantize_split_export_time(j, out, pdq_now() - t0, &tm);
        step(j, PDQ_QSTEP_EXPORT, 1, tm.t[QS_EXPORT]);
        step(j, PDQ_QSTEP_CHECK, 1, tm.t[QS_CHECK]);
    }
    if (tko.tasks) { /* one model at a time from here */
        pdq_model_free(m);
        m = NULL;
        if (quantize_tasks_run(j, &tko, fp32_dir, out, abits != PDQ_ADT_FLOAT, buckets, threads)) goto done;
    }
    if (plan->profile && quantize_profile_probe(j, &prof, threads, 1)) goto done;
    tm.total = pdq_now() - t_start;
    if (quantize_summary(j, dir, out, &tm, res->have_kld ? &res->kld : NULL, plan->profile ? &prof : NULL)) goto done;
    if (pdq_report_html(out, NULL, &st)) goto fail;
    status = 0;
    goto done;
calib_fail:
    job_fail(j, st.code, "--calib %s: %s", calib, st.msg);
    goto done;
fail:
    quantize_job_fail(&job, st.msg);
    job_fail(j, st.code, "%s", st.msg);
done:
    if (status) quantize_job_fail(&job, stp->code ? stp->msg : "failed");
    quantize_job_end(&job);
    for (int i = 0; i < QS_COUNT; i++) res->seconds[i] = tm.t[i];
    res->total = tm.total;
    pdq_qmodel_free(&q);
    quantize_prompts_free(&prompts);
    free(eval_ids);
    free(text);
    free(windows);
    pdq_model_free(m);
    quantize_transform_detach(&tview);
    return status;
}

pdq_code pdq_quantize_run(const pdq_quantize_plan *plan, const pdq_quantize_callbacks *cb, pdq_quantize_result *res,
                          pdq_status *st) {
    pdq_status local = {0};
    pdq_quantize_result rl;
    if (!st) st = &local;
    if (!res) res = &rl;
    pdq_status_clear(st);
    memset(res, 0, sizeof *res);
    for (int i = 0; i < PDQ_QSTEP_COUNT; i++) res->seconds[i] = -1;
    job_ctx j = {cb, st, 0};
    if (run(&j, plan, res) == 0) return PDQ_OK;
    if (st->code == PDQ_OK) pdq_fail(st, PDQ_ERR_IO, "the quantize job failed");
    return st->code;
}
