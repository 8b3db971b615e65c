#!/usr/bin/env bash
# Benchmarks the workspace's kernels (package cuda-kernels: 5 sources plus
# one sm_75 cubin, sm_80 + sm_90 + compute_90 each) built through
# cuda-build, side by side in one run, and prints a table:
#
#   cold            plain nvcc, no cache
#   machine A       sccache + a shared Redis, empty (fills it)
#   machine B       another sccache server, empty local state, same Redis:
#                   the "second machine" (goal: <= 5% of cold)
#   cuda-build A    no sccache: cuda-build's own cache with its Redis tier
#                   (CUDA_BUILD_CACHE_REDIS, same Redis), empty (fills it)
#   cuda-build B    empty local cuda-build cache, same Redis: the "second
#                   machine" through cuda-build's tier (no nvcc at all)
#   cargo cuda B    machine B the documented way, `cargo cuda build --sccache`
#                   with sccache's settings only (its Redis feeds both caches)
#   sccache-dist    one scheduler + one build server on 127.0.0.1
#                   (scripts/sccache-dist-local.sh), empty caches: the
#                   overhead of shipping every step to a server on the same cores
#   header edit     common.cuh changed (every kernel includes it), machine B
#
# Every row starts from `cargo clean -p cuda-kernels` (OUT_DIR gone) and an
# empty cuda-build cache, so cuda-build's own cache never answers; the
# dependencies stay built. Both "machines" build this checkout at this path
# (cicc's arguments hold the source's absolute path, so sccache keys depend
# on the checkout path; CI runners share one path).
#
# Usage: scripts/bench-sccache.sh   (needs the test toolkit and sccache from
# scripts/test.sh, redis-server; the dist row needs root and bwrap, else it is
# marked skipped). candle-kernels is not benchmarked here.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
cache=${CARGO_CUDA_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cargo-cuda-test}
export CUDA_HOME=${CUDA_HOME:-$cache/cu13/nvidia/cu13}
sccache=${SCCACHE:-$cache/sccache/bin/sccache}
for need in "$CUDA_HOME/bin/nvcc" "$sccache"; do
  [[ -x $need ]] || { echo "bench-sccache: $need is missing: run scripts/test.sh once (it installs the toolkit and sccache)" >&2; exit 1; }
done
command -v redis-server >/dev/null || { echo "bench-sccache: redis-server is missing: apt-get install redis-server" >&2; exit 1; }
export CUDA_ARCHS=${CUDA_ARCHS:-"80;90"}

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-sccache.XXXXXX")
header="$root/kernels/cu/common.cuh"
cp "$header" "$work/common.cuh.orig"
redis_pid=
cleanup() {
  cp "$work/common.cuh.orig" "$header"
  for port in "${ports[@]:-}"; do
    [[ -n $port ]] && SCCACHE_SERVER_PORT=$port timeout 20 "$sccache" --stop-server >/dev/null 2>&1 || true
  done
  [[ -n $redis_pid ]] && kill "$redis_pid" 2>/dev/null || true
  [[ -f $work/dist/scheduler.pid ]] && scripts/sccache-dist-local.sh stop "$work/dist" || true
  rm -rf "$work"
}
ports=()
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

redis_port=$(free_port)
redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --dir "$work" >/dev/null 2>&1 &
redis_pid=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null && break; sleep 0.1; done

# Warm the dependencies once, and build `cargo cuda` (not measured).
cargo build -q -p cuda-kernels >/dev/null 2>&1 || cargo build -p cuda-kernels
cargo build -q -p cuda-build-cli
cargo_cuda="$root/target/debug/cargo-cuda cuda build"

# stats PORT -> "hits misses dist" (cicc+ptxas steps)
stats() {
  SCCACHE_SERVER_PORT=$1 "$sccache" --show-stats --stats-format=json | python3 -c '
import json, sys
s = json.load(sys.stdin)["stats"]
n = lambda k: sum(s[k]["counts"].values())
print(n("cache_hits"), n("cache_misses"), sum(s["dist_compiles"].values()) if s["dist_compiles"] else 0)'
}

# script_run HTML: seconds cuda-kernels' build script ran (cargo --timings):
# the part of a build a kernel cache can remove; the rest is cargo and rustc.
script_run() {
  python3 "$root/scripts/cargo-timing-unit.py" "$1" cuda-kernels
}

