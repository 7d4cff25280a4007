#!/usr/bin/env bash
# pdq-mpi under mpirun: 1, 2 and 3 ranks (oversubscribed on a small machine) write the same
# bytes as the plain binary -- model.q.safetensors, Circle files and .npy tables byte for byte,
# pdq_quant.json / ptq.json / report.json / manifest.json equal once timings and the output path
# are taken out (every perplexity, range, scale and clip count in them to the last bit) -- for GPTQ
# w4 a16 with r1,r2,smooth, --eval, decode-step calibration and --export on the bundled model (the
# SmoothQuant ranges, the activation calibration and both perplexities split over the ranks), for
# --gptq-orig-inputs with --calib-chunk 2 and an EMA observer (order-dependent: replayed in the
# one-process order), for --save-transformed with smooth, and for stories260K (tied head) when
# ../shared has it.
# Faults end the whole job with one message naming the rank, within a timeout, leaving no output
# and earlier outputs untouched: a model that differs on one rank, a corrupt model on one rank,
# a rank killed mid-layer, an evaluation text that differs, an OUTDIR rank 1 cannot read.
set -u
PDQ=${1:?usage: mpi.sh PDQ_BINARY}
MPDQ=$(dirname "$PDQ")/pdq-mpi
. "$(dirname "$0")/lib/checks.sh"
if [ ! -x "$MPDQ" ] || ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: no pdq-mpi or no mpirun (bash scripts/install-mpi.sh installs Open MPI; rebuild to get pdq-mpi)"
    exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI containers run as root
# Sanitized build: Open MPI's allocations kept past MPI_Finalize are suppressed by library name,
# which needs full stacks (slow unwinder) and its plugins still loaded at exit.
export LSAN_OPTIONS="suppressions=$PWD/tests/cli/lib/lsan-mpi.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export OMPI_MCA_mca_base_component_disable_dlclose=1
[ "${PDQ_ASAN:-}" = 1 ] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
# a hang ends in a timeout; sanitized ranks on a loaded 2-core machine need longer
limit=300
[ "${PDQ_ASAN:-}" = 1 ] && limit=900
mpi() { timeout $limit mpirun --oversubscribe "$@"; }
M=models/web-bible-llama-19m
head -c 300000 data/web-bible/train.txt >"$tmp/calib.txt"
head -c 20000 data/web-bible/valid.txt | tail -c 2500 >"$tmp/eval.txt"

# Timings and the output directory's own path aside, JSON files must be equal; others byte-equal.
norm='walk(if type == "object" then with_entries(select(.key | test("seconds|time|_s$") | not)) else . end)'
same() { # name dirA dirB
    local a=$2 b=$3 f diffs=""
    [ -s "$a/model.q.safetensors" ] && [ -s "$b/model.q.safetensors" ] || { bad "$1: missing outputs"; return; }
    [ "$(cd "$a" && find . -type f ! -name report.html | sort)" = "$(cd "$b" && find . -type f ! -name report.html | sort)" ] ||
        diffs="file list"
    for f in $(cd "$a" && find . -type f ! -name report.html | sort); do
        case $f in
        *.json)
            cmp -s <(sed "s#$a#OUT#g" "$a/$f" | jq -S "$norm") <(sed "s#$b#OUT#g" "$b/$f" | jq -S "$norm") || diffs="$diffs $f" ;;
        *) cmp -s "$a/$f" "$b/$f" || diffs="$diffs $f" ;;
        esac
    done
    if [ -z "$diffs" ]; then ok "$1"; else bad "$1: differ:$diffs"; fi
}

# 1. the bundled model, GPTQ w4 a16, r1,r2,smooth, Circle export, GPTQ lm_head
EXPORT=(--export circle-full)
[ "${PDQ_ASAN:-}" = 1 ] && EXPORT=() # sanitized: the split phases only (the export is rank 0's, as in one process)
A=(quantize --model $M --calib "$tmp/calib.txt" --wbits 4 --abits 16 --nsamples 5 --seq-len 64 --max-seq 32
   --act-nsamples 4 --decode-calib-steps 3 --verify-steps 4 --transform r1,r2,smooth --smooth-nsamples 4
   "${EXPORT[@]}" --lm-head-gptq --eval "$tmp/eval.txt" --eval-len 64 --eval-stride 48 --kld --quiet --threads 1)
