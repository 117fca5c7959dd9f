# mk/harden.mk: hardening and reliability (issue 14): fault injection in
# the os layer, memory limits, hostile input, oversubscription, set-uid,
# the allocation-sequence fuzzer. Sanitizers are in mk/sanitize.mk.
#
#   check-harden   everything below that fits in make check
#   check-faults   fault-injection build (build/libxalloc-fault.so) + driver
#   check-limits   ulimit -v and a memory cgroup
#   check-hostile  wrong-input matrix (tests/harden/hostile.tsv)
#   check-oversub  64 threads on 2 cores, 10^8 verified operations
#   check-setuid   set-uid helper: environment ignored, no swappable file
#   check-fuzz-alloc  bounded libFuzzer run of allocation sequences
#   fuzz-alloc     longer run (FUZZ_ALLOC_TIME s); `make fuzz` runs it too
#   soak           10^9 operations and redis under load with an RSS chart

HX_DIR := $(BUILD)/tests/harden
HX_CFLAGS := -std=gnu11 -O2 -g $(WARN) -fno-builtin -pthread -Iinclude -Itests/harden
HX_HDRS := tests/harden/hx.h

# ---- the fault-injection build: the library plus XA_FAULT_POINTs ----
FAULT_OBJS := $(patsubst src/%.c,$(BUILD)/obj-fault/%.o,$(LIB_SRCS))
FAULT_LIB := $(BUILD)/libxalloc-fault.so

