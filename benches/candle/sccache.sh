#!/bin/sh
# candle-kernels 0.11.1 built through cuda-build (prepared as run.sh does,
# benches/candle/common.sh), past one machine: one Redis on 127.0.0.1 shared
# by two "machines". Prints a table with each row's share of cold:
#
#   cold = machine A, cuda-build   plain nvcc, empty cuda-build cache, its
#                             Redis tier (CUDA_BUILD_CACHE_REDIS) empty (fills it)
#   machine A, sccache        sccache server A on the shared Redis, empty (fills it)
#   machine B, sccache        sccache server B, empty local state, same Redis
#   machine B, cuda-build     empty local cuda-build cache, same Redis: no nvcc
#   sccache-dist              one scheduler + one build server on 127.0.0.1
#                             (scripts/sccache-dist-local.sh), empty caches:
#                             what shipping every step to a server costs
#                             (needs root and bwrap, else skipped)
#   header edit, machine B    cuda_utils.cuh changed (most kernels include it),
#                             through sccache server B
#
# Every row starts from `cargo clean -p candle-kernels` and an empty local
# cuda-build cache; the Rust dependencies stay built. Both machines build one
# checkout at one path (sccache's keys hold the source's absolute path).
#
#   benches/candle/sccache.sh                                  # full set
#   BENCH_SUBSET="affine fill" benches/candle/sccache.sh       # a few files, to develop
#
# Environment: CUDA_HOME, CUDA_ARCHS (default 89), JOBS, BENCH_DIR (default
# target/bench-candle-sccache), SCCACHE (default: the one scripts/test.sh
# installs). Needs redis-server and network once (cargo fetches the crate).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
default_work=$repo/target/bench-candle-sccache
. "$repo/benches/candle/env.sh"
testcache=${CARGO_CUDA_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cargo-cuda-test}
sccache=${SCCACHE:-${CARGO_CUDA_TEST_SCCACHE:-$testcache/sccache/bin/sccache}}
[ -x "$sccache" ] || { echo "sccache.sh: no sccache at $sccache; run scripts/test.sh once or set SCCACHE" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "sccache.sh: redis-server is missing: apt-get install redis-server" >&2; exit 1; }

