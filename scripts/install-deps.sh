#!/usr/bin/env bash
# Installs the Debian packages zgen needs, skipping those already present.
# Safe to run repeatedly; needs root (or sudo) only when something is missing.
set -euo pipefail
pkgs=(build-essential pkg-config libyaml-dev liblua5.4-dev liburing-dev
      libopenmpi-dev openmpi-bin libopenblas-dev python3-numpy python3-torch fio
      clang libclang-rt-14-dev)   # clang + libFuzzer/ASan runtimes: tests/fuzz (make fuzz)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
