# User-facing targets; the build itself is CMake's.
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 20
MODEL ?= models/web-bible-llama-19m

.PHONY: all deps deps-mpi demo test test-fast test-asan fuzz bench bench-peer clean install

all: $(BUILD)/pdq

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

$(BUILD)/pdq: $(BUILD)/Makefile FORCE
	cmake --build $(BUILD) -j $(JOBS)

FORCE:

deps:
	bash scripts/install-deps.sh

# Opt-in: Open MPI, so that `make all` also builds pdq-mpi (reconfigures the build dir).
deps-mpi:
	bash scripts/install-mpi.sh
	cmake -S . -B $(BUILD) >/dev/null

demo: deps all
	bash scripts/demo.sh $(BUILD)/pdq $(MODEL)

# Release build tests, then the same tests under ASan+UBSan, then a short fuzz run.
test: deps all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) test-asan
	$(MAKE) fuzz

test-fast: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPDQ_SANITIZE=ON -DCMAKE_C_FLAGS_DEBUG="-O1 -g" >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && PDQ_ASAN=1 ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

fuzz:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPDQ_FUZZ=ON -DPDQ_SANITIZE=ON -DCMAKE_C_FLAGS_DEBUG="-O1 -g" >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	bash scripts/run-fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The JSON document alone goes to stdout, section by section as measured, and to build/bench.json
# once complete (an interrupted run leaves the old file); building and progress go to stderr.
# GPTQ_WHOLE=1 adds the 40-minute whole-model GPTQ of the 1.1B shape.
GPTQ_WHOLE ?= 0
bench:
	@bash scripts/install-deps.sh >&2
	@$(MAKE) --no-print-directory all >&2
	@PDQ_BENCH_GPTQ_WHOLE=$(GPTQ_WHOLE) bash scripts/bench.sh $(BUILD) $(BUILD)/bench.json

# pdq against llama.cpp b4747 on the same random weights, one JSON object per shape in a list
# (docs/peer-bench.md); each shape says why when llama.cpp, its converter or the family is absent.
PEER_SHAPES ?= tinyllama qwen2.5-0.5b gemma3-1b
bench-peer:
	@$(MAKE) --no-print-directory all >&2
	@sep='['; for s in $(PEER_SHAPES); do printf '%s\n' "$$sep"; \
	  SHAPE=$$s bash scripts/bench-packed.sh $(BUILD) || exit 1; sep=','; done; echo ']'

# The pdq binary, libpdq.so, the public headers and pdq.pc (DESTDIR is honoured by cmake --install).
PREFIX ?= /usr/local
install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
