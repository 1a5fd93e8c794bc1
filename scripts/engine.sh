#!/usr/bin/env bash
# The Pulumi engine where no CLI can be downloaded: builds it from Go modules
# (the Go module proxy only) into a cache keyed by version and by the tools
# modules' contents, lays it out as the official distribution does, and prints
# the bin directory. Reuses the cache when it is there.
#
#   scripts/engine.sh          the pinned CLI (tools/engine: v3.248.0)
#   scripts/engine.sh next     the newest CLI tested (tools/engine-next)
#
# The bin directory holds what an official CLI install holds side by side:
#   pulumi                          the engine, built with the release's flags
#   pulumi-language-nodejs          tools/engine/langhost, a stand-in for the
#                                   official host (its module is not served)
#   pulumi-resource-pulumi-nodejs   the official launcher: a shell script that
#                                   runs the SDK's @pulumi/pulumi/cmd/dynamic-provider
# and SHA256SUMS, recorded at build; `CI=true` (or SGLANG_SERVE_ENGINE_VERIFY=1)
# checks the binaries against it before use and rebuilds on a mismatch.
#
# For the pinned CLI, a `pulumi` already on PATH with a pulumi-language-nodejs
# beside it (a user's own install, any version) is used as it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
which="${1:-pinned}"
case "$which" in
  pinned) module="$here/tools/engine" ;;
  next) module="$here/tools/engine-next" ;;
  *) echo "engine: unknown engine '$which' (pinned or next)" >&2; exit 2 ;;
esac
langhost="$here/tools/engine/langhost"
version="$(sed -n 's#^\s*github.com/pulumi/pulumi/pkg/v3 \(v[0-9.]*\).*#\1#p' "$module/go.mod" | head -n 1)"
[ -n "$version" ] || { echo "engine: no github.com/pulumi/pulumi/pkg/v3 version in $module/go.mod" >&2; exit 1; }

if [ "$which" = pinned ] && existing="$(command -v pulumi 2>/dev/null)"; then
  dir="$(dirname "$existing")"
  if [ -x "$dir/pulumi-language-nodejs" ] && [ "$dir" != "${SGLANG_SERVE_ENGINE_CACHE:-}" ]; then
    echo "$dir"
    exit 0
  fi
fi

key="$(cat "$module/go.mod" "$module/go.sum" "$here/tools/engine/go.mod" "$langhost"/*.go | sha256sum | cut -c1-16)"
root="${SGLANG_SERVE_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve/engine}"
cache="$root/$version-$key"
bin="$cache/bin"
programs=(pulumi pulumi-language-nodejs pulumi-resource-pulumi-nodejs)

complete() {
  local p
  for p in "${programs[@]}"; do [ -x "$bin/$p" ] || return 1; done
  [ -s "$bin/SHA256SUMS" ] || return 1
  if [ "${CI:-}" = true ] || [ "${SGLANG_SERVE_ENGINE_VERIFY:-}" = 1 ]; then
    (cd "$bin" && sha256sum --check --quiet --status SHA256SUMS) || {
      echo "engine: $bin does not match its SHA256SUMS; rebuilding" >&2
      return 1
    }
  fi
}

if complete; then
  echo "$bin"
  exit 0
fi

# One build at a time per cache entry; a second caller waits, then reuses it.
mkdir -p "$cache"
exec 9>"$cache.lock"
flock 9
if complete; then
  echo "$bin"
  exit 0
fi

echo "engine: building pulumi $version from Go modules into $cache (a cold build takes several minutes)" >&2
rm -rf "$bin.tmp" && mkdir -p "$bin.tmp"
start=$SECONDS
(
  export CGO_ENABLED=0 GOFLAGS=-mod=mod
  ldflags="-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$version"
  cd "$module"
  go build -trimpath -tags osusergo,grpcnotrace -ldflags "$ldflags" -o "$bin.tmp/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  echo "engine: pulumi built ($((SECONDS - start)) s)" >&2
  cd "$here/tools/engine"
  go build -trimpath -ldflags "-s -w -X main.version=${version#v}" -o "$bin.tmp/pulumi-language-nodejs" ./langhost
)
# The official launcher, as the CLI distribution ships it: the engine starts it
# in the project directory and it runs the SDK's dynamic provider from there.
cat > "$bin.tmp/pulumi-resource-pulumi-nodejs" <<'EOF'
#!/bin/sh
PULUMI_DYNAMIC_PROVIDER_SCRIPT_PATH=$(node -e "console.log(require.resolve('@pulumi/pulumi/cmd/dynamic-provider'))")
if [ ! -z "$PULUMI_DYNAMIC_PROVIDER_SCRIPT_PATH" ]; then
    node "$PULUMI_DYNAMIC_PROVIDER_SCRIPT_PATH" $@
fi
EOF
chmod 0755 "$bin.tmp/pulumi-resource-pulumi-nodejs"
[ "$("$bin.tmp/pulumi" version)" = "$version" ] || { echo "engine: built pulumi does not report $version" >&2; exit 1; }
(cd "$bin.tmp" && sha256sum "${programs[@]}" > SHA256SUMS)
rm -rf "$bin" && mv "$bin.tmp" "$bin"
echo "engine: $version ready in $((SECONDS - start)) s" >&2
echo "$bin"
