#!/usr/bin/env bash
# The test command (`npm test`): type-check, lint (eslint, prettier --check:
# zero findings), and every suite with mocha: pure logic, remote I/O against
# a real sshd, the providers at the fake-box seam, the components under mocks,
# the lab (real LXC, systemd, SGLang's own ServerArgs; the differential test),
# and the end-to-end deploys with the real engine against the lab; the ten
# slowest tests are listed before mocha's summary (tests/slowest-reporter.ts).
#
# `scripts/test.sh --quick` (`npm run test:quick`), the edit loop: the pure
# suites, the providers at the fake-box seam, the components, remote I/O
# against a real sshd, and the bench's own tests; no lab, no engine run and no
# static checks (`npm run typecheck`, `npm run lint`), in about 2 minutes on
# 2 cores. Other arguments are test files, run as the full run runs them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
quick=false
if [ "${1:-}" = --quick ]; then
  quick=true
  shift
fi
scripts/setup.sh
PATH="$(scripts/node.sh --bin-dir):$PATH"
export PATH
cache_root="${SGLANG_SERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve}"
# node's compile cache for the test workers and the node processes they start,
# where scripts/pulumi.sh keeps it for the engine's (test:quick: about 0.1
# CPU-minutes less of about 3, 2026-12-06).
export NODE_COMPILE_CACHE="${NODE_COMPILE_CACHE:-$cache_root/node-compile-cache}"
# One V8 platform thread (--v8-pool-size; node's default is 4) in every node process of the run: the
# test workers, the engine's (scripts/pulumi.sh sets the same for its own runs), the lab's stand-ins.
# The run keeps both cores busy from start to end, so V8's background compiling and collecting only
# competes with the run's own work.
case " ${NODE_OPTIONS:-} " in
  *" --v8-pool-size="*) ;;
  *) export NODE_OPTIONS="--v8-pool-size=1${NODE_OPTIONS:+ $NODE_OPTIONS}" ;;
esac
# The static checks (type-check, eslint, prettier --check) run beside the test files, which leave a core idle now
# and then; a failing check prints its output as it ends, and fails the run.
checks="$(mktemp -d)"
trap 'rm -rf "$checks"' EXIT
check() {
  local name=$1
  shift
  if ! "$@" > "$checks/$name.log" 2>&1; then
    { echo "npm test: $name failed:"; cat "$checks/$name.log"; } >&2
    touch "$checks/failed"
  fi
}
# Their caches live outside the checkout, one per checkout path, keyed by each
# file's content (and the tools' own config): a fresh clone of the same tree at
# the same path checks only what changed (about 31 CPU-s cold, 2026-12-06).
lint_cache="$cache_root/lint/$(printf %s "$PWD" | sha256sum | cut -c1-16)"
if ! $quick; then
  mkdir -p "$lint_cache"
  check typecheck npx tsc --noEmit -p tsconfig.json --incremental --tsBuildInfoFile "$lint_cache/tsc.tsbuildinfo" &
  check eslint npx eslint --cache --cache-strategy content --cache-location "$lint_cache/eslint" . &
  check prettier npx prettier --check --cache --cache-strategy content --cache-location "$lint_cache/prettier" . &
fi
# Every test file in its own mocha worker, SGLANG_SERVE_TEST_JOBS at a time
# (default 7: the end-to-end files spend much of their time waiting on
# servers, deadlines and healthy windows, so more workers than cores keep the
# cores busy; beyond that, the runs with more workers cost more CPU in every
# part, the Go CLI's fixed work too (docs/testing.md). Fresh-clone runs on 2 cores,
# 2026-12-06, CPU-minutes by process accounting: 10 workers 16.6 to 19.6 in nine
# runs (wall 10 min 24 s to 12 min 10 s); 7 workers 15.1 to 17.4 in six runs (9 min
# 28 s to 10 min 47 s), both cores busy throughout; 5 workers 15.6 and 15.9 (9 min 58 s
# and 10 min 13 s, the cores idle 6 to 7% of the time); 6 workers 16.1 (10 min 14 s)). Each lab and end-to-end file brings
# up a lab of its own (own loopback addresses, own simulated GPUs), so files
# run side by side. The longest files are handed out first: the checks
# against the real releases (the differential test among them), the end-to-end
# deploys with the real engine, then the longest of the others (a file handed
# out last that runs a minute leaves a core idle while it ends), then the rest
# of the lab, then the fast pure suites.
pure=("tests/core/**/*.test.ts" "tests/remote/**/*.test.ts" "tests/providers/**/*.test.ts" "tests/components/**/*.test.ts" "tests/bench/**/*.test.ts")
if $quick && [ $# -eq 0 ]; then
  set -- "${pure[@]}"
elif [ $# -eq 0 ]; then
  # Each file once: mocha's parallel mode runs a file as often as the arguments name it.
  # The end-to-end files that took longest on a full run (2026-12-06), longest first; then the others.
  slow_e2e=(weights-switch release-staging drafter-switch gateway serving-quality faults-box drift gpu-scoped-servers sglang-box faults-healthy-window two-boxes faults-interrupted drafter-in-place deploy faults-start)
  e2e=()
  for name in "${slow_e2e[@]}"; do e2e+=("tests/e2e/$name.test.ts"); done
  for f in tests/e2e/*.test.ts; do [[ " ${e2e[*]} " == *" $f "* ]] || e2e+=("$f"); done
  # The other files that took longest on a full run (2026-12-06), longest first.
  slow_rest=(providers/sglang-service providers/sglang-weights lab/sglang lab/start-cache lab/sglang-verdict lab/weights-staging lab/hf-mirror core/box-facts remote/read-gate)
  shopt -s globstar
  files=(tests/lab/sglang-releases.test.ts "${e2e[@]}")
  for name in "${slow_rest[@]}"; do files+=("tests/$name.test.ts"); done
  for f in tests/lab/*.test.ts ${pure[*]}; do [[ " ${files[*]} " == *" $f "* ]] || files+=("$f"); done
  set -- "${files[@]}"
fi
status=0
npx mocha --parallel --jobs "${SGLANG_SERVE_TEST_JOBS:-7}" "$@" || status=$?
wait
if [ -e "$checks/failed" ]; then exit 1; fi
exit "$status"
