#!/usr/bin/env bash
# make_golden.sh — refreshes tests/gen/golden/tiny/ (`make golden`): the files the emitter owns
# (zg_model.h, zg_tables.h, zg_tables.c, Makefile) rendered by bin/zgen from specs/tiny.yaml.
# t_render.sh compares fresh output against them; refresh only when a change is intended, and
# review the diff (git diff tests/gen/golden) before committing.
#   bash tests/gen/make_golden.sh                 refresh
#   bash tests/gen/make_golden.sh --normalize D O write D's golden files, normalized, into O
# Normalized: the absolute repository root becomes @ZGEN_ROOT@ (the Makefile bakes it in), and the
# Makefile's `SRCS += ` lines are dropped (they list other engineers' trainer files).
set -eu
cd "$(dirname "$0")/../.."
ROOT=$PWD
FILES="zg_model.h zg_tables.h zg_tables.c Makefile"

normalize() {   # $1 rendered folder, $2 destination folder
  mkdir -p "$2"
  for f in $FILES; do
    sed -e "s|$ROOT|@ZGEN_ROOT@|g" "$1/$f" | { if [ "$f" = Makefile ]; then grep -v '^SRCS += '; else cat; fi; } >"$2/$f"
  done
}

if [ "${1:-}" = --normalize ]; then normalize "$2" "$3"; exit 0; fi

[ -x bin/zgen ] || { echo "make_golden.sh: build bin/zgen first (make bin/zgen)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin/zgen specs/tiny.yaml -o "$tmp/out" >/dev/null
rm -rf tests/gen/golden/tiny
normalize "$tmp/out" tests/gen/golden/tiny
echo "golden refreshed: tests/gen/golden/tiny ($FILES)"
