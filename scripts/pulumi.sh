#!/usr/bin/env bash
# `npm run pulumi -- <args>`: a plain `pulumi <args>` with the user's CLI
# (scripts/engine.sh: `pulumi` on PATH, else the pinned one built from Go
# modules), offline. It adds nothing a user's own `pulumi` run lacks, only
# settings:
#
# - no update check, no plugin downloads;
# - a local file backend in .pulumi-state/ unless PULUMI_BACKEND_URL is set;
# - the stack passphrase from PULUMI_CONFIG_PASSPHRASE(_FILE) when set, else a
#   random one generated once for this checkout in .pulumi-state/passphrase;
# - `--stack NAME` for a Pulumi.NAME.yaml that the backend does not know yet
#   creates the stack first (like `pulumi stack select --create`);
# - SGLANG_SERVE_ENGINE=pinned|next runs exactly the pinned CLI or the newest
#   tested (the tests set it), instead of whichever is installed;
# - SGLANG_SERVE_PROJECT_DIR runs another copy of the project (the end-to-end
#   tests deploy from temporary copies so they never touch this tree);
# - Node.js 22 or later first on PATH (scripts/node.sh), and node's compile
#   cache in the project's cache (NODE_COMPILE_CACHE, unless set).
#
# `scripts/pulumi.sh --env-exec COMMAND [ARGS...]` runs COMMAND instead of
# pulumi, under the same settings, in the current directory, with
# SGLANG_SERVE_ENGINE_BIN (the CLI's bin directory, from scripts/engine.sh) and
# SGLANG_SERVE_PROJECT_DIR set: `npm run drift` drives the CLI this way through
# the Automation API, so these settings stay defined here only.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$("$here/scripts/engine.sh" "${SGLANG_SERVE_ENGINE:-installed}")"
PATH="$bin:$("$here/scripts/node.sh" --bin-dir):$PATH"
export PATH
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
# The program and the dynamic-provider plugin load the SDK before any project
# file: defer the modules they load and never use here (the TypeScript
# compiler, the Automation API, the tracing exporter, zod's translations:
# scripts/sdk-lazy-requires.cjs; absent from a bench snapshot of an older commit).
if [ -f "$here/scripts/sdk-lazy-requires.cjs" ]; then
  export NODE_OPTIONS="--require \"$here/scripts/sdk-lazy-requires.cjs\"${NODE_OPTIONS:+ $NODE_OPTIONS}"
fi
# One V8 platform thread (--v8-pool-size; node's default is 4) in the engine's node processes, unless
# NODE_OPTIONS already sets a pool (scripts/test.sh sets the same for a test run). The program and the
# plugin are short processes bound by their start-up (compiling and loading modules); V8's background
# threads compile and collect beside them, which costs more CPU in all, and on a busy machine (a test
# run keeps both of 2 cores busy) only competes with them. Measured 2026-12-06 (Node
# 24.22.3; loading the providers as a plugin does, CPU-s, mean of 10, twice): 0.47 and 0.42 with 4,
# 0.42 and 0.39 with 1, wall time 0.34/0.30 s and 0.30/0.27 s; loading the SDK: no difference.
case " ${NODE_OPTIONS:-} " in
  *" --v8-pool-size="*) ;;
  *) export NODE_OPTIONS="--v8-pool-size=1${NODE_OPTIONS:+ $NODE_OPTIONS}" ;;
esac
# node's compile cache (Node >= 22.1): V8's code for each module the program and the plugin load,
# kept across engine runs, keyed by the module's source, checked by node before use. Measured
# 2026-12-05 (Node 24.22.3, @pulumi/pulumi 3.276.0; CPU-s of loading, 8 runs each, median):
# the program 1.17-1.30 without, 0.92-0.96 with; the plugin 0.72-0.86 without, 0.57-0.65 with.
export NODE_COMPILE_CACHE="${NODE_COMPILE_CACHE:-${SGLANG_SERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve}/node-compile-cache}"
project="${SGLANG_SERVE_PROJECT_DIR:-$here}"
state="${SGLANG_SERVE_STATE_DIR:-$project/.pulumi-state}"
mkdir -p "$state"
export PULUMI_HOME="${PULUMI_HOME:-$state/home}"
export PULUMI_BACKEND_URL="${PULUMI_BACKEND_URL:-file://$state/backend}"
[[ $PULUMI_BACKEND_URL == file://* ]] && mkdir -p "${PULUMI_BACKEND_URL#file://}"
if [ -z "${PULUMI_CONFIG_PASSPHRASE:-}" ] && [ -z "${PULUMI_CONFIG_PASSPHRASE_FILE:-}" ]; then
  if [ ! -s "$state/passphrase" ]; then
    (umask 077 && head -c 24 /dev/urandom | base64 > "$state/passphrase")
  fi
  export PULUMI_CONFIG_PASSPHRASE_FILE="$state/passphrase"
fi
# SGLANG_SERVE_ENGINE_RUN_LOG=FILE (opt-in, for counting engine runs: docs/testing.md "Engine runs"):
# one line per command appended to FILE: the verb, the stack, the project copy, and
# SGLANG_SERVE_ENGINE_RUN_TAG (the test file, from tests/root-hooks.ts). Unset: nothing.
engine_run_log() {
  [ -n "${SGLANG_SERVE_ENGINE_RUN_LOG:-}" ] || return 0
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$(basename "$project")" "${SGLANG_SERVE_ENGINE_RUN_TAG:-}" >> "$SGLANG_SERVE_ENGINE_RUN_LOG"
}
if [ "${1:-}" = --env-exec ]; then
  shift
  script=""
  for a in "$@"; do [[ $a == *.ts ]] && { script=$(basename "$a"); break; }; done
  engine_run_log "env-exec:${script:-$(basename "$1")}" ""
  [ $# -gt 0 ] || { echo "pulumi.sh: --env-exec needs a command" >&2; exit 2; }
  export SGLANG_SERVE_ENGINE_BIN="$bin" SGLANG_SERVE_PROJECT_DIR="$project"
  exec "$@"
fi

stack=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --stack|-s) stack="${args[$((i + 1))]:-}" ;;
    --stack=*) stack="${args[$i]#--stack=}" ;;
  esac
done
cd "$project"
stack_known() {
  # A file backend's stack is a file (project-scoped, or the legacy layout): no file, no stack. Looking
  # saves asking the CLI, about 0.25 CPU-s a command.
  if [[ $PULUMI_BACKEND_URL == file://* ]]; then
    local dir="${PULUMI_BACKEND_URL#file://}/.pulumi/stacks" name
    name="$(sed -n 's/^name: *//p' Pulumi.yaml | head -n 1)"
    for f in "$dir/$name/$1.json" "$dir/$name/$1.json.gz" "$dir/$1.json" "$dir/$1.json.gz"; do
      [ -f "$f" ] && return 0
    done
    return 1
  fi
  pulumi stack ls --json 2>/dev/null | grep -q "\"name\": \"$1\""
}
if [ -n "$stack" ] && [ -f "Pulumi.$stack.yaml" ] && [ "${args[0]:-}" != "stack" ]; then
  if ! stack_known "$stack"; then
    engine_run_log "stack-init" "$stack"
    pulumi stack init "$stack" --non-interactive >&2
  fi
fi
verb=""
for a in "${args[@]}"; do [[ $a == -* ]] || { verb=$a; break; }; done
engine_run_log "$verb" "$stack"
exec pulumi "$@"
