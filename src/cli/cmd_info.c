/* pdq info --model DIR [--json]: config summary, parameter count, stored dtypes, shards, tokenizer.
 * Reads only headers (config.json, safetensors headers, tokenizer.json), never the weights. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdq/file.h"
#include "model/check_tensors.h"
#include "args.h"
#include "commands.h"
#include "pdq/config.h"
#include "pdq/quant.h"
#include "pdq/safetensors.h"
#include "pdq/tokenizer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: pdq info --model DIR [--json]\n"
               "  Prints the model's config summary, parameter count, stored dtypes, shard count,\n"
               "  tied embeddings, RoPE type and tokenizer family.\n");
}

typedef struct {
    int n_files, quantized;
    int count[PDQ_DT_BOOL + 1]; /* tensors per stored dtype */
    char tok[160];              /* tokenizer family, "none" or the error */
    int tok_vocab;
} info;

static void gather(const char *dir, const pdq_config *c, info *in, pdq_status *wst, int *weights_ok) {
    memset(in, 0, sizeof *in);
    char path[4096];
    in->quantized = pdq_quant_is_checkpoint(dir);
    if (in->quantized) snprintf(path, sizeof path, "%s/model.q.safetensors", dir);
    else snprintf(path, sizeof path, "%s", dir);
    pdq_safetensors *s;
    *weights_ok = pdq_st_open(path, &s, wst) == PDQ_OK;
    if (*weights_ok) {
        char cfg_file[4200];
        snprintf(cfg_file, sizeof cfg_file, "%s/config.json", dir);
        /* the config's sizes against the tensors present (a 1000-layer config over 5 layers) */
        *weights_ok = pdq_check_tensors(c, s, in->quantized, cfg_file, wst) == PDQ_OK;
        in->n_files = pdq_st_file_count(s);
        for (int i = 0; i < pdq_st_count(s); i++) in->count[pdq_st_at(s, i)->dtype]++;
        pdq_st_close(s);
    }
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    snprintf(in->tok, sizeof in->tok, "none");
    if (pdq_path_stat(path, NULL, NULL) != PDQ_PATH_NONE) {
        pdq_tokenizer *t;
        pdq_status st = {0};
        if (pdq_tokenizer_load(dir, &t, &st) == PDQ_OK) {
            snprintf(in->tok, sizeof in->tok, "%s", pdq_tokenizer_family(t));
            in->tok_vocab = pdq_tokenizer_vocab_size(t);
            pdq_tokenizer_free(t);
        } else {
            snprintf(in->tok, sizeof in->tok, "error: %.140s", st.msg);
        }
    }
}

