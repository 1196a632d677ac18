#!/usr/bin/env bash
# Determinism check (issue 14): `bash .ci/run` N times in a row on a fresh
# clone of REV, with two CPU-burning processes beside it; stops at the first
# failure. Each run's log and a summary line (exit status, seconds, load)
# go to OUT (default /tmp/ci-loop/REV).
#
#   scripts/ci-loop.sh [REV [N [OUT]]]     # defaults: HEAD 10
#
# The clone gets ../shared linked to this checkout's ../shared, as CI has it.
set -u -o pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
REV=$(git -C "$HERE" rev-parse --short "${1:-HEAD}") || exit 2
N=${2:-10}
OUT=${3:-/tmp/ci-loop/$REV}
rm -rf "$OUT" && mkdir -p "$OUT" || exit 1
git clone -q "$HERE" "$OUT/src" && git -C "$OUT/src" checkout -q "$REV" || exit 1
[ -e "$HERE/../shared" ] && ln -s "$(cd "$HERE/../shared" && pwd)" "$OUT/shared"
burn() { while :; do :; done; }
burn & b1=$!
burn & b2=$!
trap 'kill $b1 $b2 2>/dev/null' EXIT
for i in $(seq 1 "$N"); do
  start=$(date +%s)
  (cd "$OUT/src" && bash .ci/run) >"$OUT/run$i.log" 2>&1
  rc=$?
  echo "run $i rev $REV rc $rc seconds $(($(date +%s) - start)) load $(cut -d' ' -f1-3 /proc/loadavg) at $(date +%H:%M)" | tee -a "$OUT/summary.txt"
  [ "$rc" -ne 0 ] && exit 1
done
echo "ci-loop: $N runs in a row passed at $REV"
