#!/bin/bash
# Interop runner endpoint: quic-go v0.65.0's interop server and client built on
# TurboRetry by build.sh. As the runner's endpoints/quic-go: the binaries decide
# what they support (exit 127 otherwise).
set -e
BIN=${IR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/interop-runner}/quic-go-on-turboretry
if [ ! -x "$BIN/server" ] || [ ! -x "$BIN/client" ]; then
  echo "binaries missing in $BIN: run $(dirname "$0")/build.sh"
  exit 1
fi
echo "Using quic-go v0.65.0's interop programs on TurboRetry $(cat "$BIN/version.txt" 2>/dev/null)"
if [ "$ROLE" == "client" ]; then
  echo "Test case: $TESTCASE"
  # shellcheck disable=SC2086
  exec "$BIN/client" ${CLIENT_PARAMS:-} $REQUESTS
else
  exec "$BIN/server" "$@"
fi
