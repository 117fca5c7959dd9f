# mk/bench.mk: the benchmark suite (tools/bench). Workloads are small C
# programs in tools/bench/src; tools/bench/run.py runs each of them under
# glibc, xalloc and every other installed allocator (LD_PRELOAD), takes
# medians and writes the markdown table, CSV/JSON and gnuplot charts.
#
#   make bench        results in tools/bench/results/ (<= 15 min, 2 cores)
#   make bench-quick  smoke run into tools/bench/out/quick/ (<= 3 min)
#   make bench-full   bigger counts, 7 repetitions, into tools/bench/out/full/
#   make check-bench  every workload once with tiny counts (part of make check)
#   make bench-services  RSS of real services (ovsdb-server, searchd) and the
#                     service model per allocator and system THP mode (root)
#
# BENCH_ARGS passes extra options to run.py, e.g.
#   make bench-quick BENCH_ARGS='--only malloc-test --allocators glibc,xalloc'

BENCH_DIR := tools/bench
BENCH_BUILD := $(BUILD)/bench
BENCH_PROGS := $(filter-out bench,$(basename $(notdir $(wildcard $(BENCH_DIR)/src/*.c))))
BENCH_BINS := $(addprefix $(BENCH_BUILD)/,$(BENCH_PROGS))
# The workloads must call the allocator for real: without these, the
# compiler may delete a malloc/free pair whose block is never used.
BENCH_CFLAGS := -std=gnu11 -O2 -g $(WARN) -pthread -fno-builtin-malloc \
        -fno-builtin-free -fno-builtin-calloc -fno-builtin-realloc
BENCH_LDLIBS := -lm -ldl -lpthread
BENCH_ARGS ?=
PYTHON ?= python3

$(BENCH_BUILD)/%: $(BENCH_DIR)/src/%.c $(BENCH_DIR)/src/bench.c $(BENCH_DIR)/src/bench.h
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $(CFLAGS) -o $@ $< $(BENCH_DIR)/src/bench.c $(LDFLAGS) $(BENCH_LDLIBS)

.PHONY: bench-build bench-deps bench-run bench-quick bench-full

## bench-build: build the benchmark workloads into build/bench/
bench-build: $(BENCH_BINS)

## bench-deps: install what the benchmarks need (apt-get, as root) or say how
bench-deps:
	@$(BENCH_DIR)/deps.sh

bench-run: lib bench-build bench-deps
	$(PYTHON) $(BENCH_DIR)/run.py --profile default --bin $(BENCH_BUILD) \
	  --xalloc $(LIB) --out $(BENCH_DIR)/results --readme $(BENCH_DIR)/README.md $(BENCH_ARGS)

## bench-quick: short smoke run of every workload (< 3 min), into tools/bench/out/quick
bench-quick: lib bench-build bench-deps
	$(PYTHON) $(BENCH_DIR)/run.py --profile quick --bin $(BENCH_BUILD) \
	  --xalloc $(LIB) --out $(BENCH_DIR)/out/quick $(BENCH_ARGS)

## bench-full: larger counts and 7 repetitions, into tools/bench/out/full
bench-full: lib bench-build bench-deps
	$(PYTHON) $(BENCH_DIR)/run.py --profile full --bin $(BENCH_BUILD) \
	  --xalloc $(LIB) --out $(BENCH_DIR)/out/full $(BENCH_ARGS)

BENCH_TARGETS += bench-run

.PHONY: bench-services
## bench-services: RSS of ovsdb-server, searchd and the service model, 5 allocators x 3 THP modes (root, ~15 min)
bench-services: lib bench-build
	$(PYTHON) $(BENCH_DIR)/services.py --xalloc $(abspath $(LIB)) \
	  --memphase $(abspath $(BENCH_BUILD)/memphase) --out $(BENCH_DIR)/results/services $(BENCH_ARGS)

.PHONY: check-bench
## check-bench: smoke run: every workload once, tiny counts, each allocator (fails on any failed run)
check-bench: lib bench-build
	$(PYTHON) $(BENCH_DIR)/run.py --profile smoke --strict --bin $(BENCH_BUILD) \
	  --xalloc $(LIB) --out $(BUILD)/bench-smoke

CHECK_TARGETS += check-bench
