#!/usr/bin/env bash
# One-time set-up on a fresh machine (idempotent, fast when done):
# Debian packages the tests and the lab need, npm dependencies, the engine,
# the SGLang releases' wheels and the lab's cached parts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(openssh-server openssh-client systemd util-linux procps python3)
if [ -f lab/REQUIREMENTS ]; then
  while read -r p; do [ -n "$p" ] && [ "${p#\#}" = "$p" ] && packages+=("$p"); done < lab/REQUIREMENTS
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Node.js 22 or later first on PATH (the pinned one installed where the machine's is older).
PATH="$(scripts/node.sh --bin-dir):$PATH"
export PATH

# npm dependencies: `npm ci` once per lockfile (and Node.js version and platform); what it installed is
# kept in the project's cache and linked into the next checkout of the same lockfile. The files are hard
# links to the cache's, as pnpm links its store: a package edited in place in node_modules is edited in
# the cache too (`rm -rf node_modules && npm ci` gives a checkout its own). npm itself replaces files,
# never writes into them. Another filesystem than the cache's gets a copy. Measured 2026-12-07 (18,000
# files, 203 MB): npm ci 11 to 14 CPU-s, the links 0.3 to 1.9, a copy 1 to 8 (all of it the kernel's). The newest three
# lockfiles' sets are kept.
# link_tree FROM TO: TO as hard links to FROM's files, or a copy where they are on different filesystems.
link_tree() { cp -al "$1" "$2" 2>/dev/null || { rm -rf "$2" && cp -a "$1" "$2"; }; }
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  kept_root="${SGLANG_SERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve}/node-modules"
  key="$({ cat package-lock.json; node -p 'process.version + " " + process.platform + " " + process.arch'; } | sha256sum | cut -c1-16)"
  kept="$kept_root/$key"
  rm -rf node_modules
  if [ -f "$kept/complete" ]; then
    echo "setup: node_modules from the cache ($kept)" >&2
    link_tree "$kept/node_modules" node_modules
    touch "$kept" node_modules/.package-lock.json
  else
    echo "setup: npm ci" >&2
    npm ci --no-audit --no-fund
    mkdir -p "$kept_root"
    staging="$(mktemp -d "$kept_root/.staging.XXXXXX")"
    link_tree node_modules "$staging/node_modules"
    touch "$staging/complete"
    rm -rf "$kept"
    mv -T "$staging" "$kept" 2>/dev/null || rm -rf "$staging"
    # shellcheck disable=SC2012 # the cache's own names: 16 hex digits
    ls -1t "$kept_root" | tail -n +4 | while read -r old; do rm -rf "${kept_root:?}/$old"; done
  fi
fi

scripts/engine.sh >/dev/null
# The newest CLI the tests also run under (tests/e2e/engines-next.test.ts).
scripts/engine.sh next >/dev/null
# The real SGLang releases the lab tests use as their oracle (sglang-release/README.md).
sglang-release/install.sh
# The lab's Hugging Face mirror (olah) and the huggingface_hub client its tests download with (lab/README.md).
lab/hf-mirror/install.sh
# The lab's cached parts (the container's Debian rootfs, the wheels its box stages from): made once here, not by the test files' labs at the same time.
node --require ./ts-hook.cjs lab/cli.ts prepare
