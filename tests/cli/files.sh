#!/usr/bin/env bash
# Files pdq reads and writes, at the command line, on the small stories260K model:
#  - a full disk (a tiny tmpfs, when mount works here; and always a file-size limit, ulimit -f)
#    during quantize and export: non-zero exit, every earlier output byte-identical, no temp
#    file left, and the same command succeeding once there is room;
#  - hostile config.json / ptq.json / pdq_quant.json / manifest.json / .npy / tokenizer inputs:
#    non-zero exit and a message naming the file, the field or tensor, the value and the limit.
set -u
PDQ=${1:?usage: files.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
# err of checks.sh, but a sanitizer report (a leak on an error path also exits non-zero) fails it
err() { # name "cmd" needle
    local out
    if out=$(eval "$2" 2>&1); then bad "$1: exit 0"; return; fi
    if grep -q 'Sanitizer' <<<"$out"; then bad "$1: sanitizer report: $out"; return; fi
    if grep -qF -- "$3" <<<"$out"; then ok "$1"; else bad "$1: no '$3' in: $out"; fi
}
SYNTH=${PDQ_BUILD_DIR:-$(dirname "$PDQ")}/pdq_synth
need_stories
M=$STORIES
TXT=$TINY/test.txt
disk=$tmp/disk
trap 'umount "$disk" 2>/dev/null; rm -rf "$tmp"' EXIT

quant() { # OUT [--abits N] [extra options]: a fast RTN w8 / a16 (or aN) quantization
    local out=$1 abits=16; shift
    if [ "${1:-}" = --abits ]; then abits=$2; shift 2; fi
    "$PDQ" quantize --model $M --calib $TINY/train.txt --method rtn --wbits 8 --abits "$abits" \
        --max-seq 64 --nsamples 4 --decode-calib-steps 2 --threads 1 --out "$out" "$@"
}
snapshot() { (cd "$1" && find . -type f ! -name fill -print0 | sort -z | xargs -0 md5sum); }
no_temps() { [ -z "$(find "$1" -name '*.tmp.*')" ]; }

# ---- full disk -------------------------------------------------------------------------------
# A rerun with other options, so a truncated or half-new file would differ from the snapshot.
full_disk_rerun() { # label dir expected-errno-text rerun-prefix
    local label=$1 d=$2 needle=$3 prefix=$4
    snapshot "$d/q" >"$tmp/before"
    if eval "$prefix quant '$d/q' --abits 8" >"$tmp/log" 2>&1; then bad "$label quantize: exit 0"; else ok "$label quantize exits non-zero"; fi
    check "$label message" "grep -q '$needle' '$tmp/log' && grep -q 'nothing written under this name' '$tmp/log'"
    check "$label outputs unchanged" "(cd '$d/q' && md5sum --quiet -c '$tmp/before')"
    check "$label no temp files" "no_temps '$d/q'"
    snapshot "$d/c" >"$tmp/before"
    # the same export again: every file it manages to replace must be whole (identical)
    if eval "$prefix '$PDQ' export --model '$d/q' --max-seq 32 --out '$d/c' --quiet" >"$tmp/log" 2>&1; then
        bad "$label export: exit 0"
    else ok "$label export exits non-zero"; fi
    check "$label export message" "grep -q '$needle' '$tmp/log'"
    check "$label export outputs unchanged" "(cd '$d/c' && md5sum --quiet -c '$tmp/before')"
    check "$label export no temp files" "no_temps '$d/c'"
    md5sum "$d/q/logits.npy" >"$tmp/lbefore"
    if eval "$prefix '$PDQ' logits --model $M --ids '1 2 3 4 5 6 7 8 9 10 11 12' --out '$d/q/logits.npy'" >"$tmp/log" 2>&1; then
        bad "$label logits: exit 0"
    else ok "$label logits exits non-zero"; fi
    check "$label logits.npy unchanged" "md5sum --quiet -c '$tmp/lbefore' && no_temps '$d/q'"
}

mkdir -p "$disk"
if mount -t tmpfs -o size=6m tmpfs "$disk" 2>/dev/null; then
    quant "$disk/q" >"$tmp/log" 2>&1 || bad "tmpfs: first quantize failed: $(tail -3 $tmp/log)"
    "$PDQ" export --model "$disk/q" --max-seq 32 --out "$disk/c" --quiet >/dev/null 2>&1 || bad "tmpfs: first export failed"
    "$PDQ" logits --model $M --ids "1 2 3 4 5 6 7 8" --out "$disk/q/logits.npy" >/dev/null 2>&1 || bad "tmpfs: first logits failed"
    # fill the disk, then free 12 KiB: the small copies fit, tokenizer.json (15 KB) does not
    dd if=/dev/zero of="$disk/fill" bs=64k >/dev/null 2>&1
    truncate -s -12K "$disk/fill"
    full_disk_rerun "tmpfs-full" "$disk" "No space left on device" ""
    rm -f "$disk/fill"
    quant "$disk/q" --abits 8 >"$tmp/log" 2>&1 && ok "tmpfs: quantize succeeds with room" || bad "tmpfs: quantize with room: $(tail -3 $tmp/log)"
    check "tmpfs: new ptq.json is complete" "jq -e '.activation_dtype == \"uint8\"' '$disk/q/ptq.json' >/dev/null"
    umount "$disk"
else
    echo "skip tmpfs full-disk checks (mount -t tmpfs not permitted here)"
fi
# A file-size limit works without root: writes past it fail (EFBIG) as on a full disk.
mkdir -p "$tmp/lim"
quant "$tmp/lim/q" >"$tmp/log" 2>&1 || bad "first quantize failed: $(tail -3 $tmp/log)"
"$PDQ" export --model "$tmp/lim/q" --max-seq 32 --out "$tmp/lim/c" --quiet >/dev/null 2>&1 || bad "first export failed"
"$PDQ" logits --model $M --ids "1 2 3 4 5 6 7 8" --out "$tmp/lim/q/logits.npy" >/dev/null 2>&1 || bad "first logits failed"
limited() { (trap '' XFSZ; ulimit -f 8; "$@"); } # 8 KiB per file
full_disk_rerun "fsize-limit" "$tmp/lim" "File too large" "limited"

# ---- hostile inputs --------------------------------------------------------------------------
Q=$tmp/lim/q    # a good quantized checkpoint (RTN w8, int16 activations, max_seq 64)
C=$tmp/lim/c    # its Circle export (max_seq 32)
bad_cfg() { # name jq-edit needle...: config.json edited on a copy of the model; generate must refuse
    local name=$1 edit=$2; shift 2
    rm -rf "$tmp/m"; cp -r $M "$tmp/m"
    jq "$edit" $M/config.json >"$tmp/m/config.json"
    local out
    if out=$(timeout 60 "$PDQ" generate --model "$tmp/m" --prompt "Once" --max-new 2 2>&1); then bad "$name: exit 0"; return; fi
    if grep -q 'Sanitizer' <<<"$out"; then bad "$name: sanitizer report: $out"; return; fi
    for n in "$tmp/m/config.json" "$@"; do
        grep -qF -- "$n" <<<"$out" || { bad "$name: no '$n' in: $out"; return; }
    done
    ok "$name"
}
bad_cfg cfg-layers-limit '.num_hidden_layers=100000' 'num_hidden_layers = 100000: must be an integer in [1, 1024]'
bad_cfg cfg-layers-data '.num_hidden_layers=1000' 'tensor model.layers.5.input_layernorm.weight is missing' \
    'num_hidden_layers = 1000, the file holds 5 layer(s)'
check cfg-layers-info "! '$PDQ' info --model '$tmp/m' >/dev/null 2>'$tmp/ierr' && grep -q 'the file holds 5 layer(s)' '$tmp/ierr'"
bad_cfg cfg-vocab-limit '.vocab_size=1073741824' 'vocab_size = 1073741824: must be an integer in [1, 16777216]'
bad_cfg cfg-vocab-data '.vocab_size=1024' 'tensor model.embed_tokens.weight has shape [512, 64], expected [1024, 64]'
bad_cfg cfg-ffn-data '.intermediate_size=100' 'mlp.gate_proj.weight has shape [172, 64], expected [100, 64]'
bad_cfg cfg-hidden-frac '.hidden_size=64.5' 'hidden_size = 64.5: must be an integer'
bad_cfg cfg-eps-tiny '.rms_norm_eps=1e-60' 'rms_norm_eps = 1e-60: must be a finite number in [1e-30, 1]'
bad_cfg cfg-theta-neg '.rope_theta=-5' 'rope_theta = -5: must be a finite number'
bad_cfg cfg-kv-heads '.num_key_value_heads=16' 'num_key_value_heads = 16: must be an integer in [1, 8]'
bad_cfg cfg-head-dim '.head_dim=2048' 'head_dim = 2048: must be an integer in [1, 1024]'
bad_cfg cfg-max-pos '.max_position_embeddings=1e30' 'max_position_embeddings = 1e+30: must be an integer'
bad_cfg cfg-eos-range '.eos_token_id=9999' 'eos_token_id = 9999: must be in [0, 511]'
bad_cfg cfg-rope-factor '.rope_scaling={"rope_type":"llama3","factor":1e300,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":512}' \
    'factor = 1e+300: must be a finite number in [1e-06, 1000000]'

edit_into() { # src-file jq-edit dst-file
    jq "$2" "$1" >"$3.new" && mv "$3.new" "$3"
}
bad_side() { # name file(in $Q) jq-edit needle [command]: one side file edited in a copy of $Q
    local name=$1 file=$2 edit=$3 needle=$4 cmd=${5:-ppl}
    rm -rf "$tmp/q2"; cp -r "$Q" "$tmp/q2"
    if [ "$edit" = TRUNCATE ]; then head -c 2000 "$Q/$file" >"$tmp/q2/$file"; else edit_into "$Q/$file" "$edit" "$tmp/q2/$file"; fi
    local out
    case $cmd in
        ppl) out=$(timeout 120 "$PDQ" ppl --model "$tmp/q2" --static --text $TXT --max-len 32 --threads 1 2>&1) ;;
        export) out=$(timeout 120 "$PDQ" export --model "$tmp/q2" --max-seq 16 --out "$tmp/q2/c" --quiet 2>&1) ;;
        packed) out=$(timeout 120 "$PDQ" ppl --model "$tmp/q2" --text $TXT --max-len 32 --threads 1 2>&1) ;; # packed loader
    esac
    local rc=$?
    if [ $rc -eq 0 ]; then bad "$name: exit 0"; return; fi
    if grep -q 'Sanitizer' <<<"$out"; then bad "$name: sanitizer report: $out"; return; fi
    if grep -qF -- "$tmp/q2/$file" <<<"$out" && grep -qF -- "$needle" <<<"$out"; then ok "$name"; else bad "$name: no '$needle' in: $out"; fi
}
bad_side ptq-scale-tiny ptq.json '.groups[12].scale=1e-60' 'groups[12].scale = 1e-60: must be a finite number in [1e-30, 1e+30]'
bad_side ptq-scale-huge ptq.json '.groups[12].scale=1e60' 'groups[12].scale = 1e+60: must be a finite number in [1e-30, 1e+30]'
bad_side ptq-qmin-qmax ptq.json '.groups[3].qmin=100|.groups[3].qmax=50' 'groups[3]: qmin = 100, qmax = 50: qmin must be < qmax'
bad_side ptq-qmin-dtype ptq.json '.groups[3].qmin=-40000' 'groups[3].qmin = -40000: must be an integer in [-32768, 32767] (int16)'
bad_side ptq-zero-off-grid ptq.json '.groups[2].qmin=68' 'groups[2].zero_point = 0: outside the grid [qmin, qmax] = [68, 32767]'
bad_side ptq-zero-point ptq.json '.groups[3].zero_point=1e30' 'groups[3].zero_point = 1e+30: must be an integer in [0, 0] (int16 grids are symmetric)'
bad_side ptq-uint8-on-int16 ptq.json '.groups[3].dtype="uint8"' 'groups[3].qmin = -32768: must be an integer in [0, 255] (uint8)'
bad_side ptq-max-seq-limit ptq.json '.max_seq=100000000' 'max_seq = 100000000: must be an integer in [2, 65536]'
bad_side ptq-max-seq-model ptq.json '.max_seq=1000' "max_seq = 1000: exceeds the model's max_position_embeddings 512"
bad_side ptq-max-seq-frac ptq.json '.max_seq=64.5' 'max_seq = 64.5: must be an integer in [2, 65536]'
bad_side ptq-observer ptq.json '.observer="bogus"' 'observer = "bogus": must be one of minmax, ema'
bad_side ptq-min-max ptq.json '.groups[2].min=5|.groups[2].max=1' 'groups[2]: min = 5 > max = 1'
bad_side ptq-edge-index ptq.json '.edges["model.embed_tokens.out"]=9999' 'edges.model.embed_tokens.out = 9999: must be an integer in [0, 142]'
bad_side ptq-mask-fill ptq.json '.static_opts.mask_fill=1e300' 'static_opts.mask_fill = 1e+300: must be a finite number in [-1000000000, 0]'
bad_side ptq-clipped ptq.json '.groups[0].clipped=1e12' 'clipped cannot exceed counted'
bad_side ptq-truncated ptq.json TRUNCATE 'is not valid JSON'
bad_side ptq-export-scale ptq.json '.groups[5].scale=1e-60' 'groups[5].scale = 1e-60' export
K='"model.layers.0.mlp.down_proj"'
bad_side quant-group-overflow pdq_quant.json ".tensors[$K].group=2147483647" "tensors.model.layers.0.mlp.down_proj.group = 2147483647: must be an integer in [0, 16777216]"
bad_side quant-bits-frac pdq_quant.json ".tensors[$K].bits=4.5" 'tensors.model.layers.0.mlp.down_proj.bits = 4.5: must be an integer in [2, 8]'
bad_side quant-shape-huge pdq_quant.json ".tensors[$K].shape=[1e30,4]" 'down_proj.shape[0] = 1e+30: must be an integer in [1, 16777216]'
bad_side quant-packed pdq_quant.json ".tensors[$K].packed=true" 'packed = true with bits = 8: codes are packed exactly when bits <= 4'
bad_side quant-method pdq_quant.json '.method="awq"' 'method = "awq": must be one of gptq, rtn'
bad_side quant-seq-len pdq_quant.json '.seq_len=1e30' 'seq_len = 1e+30: must be an integer in [0, 16777216]'
bad_side quant-export-bits pdq_quant.json ".tensors[$K].bits=99" 'down_proj.bits = 99: must be an integer in [2, 8]' export
bad_side quant-packed-bits-frac pdq_quant.json ".tensors[$K].bits=4.5" 'down_proj.bits = 4.5: must be an integer in [2, 8]' packed
bad_side quant-packed-group pdq_quant.json ".tensors[$K].group=2147483647" 'down_proj.group = 2147483647: must be an integer in [0, 16777216]' packed