static void print_text(const char *dir, const pdq_config *c, const info *in, int weights_ok, const pdq_status *wst) {
    printf("model:              %s\n", dir);
    const pdq_family *f = pdq_family_of(c);
    printf("architecture:       %s%s\n", f->name, in->quantized ? " (pdq quantized checkpoint)" : "");
    printf("hidden_size:        %d\n", c->hidden_size);
    printf("intermediate_size:  %d\n", c->intermediate_size);
    printf("layers:             %d\n", c->n_layers);
    printf("attention heads:    %d (kv heads %d%s, head_dim %d)\n", c->n_heads, c->n_kv_heads,
           c->n_kv_heads < c->n_heads ? ", GQA" : "", c->head_dim);
    printf("vocab_size:         %d\n", c->vocab_size);
    printf("max_positions:      %d\n", c->max_position_embeddings);
    printf("rms_norm_eps:       %g\n", (double)c->rms_norm_eps);
    if (c->bias_mask) {
        printf("biases:            ");
        for (int i = 0; i < PDQ_LIN_COUNT; i++)
            if (c->bias_mask >> i & 1u) printf(" %s", pdq_linear_name((pdq_linear_id)i));
        printf("\n");
    }
    if (c->qk_norm) printf("q/k head norms:     yes (RMSNorm over head_dim before RoPE)\n");
    if (c->fused_qkv || c->fused_gate_up) printf("stacked linears:    qkv_proj, gate_up_proj (split at load)\n");
    if (c->sliding_window) {
        int n = 0;
        for (int l = 0; l < c->n_layers; l++) n += pdq_cfg_layer_window(c, l) > 0;
        if (n == c->n_layers) printf("sliding window:     %d keys on every layer\n", c->sliding_window);
        else {
            printf("sliding window:     %d keys on %d of %d layers:", c->sliding_window, n, c->n_layers);
            for (int l = 0; l < c->n_layers; l++)
                if (pdq_cfg_layer_window(c, l)) printf(" %d", l);
            printf("\n");
        }
    }
    if (pdq_family_of(c)->block == PDQ_BLOCK_SANDWICH)
        printf("block:              sandwich (input, post-attention, pre- and post-feedforward norms)\n");
    if (c->norm_offset != 0.0f) printf("norms:              RMSNorm times (%g + w)\n", (double)c->norm_offset);
    if (c->act == PDQ_ACT_GELU_TANH) printf("mlp activation:     gelu_pytorch_tanh\n");
    if (c->embed_scale != 0.0f) printf("embedding scale:    %.9g\n", (double)c->embed_scale);
    if (c->attn_scale != 0.0f) printf("attention scale:    %.9g\n", (double)c->attn_scale);
    if (c->attn_softcap != 0.0f) printf("attn softcap:       %g\n", (double)c->attn_softcap);
    if (c->final_softcap != 0.0f) printf("final softcap:      %g\n", (double)c->final_softcap);
    if (pdq_cfg_rotary_dim(c) != c->head_dim)
        printf("partial rope:       %d of %d head dims\n", pdq_cfg_rotary_dim(c), c->head_dim);
    if (c->rope_type == PDQ_ROPE_LONGROPE)
        printf("rope:               longrope (theta %g, original %d, attention factor %g)\n", c->rope_theta,
               c->rope_original_max_pos, (double)c->rope_attn_factor);
    else if (c->rope_type == PDQ_ROPE_LINEAR)
        printf("rope:               linear (theta %g, factor %g)\n", c->rope_theta, c->rope_factor);
    else if (c->rope_type == PDQ_ROPE_LLAMA3)
        printf("rope:               llama3 (theta %g, factor %g, low %g, high %g, original %d)\n", c->rope_theta,
               c->rope_factor, c->rope_low_freq_factor, c->rope_high_freq_factor, c->rope_original_max_pos);
    else
        printf("rope:               default (theta %g)\n", c->rope_theta);
    if (c->rope_local_theta > 0) printf("local rope:         theta %g on sliding layers (unscaled)\n", c->rope_local_theta);
    printf("tied embeddings:    %s\n", c->tie_word_embeddings ? "yes" : "no");
    printf("bos / eos:          %d /", c->bos_token_id);
    for (int i = 0; i < c->n_eos; i++) printf(" %d", c->eos_token_ids[i]);
    printf("%s\n", c->n_eos ? "" : " none");
    printf("torch_dtype:        %s\n", c->torch_dtype[0] ? c->torch_dtype : "(not given)");
    long long p = pdq_family_param_count(c);
    printf("parameters:         %lld (%.2fM)\n", p, (double)p / 1e6);
    if (weights_ok) {
        printf("stored dtypes:     ");
        for (int d = 0; d <= PDQ_DT_BOOL; d++)
            if (in->count[d]) printf(" %s x%d", pdq_dtype_name((pdq_dtype)d), in->count[d]);
        printf("\nshards:             %d\n", in->n_files);
    } else {
        printf("weights:            error: %s\n", wst->msg);
    }
    if (in->tok_vocab) printf("tokenizer:          %s (%d tokens)\n", in->tok, in->tok_vocab);
    else printf("tokenizer:          %s\n", in->tok);
}

