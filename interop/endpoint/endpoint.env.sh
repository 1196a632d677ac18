# Sourced by run_endpoint.sh and build.sh: where build.sh puts the binary
# for this checkout. The directory name carries a hash of the checkout's
# path, so two checkouts (worktrees) sharing one IR_CACHE do not overwrite
# each other's build.
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${IR_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/interop-runner}
BIN_DIR=$CACHE/turboretry-$(printf '%s' "$REPO" | sha256sum | cut -c1-12)
BIN=$BIN_DIR/turboretry