$(BUILD)/obj-fault/%.o: src/%.c $(wildcard src/*.h src/*.def include/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC FLT  $<")
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) $(LIB_FORCE_CFLAGS) -DXA_FAULT=1 -c $< -o $@

$(FAULT_LIB): $(FAULT_OBJS) src/libxalloc.map
	$(CC) -shared -Wl,-soname,libxalloc-fault.so -Wl,--version-script=src/libxalloc.map \
	  -Wl,--no-undefined -Wl,-z,now $(LDFLAGS) -o $@ $(FAULT_OBJS) $(LIB_LDLIBS)

$(HX_DIR)/fault_driver: tests/harden/fault_driver.c $(HX_HDRS) $(FAULT_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(HX_CFLAGS) $< -o $@ $(FAULT_LIB) -Wl,-rpath,$(abspath $(BUILD))

.PHONY: check-harden check-faults
## check-faults: every mmap/mremap/madvise/mbind/file/thread call failing in turn (fault build)
check-faults: $(HX_DIR)/fault_driver $(LIB)
	@if nm -D $(LIB) | grep -q xalloc_fault; then echo "fault hooks in $(LIB)" >&2; exit 1; fi
	timeout 600 tests/harden/faults.sh $(abspath $(HX_DIR)/fault_driver)

CHECK_TARGETS += check-harden
.PHONY: check-harden
## check-harden: faults, fuzzing, hostile input, oversubscription, limits, set-uid (~6 min)
check-harden: check-faults

# ---- allocation-sequence fuzzer (libFuzzer, the internal test build) ----
FUZZ_ALLOC_BIN := $(BUILD)/fuzz/fuzz_alloc
FUZZ_ALLOC_TIME ?= 300
CHECK_FUZZ_ALLOC_TIME ?= 30
FUZZ_ALLOC_CFLAGS := -std=gnu11 -O1 -g $(WARN) -Iinclude -Isrc -Itests/harden -DXA_TEST \
        -DXA_DEBUG=1 -pthread -ftls-model=initial-exec -fno-builtin-malloc -fno-builtin-free \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_ALLOC_ARGS := -max_len=4096 -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
        -artifact_prefix=$(BUILD)/fuzz/alloc-
FUZZ_ALLOC_SEEDS := tests/fuzz/corpus-alloc

$(FUZZ_ALLOC_BIN): tests/fuzz/fuzz_alloc.c $(LIB_SRCS) $(wildcard src/*.h) src/options.def $(HX_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_ALLOC_CFLAGS) tests/fuzz/fuzz_alloc.c $(LIB_SRCS) -o $@

# $(call run_fuzz_alloc,SECONDS): new inputs go to the build tree; the
# committed seeds stay as they are (make fuzz-alloc-merge updates them).
define run_fuzz_alloc
	@mkdir -p $(BUILD)/fuzz/corpus-alloc
	$(FUZZ_ALLOC_BIN) $(FUZZ_ALLOC_ARGS) -max_total_time=$(1) $(BUILD)/fuzz/corpus-alloc \
	  $(FUZZ_ALLOC_SEEDS) > $(BUILD)/fuzz/alloc.log 2>&1 || { tail -n 40 $(BUILD)/fuzz/alloc.log; \
	  echo "fuzz-alloc: FAILED (log: $(BUILD)/fuzz/alloc.log)"; exit 1; }
	@grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|cov:' $(BUILD)/fuzz/alloc.log | tail -n 4
endef

.PHONY: fuzz-alloc check-fuzz-alloc fuzz-alloc-merge
## fuzz-alloc: fuzz allocation sequences for FUZZ_ALLOC_TIME seconds (default 300)
fuzz-alloc: $(FUZZ_ALLOC_BIN)
	$(call run_fuzz_alloc,$(FUZZ_ALLOC_TIME))
fuzz: fuzz-alloc

## check-fuzz-alloc: bounded fuzz run of allocation sequences (CHECK_FUZZ_ALLOC_TIME, 30 s)
check-fuzz-alloc:
	@if ! printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' | \
	    $(FUZZ_CC) -fsanitize=fuzzer,address,undefined -x c - -o /dev/null >/dev/null 2>&1; then \
	  echo "## check-fuzz-alloc: SKIPPED: '$(FUZZ_CC) -fsanitize=fuzzer' does not work"; \
	  echo "## (install clang and libclang-rt-14-dev)"; \
	else $(MAKE) --no-print-directory fuzz-alloc FUZZ_ALLOC_TIME=$(CHECK_FUZZ_ALLOC_TIME); fi

## fuzz-alloc-merge: fold the build tree's new inputs into tests/fuzz/corpus-alloc
fuzz-alloc-merge: $(FUZZ_ALLOC_BIN)
	$(FUZZ_ALLOC_BIN) -merge=1 $(FUZZ_ALLOC_SEEDS) $(BUILD)/fuzz/corpus-alloc

check-harden: check-fuzz-alloc

# ---- hostile and wrong input ----
$(HX_DIR)/hostile: tests/harden/hostile.c
	@mkdir -p $(dir $@)
	$(CC) $(HX_CFLAGS) -O1 $< -o $@ -ldl

.PHONY: check-hostile
## check-hostile: the wrong-input matrix (tests/harden/hostile.tsv) under LD_PRELOAD
check-hostile: $(HX_DIR)/hostile $(LIB)
	tests/harden/hostile.sh $(abspath $(LIB)) $(abspath $(HX_DIR)/hostile) tests/harden/hostile.tsv

check-harden: check-hostile

# ---- oversubscription and churn ----
OVERSUB_OPS ?= 100000000
SOAK_OVERSUB_OPS ?= 1000000000
OVERSUB_CONF := background_thread:true,stats_interval_ms:10

$(HX_DIR)/oversub: tests/harden/oversub.c $(HX_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(HX_CFLAGS) $< -o $@

.PHONY: check-oversub
## check-oversub: 64 threads on the machine's cores, OVERSUB_OPS (10^8) verified operations
check-oversub: $(HX_DIR)/oversub $(LIB)
	XALLOC_CONF=$(OVERSUB_CONF) LD_PRELOAD=$(abspath $(LIB)) timeout 900 $< $(OVERSUB_OPS) 64

check-harden: check-oversub

# ---- memory limits ----
$(HX_DIR)/limitprobe: tests/harden/limitprobe.c $(HX_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(HX_CFLAGS) $< -o $@

.PHONY: check-limits
## check-limits: ulimit -v and a memory cgroup (skipped with a reason where it cannot be made)
check-limits: $(HX_DIR)/limitprobe $(LIB)
	tests/harden/limits.sh $(abspath $(LIB)) $(abspath $(HX_DIR)/limitprobe)

check-harden: check-limits

# ---- set-uid ----
# Linked with an absolute rpath: a set-uid program ignores LD_PRELOAD paths
# and LD_LIBRARY_PATH, but not an absolute RPATH.
$(HX_DIR)/suidprobe: tests/harden/suidprobe.c $(LIB) $(BUILD)/libxalloc.so
	@mkdir -p $(dir $@)
	$(CC) $(HX_CFLAGS) $< -o $@ -L$(BUILD) -lxalloc -Wl,--disable-new-dtags \
	  -Wl,-rpath,$(abspath $(BUILD))

.PHONY: check-setuid
## check-setuid: set-uid helper run by nobody: XALLOC_CONF and stats_dir ignored (root; skipped otherwise)
check-setuid: $(HX_DIR)/suidprobe $(STAT_TOOL)
	tests/harden/setuid.sh $(abspath $(LIB)) $(abspath $(HX_DIR)/suidprobe) $(abspath $(STAT_TOOL))

check-harden: check-setuid

# ---- soak (not in make check) ----
SOAK_SECONDS ?= 600
SOAK_DIR := $(BUILD)/soak

.PHONY: soak soak-redis soak-oversub soak-faults
## soak: 10^9 verified operations, redis under load with an RSS chart, 4x fault sweep (~45 min)
soak: soak-oversub soak-redis soak-faults

## soak-oversub: the oversubscription stress with SOAK_OVERSUB_OPS (10^9) operations
soak-oversub: $(HX_DIR)/oversub $(LIB)
	XALLOC_CONF=$(OVERSUB_CONF) LD_PRELOAD=$(abspath $(LIB)) timeout 7200 $< $(SOAK_OVERSUB_OPS) 64

## soak-redis: redis-server under xalloc for SOAK_SECONDS, RSS curve in build/soak/redis-rss.png
soak-redis: $(LIB)
	tests/harden/soak-redis.sh $(abspath $(LIB)) $(SOAK_DIR) $(SOAK_SECONDS)

## soak-faults: the fault sweep over four times as many call numbers
soak-faults: $(HX_DIR)/fault_driver
	HX_FAULT_SCALE=4 tests/harden/faults.sh $(abspath $(HX_DIR)/fault_driver)
