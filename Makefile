# TurboRetry-Go build, test and benchmark entry points.
# `make test` is what CI runs (through .ci/run); keep it well under 30 minutes.

GO        ?= go
PKGS      ?= ./...
# Budget per fuzz target: an execution count in `make test` (see scripts/fuzz.sh), a duration in `make fuzz`.
FUZZTIME  ?= 20000x
LONGFUZZ  ?= 60s
BENCHTIME ?= 1s
BENCHOUT  ?= bench.txt

.PHONY: serve demo firmware arm64 all build release test unit lint fmt vet staticcheck deadcode fuzz fuzz-short bench bench-serve bench-proxy clean eval interop-runner interop-fast interop-dropin dropin

all: build

build:
	$(GO) build $(PKGS)

## release: the binary an operator installs, out/turboretry: without the evaluation, the
## flood generator and the interop endpoint (-tags eval adds them), paths trimmed, the ELF
## symbol table and DWARF left out (-s -w: Go's own stack traces and pprof still name every
## function; perf and debuggers need the plain `go build` instead). docs/evaluation.md has
## the sizes.
release:
	@mkdir -p out
	$(GO) build -trimpath -ldflags "-s -w" -o out/turboretry ./cmd/turboretry

## test: lint, unit and integration tests (race detector on), short fuzz runs,
## the portable C of the fast-path cache (gcc host tests, RISC-V and BPF compile checks),
## the agent's portable packages on linux/arm64 under qemu-user, and the fast
## subset of the QUIC interop runner against quic-go.
test: lint unit firmware arm64 fuzz-short interop-fast

# The docker-free QUIC interop runner (its README is the endpoint contract).
IR ?= $(CURDIR)/../shared/interop-runner

## interop-runner: every interop runner case, ours x ours, ours x quic-go and
## quic-go x ours, and http3 with ngtcp2 both ways, printed as a matrix
## (docs/interop.md); skipped with a message without the runner, tshark or root.
interop-runner:
	IR=$(IR) ./scripts/interop-runner.sh full

## interop-dropin: quic-go v0.65.0's interop server and client built on our
## stack after the import swap, against quic-go both ways (docs/dropin.md).
interop-dropin:
	IR=$(IR) ./scripts/interop-runner.sh dropin

## interop-fast: handshake, transfer, retry, resumption, zerortt, http3,
## keyupdate, v2, ecn, multiplexing and rebind-port through the runner, our
## endpoint against quic-go's in both directions (part of `make test`).
interop-fast:
	IR=$(IR) ./scripts/interop-runner.sh fast

# The packages a BlueField-3's Arm cores run in the split mode that test
# without privileges: built for linux/arm64 and run under qemu-user.
ARM64PKGS ?= ./offload/agent/ ./offload/fastpath/ ./offload/announce/ ./token/ ./quiclb/ \
	./internal/handshake/ ./internal/tlskdf/ ./internal/wire/

## arm64: ARM64PKGS' tests on linux/arm64 under qemu-aarch64, and a vet of the
## split-mode agent for linux/arm64 (skipped with a message without qemu-user).
arm64:
	GOARCH=arm64 $(GO) vet ./offload/split/ ./offload/datapath/ ./offload/xdp/ ./offload/afxdp/ ./offload/reuseport/ ./app/doctor/ ./cmd/turboretry/
	@if command -v qemu-aarch64 >/dev/null; then \
		GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64 $(ARM64PKGS); \
	else echo "arm64: SKIP tests under emulation: qemu-aarch64 missing (apt-get install qemu-user)"; fi

firmware:
	$(MAKE) -C dpa-firmware test riscv-check bpf-check

