#!/bin/sh
# The compile pool side by side with cudaforge 0.1.6 given all cores, in one
# run: cold build, one-.cu edit and the peak memory of the whole build, on
#   candle     candle-kernels 0.11.1 (benches/candle)
#   paged-attn mistralrs-paged-attn 0.8.1 (benches/paged-attn)
#   flash      a few FlashAttention-2 instances of candle-flash-attn 0.11.1
#              over CUTLASS 4.2 from the store, with an 8 GB memory budget
# and cuda-build once more with the long poles split (--split-compile).
# Prints one table per case, with the load average (1 min) before and after
# every number, and the limit row: the sum of the files' own nvcc times
# (cuda-build's timings report of its cold build) over the cores. A
# benchmark, not a test; it takes long (candle's cold build alone is about
# 7 minutes of wall time per variant on 2 quiet cores).
#
#   CUDA_HOME=<store>/toolkits/13.0.88 benches/pool/run.sh
#   CASES="flash" FLASH_FILES="flash_fwd_hdim64_fp16_sm80" benches/pool/run.sh
#   CASES=tiny EDITS=1 benches/pool/run.sh   # the script's own check, minutes
#
# Environment: CUDA_HOME; CASES (default "candle paged-attn flash"); JOBS
# (default: all cores); BENCH_DIR (default target/bench-pool); EDITS
# (one-.cu edits per variant, alternating; default 3, flash 1); SPLIT (the
# split count, default 2; 0 leaves the split variant out); FLASH_FILES (instance stems); BENCH_CUTLASS
# (CUTLASS's source root; default: the test store's nvidia-cutlass 4.2,
# fetched with `cargo cuda deps fetch --cutlass 4.2`); RECORDED=1 (after
# the cold builds, both crates built cold once more, cuda-build's kernel
# objects removed but its cost records kept: how the pool plans with
# measured peaks instead of estimates; cudaforge keeps nothing, so its
# second cold build is a second sample).
# CGROUP=<bytes> (e.g. 10G; needs root and cgroup v1's memory controller):
# every timed build runs in a fresh memory cgroup with that hard limit, and
# CUDA_BUILD_MEMORY_BUDGET is left unset so that cuda-build reads the limit
# as a container's build would. A build the kernel kills for memory is
# reported as failed, with its OOM kills, instead of ending the script: as
# on a machine with more cores than memory for that many nvcc processes
# (JOBS=4 on two cores stands for the cores).
# Needs network once (cargo fetches the crates from crates.io) and python3.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
root=${BENCH_DIR:-$repo/target/bench-pool}
cases=${CASES:-candle paged-attn flash}
jobs=${JOBS:-$(nproc)}
split=${SPLIT:-2}
export CARGO_BUILD_JOBS="$jobs" CUDAFORGE_THREADS="$jobs"
[ -n "${CUDA_HOME:-}" ] && export PATH="$CUDA_HOME/bin:$PATH"
command -v nvcc >/dev/null || { echo "run.sh: no nvcc; set CUDA_HOME" >&2; exit 1; }
mkdir -p "$root"
results=$root/results.md
: > "$results"

load() { cut -d' ' -f1 /proc/loadavg; }
cgroups=/sys/fs/cgroup/memory
if [ -n "${CGROUP:-}" ]; then
    [ -w "$cgroups" ] || { echo "run.sh: CGROUP needs root and cgroup v1's memory controller at $cgroups" >&2; exit 1; }
    cg_limit=$(python3 -c 'import sys; n=sys.argv[1].upper().rstrip("B").rstrip("I"); u={"K":1,"M":2,"G":3}.get(n[-1:],0); print(int(float(n[:-1] if u else n)*1024**u))' "$CGROUP")
