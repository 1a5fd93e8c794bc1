#!/usr/bin/env bash
# `npm run lint:workflows`: actionlint on every workflow in .github/workflows,
# then the repository's own rules (core/workflows/workflow-rules.ts: named secrets, no
# `secrets: inherit`, deploys on a runner label of their own).
#
# actionlint is built from Go modules (tools/actionlint/go.mod pins it), like
# the engine in scripts/engine.sh: no binary download, cached by version and
# by the tools module's contents in
# ~/.cache/sglang-serve/actionlint/<version>-<hash>/bin. A cold build takes
# seconds; later runs reuse it. Installs nothing else: actionlint runs
# shellcheck (and pyflakes) on `run:` scripts only when they are on PATH.
#
# Exit status: 0 clean, 1 findings (printed), anything else a build failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="v1.7.12"
tools="$here/tools/actionlint"

key="$(cat "$tools/go.mod" "$tools/go.sum" | sha256sum | cut -c1-16)"
cache="${SGLANG_SERVE_ACTIONLINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve/actionlint}/$version-$key"
bin="$cache/bin"
if [ ! -x "$bin/actionlint" ]; then
  echo "lint-workflows: building actionlint $version from Go modules into $cache" >&2
  rm -rf "$bin.tmp" && mkdir -p "$bin.tmp"
  (
    cd "$tools"
    export CGO_ENABLED=0 GOFLAGS=-mod=mod
    go build -trimpath -ldflags "-s -w -X github.com/rhysd/actionlint.version=$version" \
      -o "$bin.tmp/actionlint" github.com/rhysd/actionlint/cmd/actionlint
  )
  [ "$("$bin.tmp/actionlint" -version | head -n1)" = "$version" ] || {
    echo "lint-workflows: built actionlint does not report $version" >&2
    exit 2
  }
  rm -rf "$bin" && mv "$bin.tmp" "$bin"
fi

cd "$here"
shopt -s nullglob
workflows=(.github/workflows/*.yml .github/workflows/*.yaml)
if [ ${#workflows[@]} -eq 0 ]; then
  echo "lint-workflows: no workflows in .github/workflows" >&2
  exit 1
fi
if ! command -v shellcheck >/dev/null 2>&1; then
  echo "lint-workflows: shellcheck not on PATH; run: scripts are not shell-checked" >&2
fi
"$bin/actionlint" -no-color "${workflows[@]}"
echo "lint-workflows: ${#workflows[@]} workflow(s) clean (actionlint $version)" >&2
node --require ./ts-hook.cjs scripts/workflow-rules.ts