# The evaluation, flood and interop subcommands (`turboretry eval|flood|interop`)
# and their tests build only with -tags eval, which keeps them and the plotting
# library out of the default binary; the tests run with the tag, plus the
# default build's own test that it answers them with how to build them.
#
# The abuse tests (integrationtests/abuse) measure benign clients' latency against an attack
# on CPUs they pin, so they run alone, after the others: `go test` runs packages side by side,
# and another package's load arriving between two rounds lands in the ratios (docs/abuse.md,
# "The pairs were not enough in CI"). ALONE is matched against `go list`'s import paths.
ALONE ?= github.com/turboretry/turboretry/integrationtests/abuse
unit:
	@all="$$($(GO) list -tags eval $(PKGS))" || exit 1; \
	rest="$$(echo "$$all" | grep -v -x -F '$(ALONE)' || true)"; \
	if [ -n "$$rest" ]; then \
		echo "$(GO) test -race -count=1 -tags eval $(PKGS), but $(ALONE)"; \
		$(GO) test -race -count=1 -tags eval $$rest || exit 1; fi; \
	if echo "$$all" | grep -q -x -F '$(ALONE)'; then \
		echo "$(GO) test -race -count=1 -tags eval $(ALONE)"; \
		$(GO) test -race -count=1 -tags eval $(ALONE) || exit 1; fi
	$(GO) test -count=1 -run '^TestEvalUnavailable' ./cmd/turboretry/

lint: fmt vet staticcheck deadcode

fmt:
	@out="$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags eval ./cmd/turboretry/

# deadcode (pinned in go.mod's tool block): no function under internal/ that
# neither the commands nor any test reaches.
deadcode:
	@out="$$($(GO) tool deadcode -test -tags eval $(PKGS) | grep '^internal/' || true)"; \
	if [ -n "$$out" ]; then echo "dead code under internal/:"; echo "$$out"; exit 1; fi

# staticcheck is pinned in go.mod's tool block.
staticcheck:
	$(GO) tool staticcheck $(PKGS)
	$(GO) tool staticcheck -tags eval ./cmd/turboretry/

## fuzz-short: every fuzz target for $(FUZZTIME) (part of `make test`).
fuzz-short:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

## fuzz: every fuzz target for $(LONGFUZZ).
fuzz:
	FUZZTIME=$(LONGFUZZ) ./scripts/fuzz.sh

## dropin: the quic-go compatibility suite in full (docs/dropin.md): quic-go's
## programs and every compiling integration test on our stack, one process per
## test; the report goes to out/dropin-report.txt. `make test` runs its CI form
## (the tests of internal/dropin/testdata/ci-tests.txt). DROPINFLAGS=-dropin.update
## rewrites the baseline.
DROPINFLAGS ?=
dropin:
	@mkdir -p out
	$(GO) test -count=1 -timeout 120m -run '^TestDropin$$' -v ./internal/dropin/ \
		-args -dropin.full -dropin.report=$(CURDIR)/out/dropin-report.txt $(DROPINFLAGS)

## bench: all benchmarks with allocation counts; output in $(BENCHOUT) for benchstat.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) -count=1 $(PKGS) | tee $(BENCHOUT)

## bench-serve: serving cost (docs/performance.md, "Serving cost"): `turboretry serve`
## (defaults, and --workers 1) against quic-go's http3.Server + net/http, 64 MiB and
## 100 KB files over HTTP/3 and HTTPS/TCP, server CPU and RSS from /proc; the set runs
## BENCHSERVE_COUNT times, a round of every server each time (go test's -count would repeat
## each server's runs back to back), then benchstat compares. Then the server memory an idle
## HTTP/3 connection holds (1000 connections), in rounds the same way.
BENCHSERVE_COUNT ?= 6
bench-serve:
	@mkdir -p out
	$(GO) test -c -o out/servebench.test ./integrationtests/servebench/
	@rm -f out/bench-serve.txt out/bench-idle.txt
	for i in $$(seq $(BENCHSERVE_COUNT)); do \
		(cd integrationtests/servebench && ../../out/servebench.test -test.run '^$$' -test.bench '^BenchmarkServe$$' \
			-test.benchtime 2s -test.timeout 30m) | tee -a out/bench-serve.txt || exit 1; \
	done
	$(GO) tool benchstat -col /server out/bench-serve.txt
	$(GO) tool benchstat -col /proto out/bench-serve.txt
	for i in 1 2 3; do \
		(cd integrationtests/servebench && ../../out/servebench.test -test.run '^$$' -test.bench '^BenchmarkIdleConnMemory$$' \
			-test.benchtime 1x -test.timeout 30m) | tee -a out/bench-idle.txt || exit 1; \
	done
	$(GO) tool benchstat -col /server out/bench-idle.txt

