#!/usr/bin/env bash
# Runs every fuzz target in the module for $FUZZTIME each (default 3s).
# `go test -fuzz` accepts one target per invocation, so list them first.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-3s}"
failed=0
count=0
while IFS= read -r dir; do
	pkg="./${dir}"
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u); do
		count=$((count + 1))
		echo "fuzz: ${pkg} ${target} (${fuzztime})"
		if ! go test -run='^$' -fuzz="^${target}\$" -fuzztime="${fuzztime}" "$pkg"; then
			failed=$((failed + 1))
		fi
	done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -r -n1 dirname | sed 's|^\./||' | sort -u)
echo "fuzz: $((count - failed)) passed, ${failed} failed"
[ "$failed" -eq 0 ]
