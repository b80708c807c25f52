#!/usr/bin/env bash
# Installs the Debian packages zgen needs, skipping those already present.
# Safe to run repeatedly; needs root (or sudo) only when something is missing.
set -euo pipefail
pkgs=(build-essential pkg-config libyaml-dev liblua5.4-dev liburing-dev
      libopenmpi-dev openmpi-bin libopenblas-dev python3-numpy python3-torch python3-matplotlib python3-venv fio
      clang libclang-rt-14-dev)   # clang + libFuzzer/ASan runtimes: tests/fuzz (make fuzz)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# The project's Python (build/py): a venv over Debian's python3, so torch/numpy/matplotlib are
# Debian's, with the pinned Hugging Face packages of scripts/requirements.txt on top (--no-deps:
# pip resolves nothing, downloads nothing that is not pinned there). Made again when the pins change.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYV="$ROOT/build/py"
if ! cmp -s "$ROOT/scripts/requirements.txt" "$PYV/.requirements" 2>/dev/null; then
  echo "install-deps: making $PYV (scripts/requirements.txt)"
  rm -rf "$PYV"
  /usr/bin/python3 -m venv --system-site-packages "$PYV"
  "$PYV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$ROOT/scripts/requirements.txt"
  cp "$ROOT/scripts/requirements.txt" "$PYV/.requirements"
fi