bad_manifest() { # name jq-edit needle
    rm -rf "$tmp/c2"; cp -r "$C" "$tmp/c2"
    edit_into "$C/manifest.json" "$2" "$tmp/c2/manifest.json"
    err "$1 (generate --circle)" "timeout 120 '$PDQ' generate --circle '$tmp/c2' --prompt Once --max-new 2" "$3"
    err "$1 (verify --circle)" "timeout 120 '$PDQ' verify --circle '$tmp/c2' --model $M --prompt Once --steps 1" "$3"
}
bad_manifest manifest-max-seq '.max_seq=1e9' "$tmp/c2/manifest.json: max_seq = 1000000000: must be an integer in [2, 65536]"
bad_manifest manifest-layers '.model.num_hidden_layers=100000' 'model.num_hidden_layers = 100000: must be an integer in [1, 1024]'
bad_manifest manifest-fill '.attention_mask.fill="x"' 'attention_mask.fill = "x": must be a finite number'
bad_manifest manifest-rope '.rope.convention="sideways"' 'rope.convention = "sideways": must be one of hf, pre_negated_sin'

# .npy: a 128-byte file whose header claims 2^40 float32 elements is refused before any allocation
python3 - "$tmp" <<'PY'
import struct, sys
def npy(path, shape, payload=b"", descr="<f4"):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    h = d + " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + payload)
t = sys.argv[1]
npy(t + "/huge.npy", "(1048576, 1048576)", b"\0" * 64)
npy(t + "/W.npy", "(4, 3)", struct.pack("<12f", *[0.1 * i for i in range(12)]))
h = [1.0 if i % 4 == 0 else 0.0 for i in range(9)]; h[5] = float("nan")
npy(t + "/H.npy", "(3, 3)", struct.pack("<9f", *h))
npy(t + "/wide.npy", "(1, 40000)", b"\0" * 160000)
PY
err npy-huge-shape "'$PDQ' gptq-matrix --weight '$tmp/huge.npy' --hessian '$tmp/H.npy' --out '$tmp/g'" \
    "huge.npy: npy data shorter than its shape: 1099511627776 elements of 4 bytes need 4398046511104 bytes, the file holds 64"
