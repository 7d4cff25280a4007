#!/usr/bin/env bash
# pdq quantize --profile: report.json's "profile" counts each phase's FLOPs by the formulas of
# docs/speed.md, re-derived here from config.json and the calibration windows (not by pdq's own
# counting code), the Cholesky's rate also against the dgemm probe; phase seconds are
# non-negative and add up to at most the total; the table goes to stdout, --json carries it; the
# quantized checkpoint is byte-identical without --profile.
set -u
PDQ=${1:?usage: profile.sh PDQ_BINARY}
. "$(dirname "$0")/lib/checks.sh"
M=models/web-bible-llama-19m
head -c 200000 data/web-bible/train.txt >"$tmp/calib.txt"
NS=3 T=64
args=(--model $M --calib "$tmp/calib.txt" --method gptq --wbits 4 --abits none --nsamples $NS --seq-len $T --threads 2 --quiet)
"$PDQ" quantize "${args[@]}" --profile --out "$tmp/p" >"$tmp/p.txt" 2>"$tmp/p.err"; rc=$?
check profile-rc "[ $rc = 0 ]"
"$PDQ" quantize "${args[@]}" --out "$tmp/n" >/dev/null 2>&1
check same-bytes "cmp -s '$tmp/p/model.q.safetensors' '$tmp/n/model.q.safetensors'"
check no-profile-without-flag "jq -e 'has(\"profile\") | not' '$tmp/n/report.json' >/dev/null"
check table "grep -q '^== profile == sgemm [0-9.]* GFLOP/s on 2 thread.*, dgemm [0-9.]*$' '$tmp/p.txt' && grep -Eq '^column_loop +[0-9.]+ ' '$tmp/p.txt' && grep -Eq '^cholesky_inverse( +[0-9.]+%?){5} +[0-9.]+%$' '$tmp/p.txt'"

python3 - "$M/config.json" "$tmp/p/report.json" $NS $T <<'PY' && ok "flops = formulas" || bad "flops = formulas"
import json, sys
c = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2])); ns, T = int(sys.argv[3]), int(sys.argv[4])
D, F, H, KV, L = c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["num_key_value_heads"], c["num_hidden_layers"]
hd = c.get("head_dim") or D // H
lin = [(H * hd, D), (KV * hd, D), (KV * hd, D), (D, H * hd), (F, D), (F, D), (D, F)]  # q k v o gate up down: (out, in)
want = {"forward": 0, "hessian": 0, "cholesky_inverse": 0, "column_loop": 0, "loss": 0}
for layer in range(L):
    # per window: 4 hooked passes, each stopped at its group's input (q/k/v: the norm only; o:
    # q, k, v and attention; gate/up: and o; down: and gate, up), then the quantized layer's output
    mm = [2 * T * o * i for o, i in lin]
    attn = 4 * T * T * hd * H  # QK^T and PV over the full T x T square
    to_o = mm[0] + mm[1] + mm[2] + attn
    want["forward"] += ns * (0 + to_o + (to_o + mm[3]) + (to_o + mm[3] + mm[4] + mm[5]) + sum(mm) + attn)
    for n in (D, H * hd, D, F):  # inputs of q/k/v, o, gate/up, down: T rows per window, ssyrk
        want["hessian"] += ns * T * n * (n + 1)
    for k, (rows, n) in enumerate(lin):
        if k not in (1, 2, 5):  # k, v and up reuse the factor of q's and gate's Hessian
            want["cholesky_inverse"] += 2 * n ** 3 / 3
        bs = min(128, n)
        for i1 in range(0, n, bs):
            i2 = min(i1 + bs, n)
            for j in range(i1, i2):
                want["column_loop"] += 2 * rows * (i2 - j - 1)
            want["column_loop"] += 2 * rows * (i2 - i1) * (n - i2)
        want["loss"] += 2 * 2 * rows * n * n  # GPTQ's result and its RTN reference
p = r["profile"]
got = {e["name"]: e for e in p["phases"]}
bad = []
for k, v in want.items():
    g = got[k]["gflop"] * 1e9
    if abs(g - v) > 1e-9 * v:
        bad.append(f"{k}: report {g:.0f}, formula {v:.0f}")
    if abs(got[k]["gflop_s"] - got[k]["gflop"] / got[k]["seconds"]) > 1e-9 * got[k]["gflop_s"]:
        bad.append(f"{k}: gflop_s is not gflop / seconds")
    if abs(got[k]["fraction_of_sgemm"] - got[k]["gflop_s"] / p["sgemm_gflops"]) > 1e-9:
        bad.append(f"{k}: fraction_of_sgemm")
# the Cholesky factor runs in double: its rate against the dgemm probe too, and only it
for e in p["phases"]:
    fd = e["fraction_of_dgemm"]
    if e["name"] == "cholesky_inverse":
        if fd is None or abs(fd - e["gflop_s"] / p["dgemm_gflops"]) > 1e-9: bad.append("cholesky_inverse: fraction_of_dgemm")
    elif fd is not None:
        bad.append(e["name"] + " has a fraction_of_dgemm")
secs = [e["seconds"] for e in p["phases"]]
if min(secs) < 0: bad.append("negative seconds")
if sum(secs) > p["total_seconds"] + 1e-6: bad.append(f"phases {sum(secs)} > total {p['total_seconds']}")
if p["total_seconds"] != r["summary"]["seconds"]["total"]: bad.append("total differs from the summary's")
if not (p["sgemm_gflops"] > 0 and p["threads"] == 2): bad.append("sgemm probe")
if not (p["dgemm_gflops"] == max(p["dgemm_gflops_start"], p["dgemm_gflops_end"]) > 0): bad.append("dgemm probe")
for e in p["phases"]:
    if e["name"] in ("save", "rtn", "quantize_other") and e["gflop"] is not None: bad.append(e["name"] + " has FLOPs")
for b in bad: print(b)
sys.exit(1 if bad else 0)
PY

"$PDQ" quantize "${args[@]}" --profile --json --out "$tmp/j" >"$tmp/j.json" 2>/dev/null
check json-profile "jq -e '.profile.sgemm_gflops > 0 and (.profile.phases | length) > 5 and has(\"bits_per_weight\")' '$tmp/j.json' >/dev/null"
check json-stdout-only "! grep -q '== profile' '$tmp/j.json'"
exit $fail