## bench-proxy: the reverse proxy's cost (docs/proxy.md, "Benchmark"): `turboretry serve
## --upstream` against Caddy's reverse_proxy (skipped without caddy: apt-get install caddy) and
## quic-go's http3.Server + httputil.ReverseProxy, one upstream, one HTTP/3 client: requests/s
## and proxy CPU per request (1 KB responses), proxy CPU per GB (64 MiB); the set runs
## BENCHPROXY_COUNT times, a round of all three each time (go test's -count would repeat each
## proxy's runs back to back), then benchstat compares.
BENCHPROXY_COUNT ?= 6
bench-proxy:
	@mkdir -p out
	$(GO) test -c -o out/servebench.test ./integrationtests/servebench/
	@rm -f out/bench-proxy.txt
	for i in $$(seq $(BENCHPROXY_COUNT)); do \
		(cd integrationtests/servebench && ../../out/servebench.test -test.run '^$$' -test.bench '^BenchmarkProxy$$' \
			-test.benchtime 2s -test.timeout 20m) | tee -a out/bench-proxy.txt || exit 1; \
	done
	$(GO) tool benchstat -col /proxy out/bench-proxy.txt

## eval: the paper's evaluation (docs/evaluation.md; root, Linux >= 5.18): figures 9-13 as CSV
## and plots in $(EVALOUT). EVALFLAGS=--quick for a run of a few minutes. The quic-go server of
## variant (a) is cmd/turboretry's test binary (quic-go is for tests only).
EVALOUT   ?= eval-out
EVALFLAGS ?=
eval:
	@mkdir -p $(EVALOUT)/bin
	$(GO) build -tags eval -o $(EVALOUT)/bin/turboretry ./cmd/turboretry
	$(GO) test -tags eval -c -o $(EVALOUT)/bin/turboretry-quicgo.test ./cmd/turboretry
	$(EVALOUT)/bin/turboretry eval --out $(EVALOUT) --quicgo-server $(EVALOUT)/bin/turboretry-quicgo.test $(EVALFLAGS)

clean:
	$(GO) clean -testcache
	$(MAKE) -C dpa-firmware clean
	rm -f $(BENCHOUT) turboretry
	rm -rf $(EVALOUT)

## serve: the main job, the file server on an embedded demo site (https://127.0.0.1:4433/).
serve:
	$(GO) run ./cmd/turboretry serve

## demo: the token tool that a server and its offload agent share: create a root
## secret, mint an agent Retry token for a client, and validate it as the host would.
demo:
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	$(GO) build -o "$$d/turboretry" ./cmd/turboretry; \
	"$$d/turboretry" keygen -o "$$d/root.key"; \
	echo "root secret written to a temporary file (mode 0600)"; \
	tok=$$("$$d/turboretry" token mint --secret "$$d/root.key" --type retry --source agent \
		--addr 192.0.2.10:54321 --odcid 8394c8f03e515708 --rscid f067a5502a4262b5); \
	echo "agent Retry token: $$tok"; \
	echo "host validates it for the same client:"; \
	"$$d/turboretry" token inspect --secret "$$d/root.key" --addr 192.0.2.10:54321 "$$tok"; \
	echo "and for a spoofed address (rejected, exit 1):"; \
	"$$d/turboretry" token inspect --secret "$$d/root.key" --addr 198.18.0.1:54321 "$$tok" || true
