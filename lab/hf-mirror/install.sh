#!/usr/bin/env bash
# install.sh: the lab's Hugging Face mirror (olah) and the huggingface_hub
# client the tests download with, each in a venv of its own, from the pinned
# lines of PINS (pip --no-deps --only-binary=:all:, then `pip check`):
#
#   $SGLANG_SERVE_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve)
#     hf-mirror/olah     olah's venv (run as `bin/python -m olah.server`)
#     hf-mirror/client   huggingface_hub's venv
#
# Run by scripts/setup.sh and by the tests before they start a mirror.
# Idempotent; a warm run compares keys and prints nothing. Messages go to
# stderr. SGLANG_SERVE_PYTHON picks the interpreter that makes the venvs
# (python3).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${SGLANG_SERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sglang-serve}/hf-mirror
python=${SGLANG_SERVE_PYTHON:-python3}

pins() { # the PINS requirements of one venv
  awk -v venv="$1" '$1 == venv && $0 !~ /^#/ { print $2 }' "$here/PINS"
}

# The client's huggingface_hub is the container's: the one sglang-release/DEPS pins for every release's venv.
deps_hub=$(awk '$1 == "all" && $2 ~ /^huggingface-hub==/ { print $2 }' "$here/../../sglang-release/DEPS")
client_hub=$(pins client | grep '^huggingface-hub==' || true)
if [ "$deps_hub" != "$client_hub" ]; then
  echo "install.sh: PINS has client ${client_hub:-no huggingface-hub} but sglang-release/DEPS has ${deps_hub:-none}; pin the client to the container's" >&2
  exit 1
fi

# The interpreter the venvs are made with is part of their key (asked once: pyenv's shims are slow).
python_version=$("$python" -c 'import sys; print(sys.version)')

# install_venv NAME: (re)makes the venv NAME unless its key (the layout, the interpreter, its pins) matches.
install_venv() {
  local name=$1 dir="$cache/$1" key
  key=$({ echo "venv 1"; echo "$python_version"; pins "$name"; } | sha256sum | cut -c1-32)
  [ "$(cat "$dir/.sglang-serve-key" 2>/dev/null || true)" = "$key" ] && return 0
  echo "install.sh: installing $name ($(pins "$name" | wc -l) pinned packages) into $dir" >&2
  local tmp="$dir.tmp.$$"
  rm -rf "$tmp" "$dir.old"
  mkdir -p "$cache"
  "$python" -m venv "$tmp"
  local reqs
  mapfile -t reqs < <(pins "$name")
  # Only `bin/python -m ...` is run from these venvs: pip's console scripts name the temporary path.
  if ! "$tmp/bin/python" -m pip install --quiet --no-deps --only-binary=:all: --disable-pip-version-check \
      --no-input --root-user-action=ignore "${reqs[@]}" > "$tmp.log" 2>&1 \
      || ! "$tmp/bin/python" -m pip check --disable-pip-version-check >> "$tmp.log" 2>&1; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    echo "install.sh: installing $name failed" >&2
    return 1
  fi
  rm -f "$tmp.log"
  echo "$key" > "$tmp/.sglang-serve-key"
  if [ -d "$dir" ]; then mv "$dir" "$dir.old"; fi
  mv "$tmp" "$dir"
  rm -rf "$dir.old"
}

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
install_venv olah
install_venv client
