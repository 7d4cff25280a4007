"""Writes an EXAONE-layout copy of a Llama checkpoint: the same tensor bytes under EXAONE 3.x's
names (transformer.wte, transformer.h.N.ln_1, attn.attention.{q,k,v,out}_proj, mlp.c_fc_0 = gate,
mlp.c_fc_1 = up, mlp.c_proj = down, ln_2, transformer.ln_f; lm_head unchanged) and its config.json
(num_layers, layer_norm_epsilon, activation_function, model_type exaone); the tokenizer files
are copied. EXAONE computes Llama's function, so the copy is the same model.
usage: exaone_copy.py SRC_DIR DST_DIR [FIELD=JSON ...] (config overrides, e.g. activation_function='"gelu"');
module() maps a Llama tensor or quantized-module name to EXAONE's (families_exaone.sh imports it)."""
import json, os, re, shutil, struct, sys

LAYER = {'input_layernorm': 'ln_1', 'post_attention_layernorm': 'ln_2',
         'self_attn.q_proj': 'attn.attention.q_proj', 'self_attn.k_proj': 'attn.attention.k_proj',
         'self_attn.v_proj': 'attn.attention.v_proj', 'self_attn.o_proj': 'attn.attention.out_proj',
         'mlp.gate_proj': 'mlp.c_fc_0', 'mlp.up_proj': 'mlp.c_fc_1', 'mlp.down_proj': 'mlp.c_proj'}
def module(name):
    """Llama's name of a tensor or a pdq quantized module's part (model.layers.N.<module>.<leaf>)
    -> EXAONE's."""
    for old, new in (('model.embed_tokens.', 'transformer.wte.'), ('model.norm.', 'transformer.ln_f.')):
        if name.startswith(old):
            return new + name[len(old):]
    m = re.fullmatch(r'model\.layers\.(\d+)\.(.+)\.([a-z_]+)', name)
    if not m:
        return name  # lm_head
    return 'transformer.h.%s.%s.%s' % (m.group(1), LAYER[m.group(2)], m.group(3))

if __name__ == '__main__':
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    b = open(src + '/model.safetensors', 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {('__metadata__' if k == '__metadata__' else module(k)): v for k, v in h.items()}
    hb = json.dumps(out).encode()
    hb += b' ' * (-len(hb) % 8)
    with open(dst + '/model.safetensors', 'wb') as f:
        f.write(struct.pack('<Q', len(hb)) + hb + b[8 + n:])
    c = json.load(open(src + '/config.json'))
    for old, new in (('num_hidden_layers', 'num_layers'), ('rms_norm_eps', 'layer_norm_epsilon'),
                     ('hidden_act', 'activation_function')):
        c[new] = c.pop(old)
    for k in ('attention_bias', 'mlp_bias', 'pretraining_tp'):
        c.pop(k, None)
    c['model_type'], c['architectures'] = 'exaone', ['ExaoneForCausalLM']
    for kv in sys.argv[3:]:
        k, v = kv.split('=', 1)
        c[k] = json.loads(v)
    json.dump(c, open(dst + '/config.json', 'w'), indent=2)
    for f in ('tokenizer.json', 'tokenizer_config.json', 'generation_config.json'):
        if os.path.exists(src + '/' + f):
            shutil.copy(src + '/' + f, dst + '/' + f)