# the plain run caches the FP32 side of --kld; the ranks then take it from rank 0's cache
export XDG_CACHE_HOME="$tmp/kld-a"
nps="1 2 3"
[ "${PDQ_ASAN:-}" = 1 ] && nps="3" # sanitized ranks are slow: the uneven split alone
"$PDQ" "${A[@]}" --out "$tmp/plain" >"$tmp/plain.log" 2>&1 || { bad plain-run; tail -5 "$tmp/plain.log"; }
for np in $nps; do
    if mpi -np $np "$MPDQ" "${A[@]}" --out "$tmp/np$np" >"$tmp/np$np.log" 2>&1; then
        same "np$np-identical" "$tmp/plain" "$tmp/np$np"
    else
        bad "np$np-run"; tail -5 "$tmp/np$np.log"
    fi
done
[ -f "$tmp/np3.log" ] && check rss-per-rank "grep -Eq 'peak RSS MiB 0: [0-9.]+ \| 1: [0-9.]+ \| 2: [0-9.]+' '$tmp/np3.log'"
# the perplexity windows really were split over the three ranks
if [ -f "$tmp/np3.log" ]; then
    check ppl-windows-split "grep -Eq '^ppl quant: windows per rank [0-9]+ \| [0-9]+ \| [0-9]+$' '$tmp/np3.log'"
fi

[ -f "$tmp/np3.log" ] && check kld-cache-from-rank0 "grep -q 'kld: FP32 logits reused from' '$tmp/np3.log'"
unset XDG_CACHE_HOME

# 2. float-model Hessians, chunks of 2 windows (7 windows: 4 chunks over 3 ranks); an EMA observer
# over 4 samples with 2 decode steps each (3 ranks: 2, 1, 1 samples), --eval and --kld on windows
# that do not overlap (the first token of each is not scored)
B=(quantize --model $M --calib "$tmp/calib.txt" --wbits 4 --abits 16 --observer ema --act-nsamples 4
   --decode-calib-steps 2 --max-seq 32 --verify-steps 2 --nsamples 7 --seq-len 32 --gptq-orig-inputs
   --calib-chunk 2 --group 16 --eval "$tmp/eval.txt" --eval-len 32 --eval-stride 32 --kld --quiet --threads 1)
# each run computes the FP32 side of --kld (its own cache): split over 3 ranks, the same file
XDG_CACHE_HOME="$tmp/kld-b1" "$PDQ" "${B[@]}" --out "$tmp/orig-plain" >"$tmp/orig.log" 2>&1 || bad orig-plain-run
XDG_CACHE_HOME="$tmp/kld-b3" mpi -np 3 "$MPDQ" "${B[@]}" --out "$tmp/orig-np3" >"$tmp/orig3.log" 2>&1 ||
    { bad orig-np3-run; tail -5 "$tmp/orig3.log"; }
same orig-inputs-chunk2-np3 "$tmp/orig-plain" "$tmp/orig-np3"
check kld-base-split-identical "cmp -s $tmp/kld-b1/pdq/kld-*.bin $tmp/kld-b3/pdq/kld-*.bin"

# 2b. --save-transformed: rank 0 writes the transformed checkpoint while rank 1 takes its share of
# the SmoothQuant windows in the same pass (5 windows over 2 ranks)
D=(quantize --model $M --calib "$tmp/calib.txt" --nsamples 3 --wbits 4 --abits none --transform r1,smooth
   --smooth-nsamples 5 --seq-len 32 --save-transformed --quiet --threads 1)
if [ "${PDQ_ASAN:-}" != 1 ]; then # sanitized: the split code paths are those of cases 1 and 2
    "$PDQ" "${D[@]}" --out "$tmp/save-plain" >"$tmp/save.log" 2>&1 || bad save-plain-run
    mpi -np 2 "$MPDQ" "${D[@]}" --out "$tmp/save-np2" >"$tmp/save2.log" 2>&1 || { bad save-np2-run; tail -5 "$tmp/save2.log"; }
    same save-transformed-np2 "$tmp/save-plain" "$tmp/save-np2"
fi

# 3. stories260K (tied embeddings), from ../shared
S=../shared/models/stories260K
if [ -f $S/model.safetensors ] && [ -f ../shared/data/tinystories-260k/train.txt ]; then
    C=(quantize --model $S --calib ../shared/data/tinystories-260k/train.txt --wbits 4 --abits none --nsamples 6
       --seq-len 64 --quiet --threads 1)
    "$PDQ" "${C[@]}" --out "$tmp/s-plain" >/dev/null 2>&1 || bad stories-plain-run
    mpi -np 2 "$MPDQ" "${C[@]}" --out "$tmp/s-np2" >"$tmp/s2.log" 2>&1 || { bad stories-np2-run; tail -5 "$tmp/s2.log"; }
    same stories260k-np2 "$tmp/s-plain" "$tmp/s-np2"
