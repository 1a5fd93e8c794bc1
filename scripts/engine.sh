#!/usr/bin/env bash
# Builds the pinned Pulumi engine from Go modules (no downloads besides the Go
# module proxy) into a cache keyed by version and by the tools module's
# contents, and prints the bin directory. Reuses the cache when it is there.
#
#   scripts/engine.sh            build if needed, print the bin directory
#
# A `pulumi` already on PATH that reports v3.248.0 and sits beside a
# pulumi-language-nodejs is used as it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="v3.248.0"
tools="$here/tools/engine"

if existing="$(command -v pulumi 2>/dev/null)"; then
  dir="$(dirname "$existing")"
  if [ "$("$existing" version 2>/dev/null)" = "$version" ] && [ -x "$dir/pulumi-language-nodejs" ] \
     && [ -x "$dir/pulumi-resource-pulumi-nodejs" ]; then
    echo "$dir"
    exit 0
  fi
fi

key="$(cat "$tools/go.mod" "$tools/go.sum" "$tools"/langhost/*.go "$tools"/providerlauncher/*.go | sha256sum | cut -c1-16)"
cache="${SGLANG_SERVE_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve/engine}/$version-$key"
bin="$cache/bin"
if [ -x "$bin/pulumi" ] && [ -x "$bin/pulumi-language-nodejs" ] && [ -x "$bin/pulumi-resource-pulumi-nodejs" ]; then
  echo "$bin"
  exit 0
fi

echo "engine: building pulumi $version from Go modules into $cache (a cold build takes several minutes)" >&2
mkdir -p "$bin.tmp"
start=$SECONDS
(
  cd "$tools"
  export CGO_ENABLED=0 GOFLAGS=-mod=mod
  ldflags="-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$version"
  go build -trimpath -tags osusergo,grpcnotrace -ldflags "$ldflags" -o "$bin.tmp/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  echo "engine: pulumi built ($((SECONDS - start)) s)" >&2
  go build -trimpath -ldflags "-s -w -X main.version=${version#v}" -o "$bin.tmp/pulumi-language-nodejs" ./langhost
  # The dynamic-provider plugin the engine starts in the project directory:
  # the warm provider host for sglang-serve, the SDK's provider otherwise.
  go build -trimpath -ldflags "-s -w" -o "$bin.tmp/pulumi-resource-pulumi-nodejs" ./providerlauncher
)
[ "$("$bin.tmp/pulumi" version)" = "$version" ] || { echo "engine: built pulumi does not report $version" >&2; exit 1; }
rm -rf "$bin" && mv "$bin.tmp" "$bin"
echo "engine: ready in $((SECONDS - start)) s" >&2
echo "$bin"