err gptq-nan-in-H "'$PDQ' gptq-matrix --weight '$tmp/W.npy' --hessian '$tmp/H.npy' --wbits 4 --out '$tmp/g'" "H.npy: element [1, 2] is NaN"
check gptq-nan-not-blamed-on-W "! '$PDQ' gptq-matrix --weight '$tmp/W.npy' --hessian '$tmp/H.npy' --wbits 4 --out '$tmp/g' 2>&1 | grep -q W.npy"
err gptq-too-wide "'$PDQ' gptq-matrix --weight '$tmp/wide.npy' --inputs '$tmp/wide.npy' --out '$tmp/g'" \
    "wide.npy: weight shape [1, 40000]: rows must be in [1, 2147483647], columns in [1, 32768]"

# a model whose vocab_size exceeds its tokenizer's: generate must not print nothing and exit 0
"$SYNTH" --out "$tmp/big-vocab" --hidden 32 --intermediate 64 --layers 1 --heads 2 --kv-heads 1 --vocab 4096 --seed 3 >/dev/null 2>&1
cp $M/tokenizer.json $M/tokenizer_config.json "$tmp/big-vocab/"
err tokenizer-smaller-than-vocab "'$PDQ' generate --model '$tmp/big-vocab' --prompt Once --max-new 40 --temperature 1 --seed 1" \
    "is not in the vocabulary (size 512) (the model's vocab_size is 4096, the tokenizer has 512 tokens)"
exit $fail