else
    echo "skip stories260K (no ../shared/models/stories260K)"
fi

# 4. faults. Two app contexts with their own working directory: the same arguments, rank 1 sees
# another model under the same relative path.
mkdir -p "$tmp/a" "$tmp/b"
cp -r $M "$tmp/a/m"
cp "$tmp/calib.txt" "$tmp/a/c.txt"
cp "$tmp/calib.txt" "$tmp/b/c.txt"
F=(quantize --model m --calib c.txt --nsamples 4 --seq-len 32 --abits none --quiet --threads 1 --out out)
two() { mpi -np 1 -wdir "$tmp/a" "$MPDQ" "${F[@]}" : -np 1 -wdir "$tmp/b" "$MPDQ" "${F[@]}"; }
cp -r $M "$tmp/b/m"
sed -i 's/"rms_norm_eps": 1e-05/"rms_norm_eps": 1e-06/' "$tmp/b/m/config.json"
err model-differs two "rank 1 of 2 runs with the model (config.json, safetensors headers or sizes) different from rank 0's"
check model-differs-no-output "[ ! -e '$tmp/a/out' ]"
cp $M/config.json "$tmp/b/m/config.json"
printf '@@@@' | dd of="$tmp/b/m/model.safetensors" bs=1 seek=20 conv=notrunc status=none # header no longer JSON
err corrupt-model-rank1 two "pdq quantize: rank 1 of 2: m/model.safetensors: header is not valid JSON"
check corrupt-no-output "[ ! -e '$tmp/a/out' ]"
cp $M/model.safetensors "$tmp/b/m/model.safetensors"
# another evaluation text on rank 1: refused up front
head -c 3000 data/web-bible/valid.txt >"$tmp/a/e.txt"
head -c 3001 data/web-bible/valid.txt >"$tmp/b/e.txt"
F=(quantize --model m --calib c.txt --nsamples 4 --seq-len 32 --abits none --quiet --threads 1 --eval e.txt
   --eval-len 32 --eval-stride 32 --out out)
err eval-differs two "rank 1 of 2 runs with the evaluation text different from rank 0's"
check eval-differs-no-output "[ ! -e '$tmp/a/out' ]"
# the same text, but OUTDIR is not shared (each rank's relative out/): rank 1 cannot read the
# checkpoint rank 0 wrote for the split evaluation and says why
cp "$tmp/a/e.txt" "$tmp/b/e.txt"
err outdir-not-shared two "pdq quantize: rank 1 of 2: cannot read the checkpoint rank 0 wrote to out (--eval and --abits read it on every rank: OUTDIR must be on a file system all ranks share)"
check outdir-not-shared-no-report "[ ! -e '$tmp/a/out/report.json' ]"

# a rank killed mid-layer: the job ends (mpirun names the rank), the earlier outputs stay as they were
if [ "${PDQ_ASAN:-}" != 1 ]; then
    cp -r "$tmp/np2" "$tmp/keep" 2>/dev/null || cp -r "$tmp/plain" "$tmp/keep"
    before=$(cd "$tmp/keep" && find . -type f -exec sha256sum {} + | sort)
    PDQ_PROGRESS=1 timeout 300 mpirun --oversubscribe -np 2 "$MPDQ" quantize --model $M --calib "$tmp/calib.txt" \
        --nsamples 24 --seq-len 256 --abits none --quiet --threads 1 --out "$tmp/keep" >"$tmp/kill.log" 2>&1 &
    job=$!
    for _ in $(seq 600); do tr '\r' '\n' <"$tmp/kill.log" | grep -q '^layer 2/4' && break; sleep 0.1; done
    launcher=$(pgrep -P $job)
    rank=$(pgrep -P "$launcher" | tail -1)
    [ -n "$rank" ] && kill -9 "$rank"
    wait $job
    rc=$?
    check killed-rank-ends-job "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -Eq 'process rank [0-9]+ .*signal 9' '$tmp/kill.log'"
    check killed-rank-outputs-untouched "[ \"\$before\" = \"\$(cd '$tmp/keep' && find . -type f -exec sha256sum {} + | sort)\" ]"
fi
exit $fail
