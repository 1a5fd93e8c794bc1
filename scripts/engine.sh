#!/usr/bin/env bash
# The Pulumi CLI for this project's commands, laid out as the official
# distribution lays it out, and prints its bin directory:
#
#   scripts/engine.sh            the CLI the user installed (`pulumi` on PATH with
#                                its pulumi-language-nodejs beside it), else the pinned one
#   scripts/engine.sh pinned     exactly the pinned CLI (.pulumi-version: v3.248.0)
#   scripts/engine.sh next       exactly the newest CLI tested (tools/engine-next/go.mod)
#
# An installed CLI of the wanted version is used as it is: `pulumi` on PATH,
# or in one of the directories of SGLANG_SERVE_CLI_DIRS (colon-separated; CI
# installs the official CLIs there). Where there is none (these machines, CI),
# it is built from Go modules (the Go module proxy only) into a cache keyed
# by version and by the tools modules' contents. The bin directory then holds
# what an official CLI install holds side by side:
#   pulumi                          the engine, built with the release's flags
#   pulumi-language-nodejs          tools/engine/langhost, a stand-in for the
#                                   official host (its module is not served)
#   pulumi-resource-pulumi-nodejs   the official launcher: a shell script that
#                                   runs the SDK's @pulumi/pulumi/cmd/dynamic-provider
# and SHA256SUMS, recorded at build; `CI=true` (or SGLANG_SERVE_ENGINE_VERIFY=1)
# checks the binaries against it before use and rebuilds on a mismatch. A
# check that passed is remembered by the files' size, mtime and inode
# (bin/.verified), so the next call re-hashes only files that changed since.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
which="${1:-installed}"
case "$which" in
  installed | pinned) module="$here/tools/engine" ;;
  next) module="$here/tools/engine-next" ;;
  *) echo "engine: unknown CLI '$which' (installed, pinned or next)" >&2; exit 2 ;;
esac
langhost="$here/tools/engine/langhost"
version="$(sed -n 's#^\s*github.com/pulumi/pulumi/pkg/v3 \(v[0-9.]*\).*#\1#p' "$module/go.mod" | head -n 1)"
[ -n "$version" ] || { echo "engine: no github.com/pulumi/pulumi/pkg/v3 version in $module/go.mod" >&2; exit 1; }
if [ "$which" != next ] && [ "v$(tr -d '[:space:]' < "$here/.pulumi-version")" != "$version" ]; then
  echo "engine: .pulumi-version says $(cat "$here/.pulumi-version") but tools/engine/go.mod builds $version: change both together" >&2
  exit 1
fi

# An installed CLI: any version for `installed`, the wanted one otherwise.
IFS=: read -r -a dirs <<< "${SGLANG_SERVE_CLI_DIRS:-}"
if existing="$(command -v pulumi 2>/dev/null)"; then dirs=("$(dirname "$existing")" "${dirs[@]}"); fi
for dir in "${dirs[@]}"; do
  [ -n "$dir" ] && [ -x "$dir/pulumi" ] && [ -x "$dir/pulumi-language-nodejs" ] || continue
  if [ "$which" = installed ] || [ "$("$dir/pulumi" version 2>/dev/null)" = "$version" ]; then
    echo "$dir"
    exit 0
  fi
done

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
    local seen
    seen="$(cd "$bin" && stat -c '%n %s %Y %i' "${programs[@]}" SHA256SUMS)"
    [ "$(cat "$bin/.verified" 2>/dev/null)" = "$seen" ] && return 0
    (cd "$bin" && sha256sum --check --quiet --status SHA256SUMS) || {
      echo "engine: $bin does not match its SHA256SUMS; rebuilding" >&2
      return 1
    }
    printf '%s\n' "$seen" > "$bin/.verified.$$" && mv -f "$bin/.verified.$$" "$bin/.verified"
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
