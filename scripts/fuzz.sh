#!/usr/bin/env bash
# Runs every fuzz target in the module with the budget $FUZZTIME (a duration
# such as 60s, or an execution count such as 20000x; default 20000x).
#
# `make test` uses an execution count: with a duration, Go 1.26's fuzz
# coordinator can fail a target with a bare "context deadline exceeded" when
# the time runs out under CPU load (go.dev/issue/75804, fixed in Go 1.27),
# with no failing input. For duration budgets the script therefore counts
# such a run as a flake, not a failure, when no new reproducer was written
# to testdata/fuzz/<target>/; any run that writes one fails.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-20000x}"
passed=0
failed=0
flaked=0
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# corpus_size prints how many inputs a target's testdata corpus holds
# (0 when it has none).
corpus_size() {
	if [ -d "$1" ]; then
		find "$1" -type f | wc -l
	else
		echo 0
	fi
}
while IFS= read -r dir; do
	pkg="./${dir}"
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u); do
		echo "fuzz: ${pkg} ${target} (${fuzztime})"
		corpus="${dir}/testdata/fuzz/${target}"
		before="$(corpus_size "$corpus")"
		if go test -run='^$' -fuzz="^${target}\$" -fuzztime="${fuzztime}" "$pkg" 2>&1 | tee "$log"; then
			passed=$((passed + 1))
			continue
		fi
		after="$(corpus_size "$corpus")"
		if [ "$after" -eq "$before" ] && grep -q '^    context deadline exceeded$' "$log"; then
			echo "fuzz: ${target}: coordinator deadline race (go.dev/issue/75804), no failing input: flake"
			flaked=$((flaked + 1))
		else
			failed=$((failed + 1))
		fi
	done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -r -n1 dirname | sed 's|^\./||' | sort -u)
echo "fuzz: ${passed} passed, ${failed} failed, ${flaked} skipped"
[ "$failed" -eq 0 ]