# run NAME [VAR=VALUE...]: one measured build of cuda-kernels.
declare -a rows
cold=
cold_script=
run() {
  local name=$1; shift
  cargo clean -q -p cuda-kernels
  rm -rf target/cargo-timings
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086 # BUILD: a command and its words
  env CUDA_BUILD_CACHE_DIR="${cbdir:-$work/cb-cache-$RANDOM$RANDOM}" "$@" ${BUILD:-cargo build} -q --timings -p cuda-kernels 2>"$work/last.log" \
    || { cat "$work/last.log" >&2; echo "bench-sccache: the $name build failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  local secs script
  secs=$(python3 -c "print(f'{$t1-$t0:.1f}')")
  script=$(script_run target/cargo-timings/cargo-timing.html)
  rm -rf target/cargo-timings
  [[ -z $cold ]] && cold=$secs && cold_script=$script
  local notes pct
  notes=$(grep -c "sccache" "$work/last.log" || true)
  # Share of cold, of cold's nvcc part (wall above the floor row), and of
  # cold's build-script run.
  pct=$(python3 -c "
c, s, f = $cold, $secs, ${floor:-0}
above = f'{100*(s-f)/(c-f):.0f}%' if f and c > f else '–'
print(f'{100*s/c:.0f}%|{above}|$script|{100*$script/$cold_script:.1f}%')")
  rows+=("$name|$secs|$pct|${steps:-–}|$notes")
  echo "bench-sccache: $name: $secs s (build script ran $script s)" >&2
}

# start_server PORT VARS...: one "machine"
start_server() {
  local port=$1; shift
  ports+=("$port")
  env SCCACHE_SERVER_PORT="$port" SCCACHE_IDLE_TIMEOUT=0 "$@" "$sccache" --start-server >/dev/null
}

cbdir="$work/cb-fixed" steps= run "cold (plain nvcc)"
# The floor: everything from cuda-build's own cache, no nvcc at all (cargo,
# the build script, rustc for the crate): what no compiler cache can remove.
cbdir="$work/cb-fixed" steps= run "floor (cuda-build cache, no nvcc)"
floor=$(cut -d'|' -f2 <<<"${rows[-1]}")

pa=$(free_port)
start_server "$pa" SCCACHE_REDIS_ENDPOINT="redis://127.0.0.1:$redis_port" SCCACHE_DIR="$work/a"
steps= run "machine A (sccache, fills Redis)" CUDA_BUILD_WRAPPER="$sccache" SCCACHE_SERVER_PORT="$pa"
read -r h m d < <(stats "$pa"); rows[-1]="${rows[-1]/|–|/|$h hit, $m miss|}"

pb=$(free_port)
start_server "$pb" SCCACHE_REDIS_ENDPOINT="redis://127.0.0.1:$redis_port" SCCACHE_DIR="$work/b"
steps= run "machine B (shared Redis)" CUDA_BUILD_WRAPPER="$sccache" SCCACHE_SERVER_PORT="$pb"
read -r h m d < <(stats "$pb"); rows[-1]="${rows[-1]/|–|/|$h hit, $m miss|}"

# cuda-build's own cache with a Redis tier: machine A fills it (fresh local
# cache), machine B starts from an empty local cache and reads it.
steps= run "machine A (cuda-build cache, fills Redis)" CUDA_BUILD_CACHE_REDIS="redis://127.0.0.1:$redis_port"
steps= run "machine B (cuda-build cache in the shared Redis)" CUDA_BUILD_CACHE_REDIS="redis://127.0.0.1:$redis_port"
grep -q "CUDA_BUILD_CACHE_REDIS" "$work/last.log" && { cat "$work/last.log" >&2; echo "bench-sccache: the remote cuda-build cache was not used" >&2; exit 1; }
# The documented way: `cargo cuda build --sccache` on machine B, with only
# sccache's settings; it hands sccache's Redis to cuda-build's tier too.
SCCACHE_SERVER_PORT=$pb "$sccache" --zero-stats >/dev/null 2>&1
BUILD="$cargo_cuda --sccache" steps= run "machine B (cargo cuda build --sccache)" \
  PATH="$(dirname "$sccache"):$PATH" SCCACHE_SERVER_PORT="$pb" SCCACHE_REDIS_ENDPOINT="redis://127.0.0.1:$redis_port" SCCACHE_DIR="$work/b"
read -r h m d < <(stats "$pb"); rows[-1]="${rows[-1]/|–|/|$h hit, $m miss|}"

if [[ $(id -u) == 0 ]] && command -v bwrap >/dev/null; then
  export SCHEDULER_PORT=$(free_port) BUILDER_PORT=$(free_port) CLIENT_PORT=$(free_port)
  distenv=$(scripts/sccache-dist-local.sh start "$work/dist")
  ports+=("$CLIENT_PORT")
  eval "$distenv"
  steps= run "sccache-dist (1 local server)" CUDA_BUILD_WRAPPER="$sccache"
  read -r h m d < <(stats "$CLIENT_PORT"); rows[-1]="${rows[-1]/|–|/|$h hit, $m miss, $d on server|}"
  unset SCCACHE_CONF SCCACHE_SERVER_PORT SCCACHE_DIR SCCACHE_ERROR_LOG
  scripts/sccache-dist-local.sh stop "$work/dist"
else
  rows+=("sccache-dist (1 local server)|skipped (needs root and bwrap)||||||")
fi

SCCACHE_SERVER_PORT=$pb "$sccache" --zero-stats >/dev/null 2>&1
printf '\n__device__ inline unsigned bench_edit_%s() { return %s; }\n' "$RANDOM" "$RANDOM" >>"$header"
steps= run "header edit (machine B)" CUDA_BUILD_WRAPPER="$sccache" SCCACHE_SERVER_PORT="$pb"
read -r h m d < <(stats "$pb"); rows[-1]="${rows[-1]/|–|/|$h hit, $m miss|}"

echo
echo "cuda-kernels through cuda-build, CUDA_ARCHS=$CUDA_ARCHS, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), sccache $("$sccache" --version | cut -d' ' -f2)"
printf '%-48s %7s %8s %12s %9s %9s  %-36s %s\n' "build" "wall s" "of cold" "above floor" "script s" "of cold's" "nvcc steps (cicc+ptxas)" "sccache notices"
for r in "${rows[@]}"; do
  IFS='|' read -r a b c g h i d e <<<"$r"
  printf '%-48s %7s %8s %12s %9s %9s  %-36s %s\n' "$a" "$b" "$c" "$g" "$h" "$i" "$d" "$e"
done
echo "above floor: (wall - floor) / (cold - floor), the share of cold's compile work that remains"
echo "script s: how long cuda-kernels' build script ran (cargo --timings), and its share of cold's:"
echo "  the part a kernel cache can remove (the rest of the wall is cargo and rustc, the same in every row)"
