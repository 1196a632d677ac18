#!/usr/bin/env bash
# Builds quic-go v0.65.0's own interop server and client (interop/server,
# interop/client from the module cache) on TurboRetry: the drop-in module that
# internal/dropin/cmd/prepare writes (imports swapped for ours, nothing else
# changed; docs/dropin.md). Output: $IR_CACHE/quic-go-on-turboretry/{server,client}.
# TURBORETRY_REPO is the checkout to build against (default: the one this
# script is in). Use this directory as an interop runner endpoint:
#   ./run.sh --server DIR --client endpoints/quic-go --case handshake
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=${TURBORETRY_REPO:-$(cd "$HERE/../.." && pwd)}
CACHE=${IR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/interop-runner}
OUTD=$CACHE/quic-go-on-turboretry
SRC=$OUTD/src
mkdir -p "$OUTD"
(cd "$REPO" && go run ./internal/dropin/cmd/prepare -dir "$SRC" -repo "$REPO")
cd "$SRC"
timeout 600 go build -trimpath -o "$OUTD/server.tmp" ./interop/server
timeout 600 go build -trimpath -o "$OUTD/client.tmp" ./interop/client
mv "$OUTD/server.tmp" "$OUTD/server"
mv "$OUTD/client.tmp" "$OUTD/client"
git -C "$REPO" rev-parse --short HEAD >"$OUTD/version.txt" 2>/dev/null || echo unknown >"$OUTD/version.txt"
echo "built $OUTD/server and $OUTD/client (quic-go v0.65.0's interop programs on TurboRetry $(cat "$OUTD/version.txt"))"