static int print_json(const char *dir, const pdq_config *c, const info *in, int weights_ok, const pdq_status *wst) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "model", dir);
    const pdq_family *f = pdq_family_of(c);
    cJSON_AddStringToObject(r, "model_type", f->model_types[0]);
    cJSON_AddStringToObject(r, "family", f->name);
    if (c->bias_mask) {
        cJSON *b = cJSON_AddArrayToObject(r, "biases");
        for (int i = 0; i < PDQ_LIN_COUNT; i++)
            if (c->bias_mask >> i & 1u) cJSON_AddItemToArray(b, cJSON_CreateString(pdq_linear_name((pdq_linear_id)i)));
    }
    if (c->qk_norm) cJSON_AddBoolToObject(r, "qk_norm", 1);
    if (c->fused_qkv || c->fused_gate_up) cJSON_AddBoolToObject(r, "stacked_linears", 1);
    if (c->sliding_window) {
        cJSON_AddNumberToObject(r, "sliding_window", c->sliding_window);
        cJSON *lt = cJSON_AddArrayToObject(r, "layer_types");
        for (int l = 0; l < c->n_layers; l++)
            cJSON_AddItemToArray(lt, cJSON_CreateString(pdq_cfg_layer_window(c, l) ? "sliding_attention" : "full_attention"));
    }
    if (pdq_family_of(c)->block == PDQ_BLOCK_SANDWICH) cJSON_AddStringToObject(r, "block", "sandwich");
    if (c->norm_offset != 0.0f) cJSON_AddNumberToObject(r, "norm_offset", c->norm_offset);
    if (c->act == PDQ_ACT_GELU_TANH) cJSON_AddStringToObject(r, "hidden_activation", "gelu_pytorch_tanh");
    if (c->embed_scale != 0.0f) cJSON_AddNumberToObject(r, "embed_scale", c->embed_scale);
    if (c->attn_scale != 0.0f) cJSON_AddNumberToObject(r, "attention_scale", c->attn_scale);
    if (c->attn_softcap != 0.0f) cJSON_AddNumberToObject(r, "attn_logit_softcapping", c->attn_softcap);
    if (c->final_softcap != 0.0f) cJSON_AddNumberToObject(r, "final_logit_softcapping", c->final_softcap);
    if (c->rope_local_theta > 0) cJSON_AddNumberToObject(r, "rope_local_base_freq", c->rope_local_theta);
    if (pdq_cfg_rotary_dim(c) != c->head_dim) cJSON_AddNumberToObject(r, "rotary_dim", pdq_cfg_rotary_dim(c));
    cJSON_AddBoolToObject(r, "quantized", in->quantized);
    cJSON_AddNumberToObject(r, "hidden_size", c->hidden_size);
    cJSON_AddNumberToObject(r, "intermediate_size", c->intermediate_size);
    cJSON_AddNumberToObject(r, "num_hidden_layers", c->n_layers);
    cJSON_AddNumberToObject(r, "num_attention_heads", c->n_heads);
    cJSON_AddNumberToObject(r, "num_key_value_heads", c->n_kv_heads);
    cJSON_AddNumberToObject(r, "head_dim", c->head_dim);
    cJSON_AddNumberToObject(r, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(r, "max_position_embeddings", c->max_position_embeddings);
    char eps[32]; /* the float's shortest decimal, not its double expansion */
    snprintf(eps, sizeof eps, "%g", (double)c->rms_norm_eps);
    cJSON_AddNumberToObject(r, "rms_norm_eps", strtod(eps, NULL));
    cJSON_AddNumberToObject(r, "rope_theta", c->rope_theta);
    cJSON_AddStringToObject(r, "rope_type", c->rope_type == PDQ_ROPE_LLAMA3     ? "llama3"
                                            : c->rope_type == PDQ_ROPE_LONGROPE ? "longrope"
                                            : c->rope_type == PDQ_ROPE_LINEAR   ? "linear"
                                                                                : "default");
    if (c->rope_type == PDQ_ROPE_LINEAR) cJSON_AddNumberToObject(cJSON_AddObjectToObject(r, "rope_scaling"), "factor", c->rope_factor);
    if (c->rope_type == PDQ_ROPE_LLAMA3) {
        cJSON *rs = cJSON_AddObjectToObject(r, "rope_scaling");
        cJSON_AddNumberToObject(rs, "factor", c->rope_factor);
        cJSON_AddNumberToObject(rs, "low_freq_factor", c->rope_low_freq_factor);
        cJSON_AddNumberToObject(rs, "high_freq_factor", c->rope_high_freq_factor);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", c->rope_original_max_pos);
    }
    cJSON_AddBoolToObject(r, "tie_word_embeddings", c->tie_word_embeddings);
    cJSON_AddNumberToObject(r, "bos_token_id", c->bos_token_id);
    cJSON *eos = cJSON_AddArrayToObject(r, "eos_token_ids");
    for (int i = 0; i < c->n_eos; i++) cJSON_AddItemToArray(eos, cJSON_CreateNumber(c->eos_token_ids[i]));
    cJSON_AddStringToObject(r, "torch_dtype", c->torch_dtype);
    cJSON_AddNumberToObject(r, "parameters", (double)pdq_family_param_count(c));
    if (weights_ok) {
        cJSON *dt = cJSON_AddObjectToObject(r, "dtypes");
        for (int d = 0; d <= PDQ_DT_BOOL; d++)
            if (in->count[d]) cJSON_AddNumberToObject(dt, pdq_dtype_name((pdq_dtype)d), in->count[d]);
        cJSON_AddNumberToObject(r, "shards", in->n_files);
    } else {
        cJSON_AddStringToObject(r, "weights_error", wst->msg);
    }
    cJSON_AddStringToObject(r, "tokenizer", in->tok);
    if (in->tok_vocab) cJSON_AddNumberToObject(r, "tokenizer_vocab_size", in->tok_vocab);
    char *text = cJSON_PrintUnformatted(r);
    int ok = text != NULL;
    if (ok) printf("%s\n", text);
    free(text);
    cJSON_Delete(r);
    return ok ? 0 : 1;
}

int cmd_info(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "info", argc, argv);
    if (args_flag(&a, "--help") || args_flag(&a, "-h")) {
        usage(stdout);
        return 0;
    }
    const char *dir = args_required(&a, "--model");
    int json = args_flag(&a, "--json");
    if (args_finish(&a)) return ARGS_USAGE_EXIT;
    pdq_config c;
    pdq_status st = {0};
    if (pdq_config_load(dir, &c, &st) != PDQ_OK) {
        fprintf(stderr, "pdq info: %s\n", st.msg);
        return 1;
    }
    info in;
    pdq_status wst = {0};
    int weights_ok;
    gather(dir, &c, &in, &wst, &weights_ok);
    int rc = json ? print_json(dir, &c, &in, weights_ok, &wst) : (print_text(dir, &c, &in, weights_ok, &wst), 0);
    if (!weights_ok) fprintf(stderr, "pdq info: %s\n", wst.msg);
    return rc ? rc : (weights_ok ? 0 : 1);
}