fi
# measure <crate dir> <log>: one `cargo build`, its wall time and the peak of
# the summed RSS of its whole process tree; prints "wall peak_bytes load0
# load1", then under CGROUP the cgroup's own peak and its OOM kills, or
# "failed" when the build failed there.
measure() {
    l0=$(load)
    if [ -z "${CGROUP:-}" ]; then
        (cd "$1" && PEAK_OUT="$2.peak" python3 "$repo/benches/pool/peak.py" cargo build -q 2> "$2") ||
            { cat "$2" >&2; exit 1; }
        echo "$(cat "$2.peak") $l0 $(load)"
        return
    fi
    cg=$cgroups/pool-bench-$$
    rmdir "$cg" 2>/dev/null || true
    mkdir "$cg"
    echo "$cg_limit" > "$cg/memory.limit_in_bytes"
    # The subshell moves itself into the cgroup, then runs the build there.
    ok=ok
    (echo 0 > "$cg/cgroup.procs" && cd "$1" && PEAK_OUT="$2.peak" python3 "$repo/benches/pool/peak.py" cargo build -q 2> "$2") || ok=failed
    kills=$(awk '$1 == "oom_kill" {print $2}' "$cg/memory.oom_control")
    echo "$(cat "$2.peak") $l0 $(load) $(cat "$cg/memory.max_usage_in_bytes") ${kills:-0} $ok"
    rmdir "$cg"
}
gb() { echo "$1" | awk '{printf "%.2f GB", $1 / 1e9}'; }
# cell <measure output>: "12.34 s, peak 1.23 GB (load 1.2→3.4)"; "–" for
# none (EDITS=0 measures no edit).
cell() {
    [ -n "$1" ] || { printf '–'; return; }
    set -- $1
    if [ $# -gt 4 ]; then
        [ "$7" = ok ] || { printf '**failed** after %.2f s: %s OOM kill(s), cgroup peak %s (load %s→%s)' "$1" "$6" "$(gb "$5")" "$3" "$4"; return; }
        printf '%.2f s, peak %s, cgroup peak %s (load %s→%s)' "$1" "$(gb "$2")" "$(gb "$5")" "$3" "$4"
        return
    fi
    printf '%.2f s, peak %s (load %s→%s)' "$1" "$(gb "$2")" "$3" "$4"
}
# The sum of the compiled files' nvcc wall times in a timings report, their
# count, and the shortest build any order of those times allows on <cores>
# slots: the best split of the files among the cores (searched exactly up to
# 16 files; above that Σ / cores or the longest file, whichever is larger).
# With a few long files (FlashAttention's instances) it is above Σ / cores.
nvcc_sum() {
    python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cores = int(sys.argv[2])
c = [x for x in r["compiles"] if x["outcome"] == "compiled"]
d = sorted((x["end"] - x["start"] for x in c), reverse=True)
bound = max(sum(d) / cores, d[0] if d else 0.0)
best = [sum(d)]
loads = [0.0] * cores
def place(i):
    if i == len(d):
        best[0] = min(best[0], max(loads))
        return
    tried = set()
    for j in range(cores):
        if loads[j] in tried or loads[j] + d[i] >= best[0]:
            continue
        tried.add(loads[j])
        loads[j] += d[i]
        place(i + 1)
        loads[j] -= d[i]
        if best[0] <= bound + 1e-9:
            return
if len(d) <= 16:
    place(0)
else:
    best[0] = bound
print("%.2f %d %.2f" % (sum(d), len(c), best[0]))
PY
}
costliest() {
    python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = sorted((x for x in r["compiles"] if x["outcome"] == "compiled"), key=lambda x: x["start"] - x["end"])[:3]
print(", ".join("%s %.0f s %.1f GB" % (x["file"].split("/")[-1], x["end"] - x["start"], (x["peak_bytes"] or 0) / 1e9) for x in c))
PY
}
# warm_up <crate dir>: compiles the Rust dependencies, and makes the crate's
# own build script fail before it compiles a kernel. Hiding nvcc from PATH
# is not enough: cuda-build also finds the toolkit in the user's store, and
# a warm-up that compiled the kernels made the timed "cold" build a no-op.
# NVCC naming no file stops both builders (cuda-build refuses it, cudaforge
# cannot run it).
warm_up() {
    cargo_dir=$(dirname "$(command -v cargo)")
    (cd "$1" && env -u CUDA_HOME -u CUDA_PATH NVCC=/nonexistent/nvcc PATH="$cargo_dir:/usr/bin:/bin" \
        cargo build -q > /dev/null 2>&1) || true
}

# split_variant <package> <split files> <edit file> <edits>: run_case's
# crate once more with <split files> split $split ways: a cold build (empty
# cache), then the edits alternating with cudaforge; sets cold_sp, top_split.
split_variant() {
    (cd "$work/cuda-build" && cargo clean -q -p "$1")
    rm -rf "$CUDA_BUILD_CACHE_DIR"
    export BENCH_SPLIT="$split" BENCH_SPLIT_FILES="$2"
    cold_sp=$(export CUDA_BUILD_TIMINGS="$work/timings-split"; measure "$work/cuda-build" "$work/sp-cold.log")
    top_split=$(costliest "$(ls "$work"/timings-split/cuda-timing-*.json | head -1)")
    for i in $(seq 1 "$4"); do
        for v in cudaforge cuda-build; do
            printf '\nextern "C" __global__ void pool_bench_edit_split_%s(int* o) { *o = 1; }\n' "$i" >> "$work/$v/$3"
            tag=$v; [ "$v" = cuda-build ] && tag=split
            echo "$tag $(measure "$work/$v" "$work/edit.log")" >> "$work/edits.txt"
        done
    done
    unset BENCH_SPLIT BENCH_SPLIT_FILES
}

# run_case <name> <package> <edit file> <split files> <budget or "">: expects
# $work/cudaforge and $work/cuda-build prepared.
run_case() {
    name=$1 pkg=$2 edit=$3 split_files=$4 budget=$5
    export CUDA_BUILD_CACHE_DIR="$work/cuda-build-cache"
    [ -z "${CGROUP:-}" ] || budget=""
    if [ -n "$budget" ]; then export CUDA_BUILD_MEMORY_BUDGET="$budget"; else unset CUDA_BUILD_MEMORY_BUDGET 2>/dev/null || true; fi
    unset BENCH_SPLIT BENCH_SPLIT_FILES 2>/dev/null || true
    # The package itself always builds anew (a kept target dir of an
    # earlier run would make the cold build a no-op); its dependencies not.
    for v in cudaforge cuda-build; do
        (cd "$work/$v" && cargo clean -q -p "$pkg" 2>/dev/null) || true
        warm_up "$work/$v"
    done
    rm -rf "$CUDA_BUILD_CACHE_DIR"
    cold_cf=$(measure "$work/cudaforge" "$work/cf-cold.log")
    cold_cb=$(export CUDA_BUILD_TIMINGS="$work/timings-plain"; measure "$work/cuda-build" "$work/cb-cold.log")
    report=$(ls "$work"/timings-plain/cuda-timing-*.json | head -1)
    # The machine's limit: no more compiles at once than it has cores (JOBS
    # may stand for more).
    cores=$(nproc); [ "$jobs" -lt "$cores" ] && cores=$jobs
    set -- $(nvcc_sum "$report" "$cores")
    sum=$1 files=$2 best=$3
    [ "$files" -gt 0 ] || { echo "run.sh: $name: cuda-build's cold build compiled no kernel (not cold)" >&2; exit 1; }
    top_plain=$(costliest "$report")
    rec_cf="" rec_cb=""
    if [ "${RECORDED:-0}" = 1 ]; then
        for v in cudaforge cuda-build; do (cd "$work/$v" && cargo clean -q -p "$pkg"); done
        rm -rf "$CUDA_BUILD_CACHE_DIR/v1/objects"
        rec_cf=$(measure "$work/cudaforge" "$work/cf-rec.log")
        rec_cb=$(export CUDA_BUILD_TIMINGS="$work/timings-recorded"; measure "$work/cuda-build" "$work/cb-rec.log")
    fi
    e=${EDITS:-$6}
    : > "$work/edits.txt"
    for i in $(seq 1 "$e"); do
        for v in cudaforge cuda-build; do
            printf '\nextern "C" __global__ void pool_bench_edit_%s(int* o) { *o = 1; }\n' "$i" >> "$work/$v/$edit"
            echo "$v $(measure "$work/$v" "$work/edit.log")" >> "$work/edits.txt"
        done
    done
    # The same crate with its long poles split (SPLIT=0 leaves it out):
    # cold (empty cache), then edits.
    cold_sp="" top_split="–"
    [ "$split" = 0 ] || split_variant "$pkg" "$split_files" "$edit" "$e"
    median() { grep "^$1 " "$work/edits.txt" | sort -k2 -n | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}' | cut -d' ' -f2-; }
    limit=$(echo "$sum / $cores" | bc -l)
    # A build that failed (under CGROUP) has no time to compare.
    w() { case "$1" in *failed) echo failed ;; *) echo "$1" | cut -d' ' -f1 ;; esac; }
    ratio() { case "$1$2" in *failed*) printf '–' ;; *) printf '%.3f' "$(echo "$1 / $2" | bc -l)" ;; esac; }
    if [ -n "$cold_sp" ]; then
        sp_cold="$(cell "$cold_sp") ($(ratio "$(w "$cold_sp")" "$(w "$cold_cf")")×)"
        sp_limit=$(ratio "$(w "$cold_sp")" "$limit")
        sp_edit=$(cell "$(median split)")
    else
        sp_cold=– sp_limit=– sp_edit=–
    fi
    {
        printf '\n### %s (%s jobs%s%s)\n\n' "$name" "$jobs" "${budget:+, CUDA_BUILD_MEMORY_BUDGET=$budget}" "${CGROUP:+, in a memory cgroup limited to $CGROUP}"
        printf '| step | cudaforge 0.1.6 | cuda-build | cuda-build, %s |\n|---|---|---|---|\n' "$([ "$split" = 0 ] && echo 'not split (SPLIT=0)' || echo "split $split")"
        printf '| cold | %s | %s (%s×) | %s |\n' "$(cell "$cold_cf")" "$(cell "$cold_cb")" \
            "$(ratio "$(w "$cold_cb")" "$(w "$cold_cf")")" "$sp_cold"
        printf '| cold / limit (%s files, Σ nvcc %.1f s / %s cores = %.1f s) | %s | %s | %s |\n' "$files" "$sum" "$cores" "$limit" \
            "$(ratio "$(w "$cold_cf")" "$limit")" "$(ratio "$(w "$cold_cb")" "$limit")" "$sp_limit"
        printf '| cold / best order of these times (the best split of the files among %s cores: %.1f s) | %s | %s | – |\n' "$cores" "$best" \
            "$(ratio "$(w "$cold_cf")" "$best")" "$(ratio "$(w "$cold_cb")" "$best")"
        [ -z "$rec_cb" ] || printf '| cold again, cuda-build with its cost records (objects removed) | %s | %s (%s×) | – |\n' \
            "$(cell "$rec_cf")" "$(cell "$rec_cb")" "$(ratio "$(w "$rec_cb")" "$(w "$rec_cf")")"
        printf '| one-.cu edit (%s), median of %s | %s | %s | %s |\n' "$edit" "$e" \
            "$(cell "$(median cudaforge)")" "$(cell "$(median cuda-build)")" "$sp_edit"
        printf '| costliest (cuda-build timings) | | %s | %s |\n' "$top_plain" "$top_split"
        printf '\nsplit files: %s\n' "$split_files"
    } | tee -a "$results"
}

