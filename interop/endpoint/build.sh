#!/usr/bin/env bash
# Builds "turboretry" (cmd/turboretry of this checkout) with -tags eval, whose
# "interop" command is the endpoint (the default build leaves it out), into
# $IR_CACHE/turboretry-<hash of the checkout path>/turboretry (see
# endpoint.env.sh). Idempotent: go's build cache makes a
# rebuild of unchanged sources quick, and the binary is replaced atomically,
# so a run that is using it is never handed a half-written file.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/endpoint.env.sh"
mkdir -p "$BIN_DIR"
cd "$REPO"
tmp=$(mktemp "$BIN_DIR/turboretry.XXXXXX")
trap 'rm -f "$tmp"' EXIT
timeout 600 go build -tags eval -trimpath -o "$tmp" ./cmd/turboretry
chmod 755 "$tmp"
mv -f "$tmp" "$BIN"
git -C "$REPO" describe --always --dirty 2>/dev/null >"$BIN_DIR/version.txt" || true
echo "built $BIN ($(cat "$BIN_DIR/version.txt" 2>/dev/null))"