. "$repo/benches/candle/common.sh"
crate="$work/cuda-build"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
redis_port=$(free_port)
redis_pid=
ports=
cleanup() {
    for p in $ports; do SCCACHE_SERVER_PORT=$p timeout 20 "$sccache" --stop-server >/dev/null 2>&1 || true; done
    [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
}
trap cleanup EXIT
redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --dir "$work" >/dev/null 2>&1 &
redis_pid=$!
for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis="redis://127.0.0.1:$redis_port"

# start_server PORT: one "machine"'s sccache, on the shared Redis.
start_server() {
    ports="$ports $1"
    env SCCACHE_SERVER_PORT="$1" SCCACHE_IDLE_TIMEOUT=0 SCCACHE_REDIS_ENDPOINT="$redis" \
        SCCACHE_DIR="$work/sccache-$1" "$sccache" --start-server >/dev/null
}
# hits PORT: "H hit, M miss" (cicc + ptxas steps).
hits() {
    SCCACHE_SERVER_PORT=$1 "$sccache" --show-stats --stats-format=json | python3 -c '
import json, sys
s = json.load(sys.stdin)["stats"]
n = lambda k: sum(s[k]["counts"].values())
h, m = n("cache_hits"), n("cache_misses")
print(f"{h} hit, {m} miss")'
}
# dist_steps PORT: "H hit, M miss, D on the build server".
dist_steps() {
    SCCACHE_SERVER_PORT=$1 "$sccache" --show-stats --stats-format=json | python3 -c '
import json, sys
s = json.load(sys.stdin)["stats"]
n = lambda k: sum(s[k]["counts"].values())
d = sum(s["dist_compiles"].values()) if s["dist_compiles"] else 0
h, m = n("cache_hits"), n("cache_misses")
print(f"{h} hit, {m} miss, {d} on the build server")'
}

# Warm-up, not timed: the Rust dependencies, with no nvcc reachable.
cargo_dir=$(dirname "$(command -v cargo)")
(cd "$crate" && env -u CUDA_HOME -u CUDA_PATH -u NVCC PATH="$cargo_dir:/usr/bin:/bin" \
    cargo build -q > /dev/null 2>&1) || true

now() { date +%s.%N; }
# script_run HTML: seconds candle-kernels' build script ran (cargo
# --timings): the part a kernel cache can remove; the rest is cargo and rustc.
script_run() {
    python3 "$repo/scripts/cargo-timing-unit.py" "$1" candle-kernels
}

rows=
cold=
cold_script=
# run NAME NOTE [VAR=VALUE...]: one timed build, fresh OUT_DIR and local cache.
run() {
    name=$1; note=$2; shift 2
    (cd "$crate" && cargo clean -q -p candle-kernels && rm -rf target/cargo-timings)
    t0=$(now)
    (cd "$crate" && env CUDA_BUILD_CACHE_DIR="$work/cb-cache-$(date +%s%N)" "$@" cargo build -q --timings 2> "$work/last.log") \
        || { cat "$work/last.log" >&2; echo "sccache.sh: the $name build failed" >&2; exit 1; }
    secs=$(echo "$(now) - $t0" | bc)
    script=$(script_run "$crate/target/cargo-timings/cargo-timing.html")
    [ -z "$cold" ] && cold=$secs && cold_script=$script
    rows="$rows$name|$secs|$(echo "100 * $secs / $cold" | bc -l)|$script|$(echo "100 * $script / $cold_script" | bc -l)|$note
"
    echo "sccache.sh: $name: $secs s (build script ran $script s)" >&2
}

# Cold is machine A of cuda-build's tier: one full compile fewer (the tier's
# writes cost a few ms a source; the sccache rows show what sccache adds).
run "cold = machine A, cuda-build's Redis tier (fills it)" "–" CUDA_BUILD_CACHE_REDIS="$redis"
pa=$(free_port); start_server "$pa"
run "machine A, sccache + Redis (fills it)" "" CUDA_BUILD_WRAPPER="$sccache" SCCACHE_SERVER_PORT="$pa"
rows=$(printf '%s' "$rows" | sed "\$s/|\$/|sccache: $(hits "$pa")/")
rows="$rows
"
pb=$(free_port); start_server "$pb"
run "machine B, sccache + Redis" "" CUDA_BUILD_WRAPPER="$sccache" SCCACHE_SERVER_PORT="$pb"
rows=$(printf '%s' "$rows" | sed "\$s/|\$/|sccache: $(hits "$pb")/")
rows="$rows
"
run "machine B, cuda-build's Redis tier" "–" CUDA_BUILD_CACHE_REDIS="$redis"
if grep -q CUDA_BUILD_CACHE_REDIS "$work/last.log"; then
    cat "$work/last.log" >&2; echo "sccache.sh: cuda-build's Redis tier was not used" >&2; exit 1
fi

if [ "$(id -u)" = 0 ] && command -v bwrap >/dev/null; then
    SCHEDULER_PORT=$(free_port) BUILDER_PORT=$(free_port) CLIENT_PORT=$(free_port)
    export SCHEDULER_PORT BUILDER_PORT CLIENT_PORT SCCACHE="$sccache"
    SCCACHE_DIST=${SCCACHE_DIST:-${CARGO_CUDA_TEST_SCCACHE_DIST:-$(dirname "$sccache")/sccache-dist}}
    export SCCACHE_DIST
    distenv=$("$repo/scripts/sccache-dist-local.sh" start "$work/dist")
    ports="$ports $CLIENT_PORT"
    dist_stop() { "$repo/scripts/sccache-dist-local.sh" stop "$work/dist" || true; }
    trap 'dist_stop; cleanup' EXIT
    (eval "$distenv"; run "sccache-dist (1 local build server)" "" CUDA_BUILD_WRAPPER="$sccache"
     printf '%s' "$rows" > "$work/rows")
    rows=$(cat "$work/rows")
    rows=$(printf '%s' "$rows" | sed "\$s/|\$/|sccache: $(dist_steps "$CLIENT_PORT")/")
    rows="$rows
"
    dist_stop
else
    rows="${rows}sccache-dist (1 local build server)|0|0|0|0|skipped: needs root and bwrap
"
fi

# A header edit that every includer sees: an unused device function.
printf '\n__device__ inline unsigned bench_edit_%s() { return %s; }\n' "$(date +%s)" "$$" \
    >> "$crate/src/cuda_utils.cuh"
SCCACHE_SERVER_PORT=$pb "$sccache" --zero-stats > /dev/null
run "header edit (cuda_utils.cuh), machine B, sccache" "" CUDA_BUILD_WRAPPER="$sccache" SCCACHE_SERVER_PORT="$pb"
rows=$(printf '%s' "$rows" | sed "\$s/|\$/|sccache: $(hits "$pb")/")
rows="$rows
"

printf '\ncandle-kernels 0.11.1 through cuda-build, sm_%s, %s jobs, %s cores, load %s%s\n\n' \
    "$arch" "$jobs" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "${subset:+, subset: $subset}"
printf '| build | wall | of cold | build script | of cold'"'"'s | cache steps |\n|---|---|---|---|---|---|\n'
printf '%s' "$rows" | while IFS='|' read -r name secs pct script spct note; do
    case $note in
    skipped*) printf '| %s | – | – | – | – | %s |\n' "$name" "$note" ;;
    *) printf '| %s | %.1f s | %.1f%% | %.2f s | %.1f%% | %s |\n' "$name" "$secs" "$pct" "$script" "$spct" "$note" ;;
    esac
done
echo
echo "build script: how long candle-kernels' build script ran (cargo --timings): the part a kernel"
echo "cache can remove; the rest of the wall is cargo and rustc, the same in every row."
