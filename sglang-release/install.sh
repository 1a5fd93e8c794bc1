#!/usr/bin/env bash
# install.sh [VERSION...]: installs real SGLang releases (pip install
# --no-deps) into one site dir each, and the real packages of DEPS that their
# config layer imports into a shared deps site dir, for sglang-release/oracle.py.
# Without arguments: the releases listed in VERSIONS (the lab and the tests);
# with them: those releases (the preview's verdict, any release on the index).
# A release DEPS has no lines for gets the release's own `==` pins of the
# packages that must match it (DERIVED below), read from its wheel's METADATA.
#
#   $SGLANG_SERVE_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve)
#     sglang/<version>/site   the release, plus DEPS lines scoped to it
#     sglang/deps/site        DEPS lines scoped `all`
#
# Any CPython 3.11 can run them with `stubs/`, the site dir and the deps dir
# on sys.path (an LXC container's /usr/bin/python3 too, with these bind-mounted).
# Idempotent; a warm run compares keys and prints nothing. Messages go to
# stderr. SGLANG_SERVE_PYTHON picks the interpreter whose pip installs (python3).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${SGLANG_SERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve}/sglang
python=${SGLANG_SERVE_PYTHON:-python3}

# Everything that decides what gets installed: the lists and this script.
key=$(cat "$here/VERSIONS" "$here/DEPS" "$here/install.sh" | sha256sum | cut -c1-32)
[ $# -eq 0 ] && [ "$(cat "$cache/.installed" 2>/dev/null || true)" = "$key" ] && exit 0
for v in "$@"; do
  if ! [[ "$v" =~ ^[0-9]+(\.[0-9]+)*([.-]?(a|b|rc|post|dev)[0-9]*)*$ ]]; then
    echo "install.sh: '$v' is not a release version (e.g. 0.5.23)" >&2
    exit 2
  fi
done

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
[ $# -eq 0 ] && [ "$(cat "$cache/.installed" 2>/dev/null || true)" = "$key" ] && exit 0

if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
  echo "install.sh: $python is not CPython 3.11 (the releases' wheels are cp311); set SGLANG_SERVE_PYTHON" >&2
  exit 1
fi

versions=("$@")
if [ $# -eq 0 ]; then
  while read -r v; do
    [ -n "$v" ] && [ "${v#\#}" = "$v" ] && versions+=("$v")
  done < "$here/VERSIONS"
fi

# What must match a release and DEPS pins per release where it has lines:
# for another release, its own `==` pins of these (the wheel's Requires-Dist).
DERIVED="transformers openai compressed-tensors tokenizers sentencepiece"

pins() { # the DEPS requirements of one scope
  awk -v scope="$1" '$1 == scope && $0 !~ /^#/ { print $2 }' "$here/DEPS"
}

# pip_into DIR WHAT REQUIREMENT...: pip install --no-deps into DIR; on failure, pip's log, DIR removed, 1.
pip_into() {
  local tmp=$1 what=$2
  shift 2
  if ! "$python" -m pip install --quiet --no-deps --only-binary=:all: --no-warn-conflicts \
      --disable-pip-version-check --root-user-action=ignore --no-input --target "$tmp" "$@" \
      > "$tmp.log" 2>&1; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    echo "install.sh: installing $what failed" >&2
    return 1
  fi
  rm -f "$tmp.log"
}

# install_site DIR WHAT REQUIREMENT...: (re)install DIR unless its key matches.
install_site() {
  local dir=$1 what=$2
  shift 2
  local dir_key
  # The site's layout version first (2: with .sglang-serve-compiled), then what it holds.
  dir_key=$(printf '%s\n' "site 2" "$@" | sha256sum | cut -c1-32)
  [ "$(cat "$dir/.sglang-serve-key" 2>/dev/null || true)" = "$dir_key" ] && return 0
  echo "install.sh: installing $what into $dir" >&2
  local tmp="$dir.tmp.$$"
  rm -rf "$tmp" "$dir.old"
  mkdir -p "$(dirname "$dir")"
  pip_into "$tmp" "$what" "$@" || return 1
  if [ -n "${derive:-}" ]; then
    local pinned
    mapfile -t pinned < <(release_pins "$tmp")
    if [ ${#pinned[@]} -gt 0 ]; then pip_into "$tmp" "$what's pins (${pinned[*]})" "${pinned[@]}" || return 1; fi
  fi
  # pip compiles what it installs and lists each .pyc in RECORD without a hash:
  # their sha256 here, so the check before use (site-check.ts) covers them too.
  (cd "$tmp" && find . -path '*/__pycache__/*' -type f -printf '%P\0' | sort -z | xargs -0 -r sha256sum) > "$tmp/.sglang-serve-compiled"
  echo "$dir_key" > "$tmp/.sglang-serve-key"
  if [ -d "$dir" ]; then mv "$dir" "$dir.old"; fi
  mv "$tmp" "$dir"
  rm -rf "$dir.old"
}

# release_pins SITE: the release's own `NAME==VERSION` pins of DERIVED (no markers, no extras).
release_pins() {
  local metadata
  metadata=$(ls "$1"/sglang-*.dist-info/METADATA 2>/dev/null | head -n 1)
  [ -n "$metadata" ] || return 0
  for name in $DERIVED; do
    sed -n "s/^Requires-Dist: \($name\)==\([^ ;]*\)\$/\1==\2/Ip" "$metadata" | head -n 1
  done
}

# One pip per site dir, all at once (download and unzip bound).
pids=()
mapfile -t shared < <(pins all)
install_site "$cache/deps/site" "the shared deps (${#shared[@]} pinned packages)" "${shared[@]}" &
pids+=($!)
for v in "${versions[@]}"; do
  mapfile -t own < <(pins "$v")
  if [ ${#own[@]} -eq 0 ]; then
    # No DEPS lines: the release's own pins, read once its wheel is in.
    derive=1 install_site "$cache/$v/site" "sglang $v with its own pins of $DERIVED" "sglang==$v" &
  else
    derive= install_site "$cache/$v/site" "sglang $v with ${own[*]}" "sglang==$v" "${own[@]}" &
  fi
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" -eq 0 ] || exit 1

[ $# -eq 0 ] && echo "$key" > "$cache/.installed"
exit 0
