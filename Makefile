# The two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
TESTENV := hack/testenv.sh

.PHONY: build test unit testenv testenv-stop demo vet bench bench-scale lint-workflows image diagrams settings

build:
	$(GO) build ./...

# go vet with a line at least every 30 s (packages compiled and vetted of
# the total; see hack/gosteps.sh).
vet:
	bash hack/gosteps.sh vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

# docs/settings.md and the inputs of action.yml, written from the settings'
# declarations (settings/table.go); settings.TestGenerated fails until they
# are.
settings:
	$(GO) run ./hack/settingsgen

# actionlint (pinned, built once into the cache) over every workflow file:
# .github/workflows and the examples in .github/workflow-examples.
lint-workflows:
	bash hack/lint-workflows.sh

# Unit tests only; integration tests skip without the environment.
unit:
	$(GO) test -race ./...

# Builds (once, cached) and starts the real test environment, then runs every
# test; integration tests fail rather than skip if the environment is missing.
# hack/testsummary shows failures and package lines as they come and ends
# with `N passed, N failed, N skipped`; it fails the run on any failure and,
# here, on any skipped test. (Built, not `go run`, which would add its own
# "exit status 1" after the count line.) Every long step prints a line at
# least every 30 s: the fuzz targets' builds and the tests' compile count
# packages of the total (hack/gosteps.sh), and testsummary says what still
# runs.
test: vet lint-workflows
	bash hack/gosteps.sh fuzz FuzzReceive ./webhook/ 15s
	bash hack/gosteps.sh fuzz FuzzUntar ./githubapi/ 15s
	bash hack/gosteps.sh fuzz FuzzReleaseStoreReader ./backend/ 15s
	bash hack/gosteps.sh fuzz FuzzParse ./chatops/ 15s
	bash $(TESTENV) start
	bash hack/image.sh build
	$(GO) build -o bin/testsummary ./hack/testsummary
	bash hack/gosteps.sh compile-tests -race
	eval "$$(bash $(TESTENV) env)" && eval "$$(bash hack/image.sh env)" && export KUSIONPR_REQUIRE_TESTENV=1 && set -o pipefail && \
	  $(GO) test -json -race -timeout 30m ./... | bin/testsummary

testenv:
	bash $(TESTENV) start

# The action's image from the Dockerfile, offline (see "The image under
# test" in docs/contributing.md); needs the test environment's OpenTofu
# (make testenv).
image:
	bash hack/image.sh build

testenv-stop:
	bash $(TESTENV) stop

# Starts the local cluster, previews then applies examples/quickstart, prints
# the comment a pull request would get and where the release was saved.
demo:
	bash hack/demo.sh

# Every benchmark scenario against the real test environment, each with its
# reference measured in the same run; prints the table and writes
# $(BENCH_OUT). BENCHTIME=1x for a quick look.
BENCHTIME ?= 3x
BENCH_OUT ?= .bench/results.json
bench:
	bash $(TESTENV) start
	mkdir -p $(dir $(BENCH_OUT))
	eval "$$(bash $(TESTENV) env)" && set -o pipefail && \
	  $(GO) test -run '^$$' -bench . -skip '^BenchmarkScale' -benchtime=$(BENCHTIME) -timeout 90m ./bench/ | $(GO) run ./hack/benchtable -json $(BENCH_OUT)

# A stack of 1,000, 5,000 and 10,000 objects through its life, ours
# against kubectl (which takes minutes at 10,000); prints its table and
# writes $(BENCH_SCALE_OUT).
BENCH_SCALE_OUT ?= .bench/scale.json
bench-scale:
	bash $(TESTENV) start
	mkdir -p $(dir $(BENCH_SCALE_OUT))
	eval "$$(bash $(TESTENV) env)" && set -o pipefail && \
	  $(GO) test -run '^$$' -bench '^BenchmarkScaleKubernetes$$' -benchtime=$(BENCHTIME) -timeout 120m ./bench/ | $(GO) run ./hack/benchtable -rows scale -json $(BENCH_SCALE_OUT)

# The docs' diagrams: each docs/NAME.dot drawn by Graphviz into
# docs/NAME.svg, which records the sha256 of the source it was drawn from
# so that go test ./docs/ finds a picture older than its source without
# needing Graphviz (apt-get install -y graphviz). Written beside and
# renamed, so a failed draw leaves the old picture.
diagrams:
	@command -v dot >/dev/null || { echo "make diagrams needs Graphviz's dot: apt-get install -y graphviz" >&2; exit 1; }
	@set -eo pipefail; for src in docs/*.dot; do \
	  svg=$${src%.dot}.svg; sum=$$(sha256sum "$$src" | cut -d' ' -f1); \
	  dot -Tsvg "$$src" | sed "1a <!-- drawn by make diagrams from $$(basename "$$src"), source sha256 $$sum -->" >"$$svg.tmp"; \
	  mv "$$svg.tmp" "$$svg"; echo "$$svg from $$src"; \
	done