# Fetches candle-flash-attn 0.11.1 and cudaforge 0.1.6 into cargo's
# registry (network once); prints candle-flash-attn's source directory.
fetch_flash_attn() {
    rm -rf "$work/fetch"
    mkdir -p "$work/fetch/src"
    printf '[package]\nname = "flash-bench-fetch"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n[dependencies]\ncandle-flash-attn = "=0.11.1"\ncudaforge = "=0.1.6"\n[workspace]\n' > "$work/fetch/Cargo.toml"
    : > "$work/fetch/src/lib.rs"
    (cd "$work/fetch" && cargo generate-lockfile -q && cargo fetch -q) >&2 || true
    ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/candle-flash-attn-0.11.1 | head -1
}

# two_crates <kernel dir> <stems>: $work/cudaforge and $work/cuda-build, the
# same kernels (with every header of <kernel dir>) built by
# benches/flash/build-cudaforge.rs and benches/flash/build.rs.
two_crates() {
    for v in cudaforge cuda-build; do
        rm -rf "$work/$v/kernels"
        mkdir -p "$work/$v/src"
        cp -r "$1" "$work/$v/kernels"
        chmod -R u+w "$work/$v"
        rm "$work/$v"/kernels/*.cu
        for f in $2; do cp "$1/$f.cu" "$work/$v/kernels/"; done
        : > "$work/$v/src/lib.rs"
    done
    printf '[package]\nname = "flash-bench"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n[build-dependencies]\ncudaforge = "=0.1.6"\n[workspace]\n' > "$work/cudaforge/Cargo.toml"
    printf '[package]\nname = "flash-bench"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n[build-dependencies]\ncuda-build = { path = "%s/cuda-build" }\n[workspace]\n' "$repo" > "$work/cuda-build/Cargo.toml"
    cp "$repo/benches/flash/build-cudaforge.rs" "$work/cudaforge/build.rs"
    cp "$repo/benches/flash/build.rs" "$work/cuda-build/build.rs"
}

for c in $cases; do
    case $c in
    candle)
        work=$root/candle subset=""
        . "$repo/benches/candle/common.sh"
        export CUDA_ARCHS=89 CUDA_COMPUTE_CAP=89
        run_case "candle-kernels 0.11.1, sm_89" candle-kernels src/affine.cu \
            "$(cd "$work/cuda-build" && ls src/mmq_gguf/mmq_instance_*.cu | tr '\n' ' ')" "" 3
        ;;
    paged-attn)
        work=$root/paged-attn here=$repo/benches/paged-attn
        . "$here/common.sh"
        export CUDA_ARCHS=89 CUDA_COMPUTE_CAP=89
        # Its heaviest files: the paged-attention instantiations and flashinfer's decode.
        run_case "mistralrs-paged-attn 0.8.1, sm_89" mistralrs-paged-attn src/cuda/copy_blocks_kernel.cu \
            "$(cd "$work/cuda-build" && ls src/cuda/pagedattention*.cu src/cuda/*decode*.cu 2>/dev/null | tr '\n' ' ')" "" 3
        ;;
    flash)
        work=$root/flash
        cutlass=${BENCH_CUTLASS:-$(ls -d "${CARGO_CUDA_TEST_CACHE:-$HOME/.cache/cargo-cuda-test}"/store/deps/nvidia-cutlass/*/cutlass_library/source 2>/dev/null | tail -1)}
        [ -d "$cutlass/include/cute" ] || { echo "run.sh: no CUTLASS (set BENCH_CUTLASS, or cargo cuda deps fetch --cutlass 4.2)" >&2; exit 1; }
        export BENCH_CUTLASS="$cutlass"
        files=${FLASH_FILES:-flash_fwd_hdim64_fp16_sm80 flash_fwd_hdim128_fp16_sm80 flash_fwd_hdim64_bf16_causal_sm80}
        reg=$(fetch_flash_attn)
        two_crates "$reg/kernels" "$files"
        export CUDA_ARCHS=80 CUDA_COMPUTE_CAP=80
        first=$(echo "$files" | cut -d' ' -f1)
        run_case "FlashAttention-2 instances ($files), CUTLASS 4.2, sm_80" flash-bench "kernels/$first.cu" "all" 8G 1
        ;;
    tiny)
        # The script's own check, in minutes: the workspace's small kernels
        # in the flash case's two crates (no CUTLASS needed).
        work=$root/tiny
        export BENCH_CUTLASS="$work/no-cutlass"
        mkdir -p "$BENCH_CUTLASS/include" "$BENCH_CUTLASS/tools/util/include"
        fetch_flash_attn > /dev/null
        two_crates "$repo/kernels/cu" "saxpy vector_add reduce"
        export CUDA_ARCHS=80 CUDA_COMPUTE_CAP=80
        run_case "tiny: the workspace's saxpy, vector_add, reduce, sm_80" flash-bench kernels/saxpy.cu "all" "" 1
        ;;
    *) echo "run.sh: unknown case $c" >&2; exit 1 ;;
    esac
done
printf '\nAll tables: %s\n' "$results"
