#!/usr/bin/env bash
# TurboRetry's endpoint for the QUIC interop runner (quic-interop-runner's
# endpoint contract; /work/shared/interop-runner's README describes the
# docker-free runner this repository tests with).
#
# The runner sets ROLE (server or client), TESTCASE, REQUESTS (client: the
# URLs), SSLKEYLOGFILE and QLOGDIR, and mounts /www, /downloads, /certs and
# /logs. "turboretry interop" reads them and exits 127 for every TESTCASE it
# does not implement (unknown ones included); anything else it runs:
#   server: handshake transfer chacha20 retry resumption zerortt http3
#           multiconnect ecn v2 connectionmigration versionnegotiation
#   client: the same plus keyupdate
# (the runner's other cases pass one of these: longrtt runs handshake;
# multiplexing, blackhole, amplificationlimit, transferloss,
# transfercorruption, ipv6 and the rebind cases run transfer; handshakeloss
# and handshakecorruption run multiconnect).
#
# Binary: the one build.sh put into $IR_CACHE for this checkout
# (docker-free runner), else /usr/local/bin/turboretry (the Docker image).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/endpoint.env.sh"
if [ ! -x "$BIN" ]; then
  BIN=/usr/local/bin/turboretry
fi
if [ ! -x "$BIN" ]; then
  echo "turboretry binary missing: run $(dirname "$0")/build.sh" >&2
  exit 1
fi
# In the official runner's containers: the simulator's routes, and the
# client waits for the simulator. The docker-free runner has neither (the
# network is up before this script starts).
if [ -x /setup.sh ]; then
  /setup.sh
fi
if [ "${ROLE:-}" = client ] && [ -x /wait-for-it.sh ]; then
  /wait-for-it.sh sim:57832 -s -t 30
fi
echo "turboretry $(cat "$(dirname "$BIN")/version.txt" 2>/dev/null || echo "(image)"): ROLE=${ROLE:-} TESTCASE=${TESTCASE:-}"
exec "$BIN" interop
