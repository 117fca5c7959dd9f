# mk/tests.mk: tests of the real library (build/libxalloc.so.1): API
# conformance (tests/api), multi-thread stress with content verification
# (tests/stress), danger-list probes (tests/integration/probe_*.c, run.sh)
# and real programs under LD_PRELOAD (tests/integration/programs.sh).
# Test programs link normally and run with LD_PRELOAD; check_api_linked is
# also linked with -lxalloc to prove that linking works. check-api-glibc runs
# the same API, stress and danger tests on glibc, to prove the tests right.
# Needs: check (pkg-config), bash, coreutils timeout; check-programs also
# python3, perl, sqlite3, gcc, binutils, git, redis-server, redis-tools.

XT_DIR := $(BUILD)/tests
XT_CFLAGS = -std=gnu11 -O2 -g $(WARN) -fno-builtin -pthread \
        -Iinclude -Itests $(CHECK_CFLAGS)
XT_HDRS := $(wildcard tests/common/*.h) include/xalloc.h
XT_PRELOAD = LD_PRELOAD=$(abspath $(LIB)) XT_ALLOCATOR=xalloc
# Check runs each test in a forked child; these cap a hung test.
XT_CK_ENV := CK_DEFAULT_TIMEOUT=300 CK_TIMEOUT_MULTIPLIER=1

XT_PROBES := $(patsubst tests/integration/%.c,$(XT_DIR)/integration/%,\
        $(wildcard tests/integration/probe_*.c))
XT_API_BINS := $(XT_DIR)/api/check_api $(XT_DIR)/api/check_api_linked
XT_STRESS_BIN := $(XT_DIR)/stress/check_stress
XT_DLOPEN_LIB := $(XT_DIR)/integration/libxt_dlopen.so

# Programs run with LD_PRELOAD do not link the library, so they build (and
# check-api-glibc runs) without it; the check-* targets depend on $(LIB).
$(XT_DIR)/api/check_api: tests/api/check_api.c $(XT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(XT_CFLAGS) $< -o $@ $(CHECK_LIBS) -ldl

# Linked against the library: xalloc_version() and xalloc_purge() are
# called directly, and the rpath makes it run without LD_PRELOAD.
$(XT_DIR)/api/check_api_linked: tests/api/check_api.c $(XT_HDRS) $(LIB) $(BUILD)/libxalloc.so
	@mkdir -p $(dir $@)
	$(CC) $(XT_CFLAGS) -DXT_LINKED $< -o $@ -L$(BUILD) -lxalloc \
	  -Wl,-rpath,$(abspath $(BUILD)) $(CHECK_LIBS) -ldl

$(XT_STRESS_BIN): tests/stress/check_stress.c $(XT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(XT_CFLAGS) $< -o $@ $(CHECK_LIBS) -ldl

$(XT_DIR)/integration/probe_%: tests/integration/probe_%.c $(XT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(XT_CFLAGS) $< -o $@ -ldl

$(XT_DLOPEN_LIB): tests/integration/dlopen_lib.c
	@mkdir -p $(dir $@)
	$(CC) $(XT_CFLAGS) -fPIC -shared $< -o $@

.PHONY: check-api check-stress check-danger check-programs check-api-glibc tests-build

## tests-build: build the API, stress and danger-list test programs
tests-build: $(XT_API_BINS) $(XT_STRESS_BIN) $(XT_PROBES) $(XT_DLOPEN_LIB)

## check-api: API conformance of the malloc family, preloaded and linked (Check)
check-api: $(XT_API_BINS) $(LIB)
	$(XT_CK_ENV) $(XT_PRELOAD) $(XT_DIR)/api/check_api
	$(XT_CK_ENV) XT_ALLOCATOR=xalloc $(XT_DIR)/api/check_api_linked

## check-stress: 4/8-thread stress with content checks, ~40 s (XT_STRESS_SECONDS per test)
check-stress: $(XT_STRESS_BIN) $(LIB)
	$(XT_CK_ENV) $(XT_PRELOAD) $(XT_STRESS_BIN)

## check-danger: danger-list probes under LD_PRELOAD: ctor/atexit, threads, fork, dlopen, bad frees (TAP)
check-danger: $(XT_PROBES) $(XT_DLOPEN_LIB) $(LIB)
	bash tests/integration/run.sh xalloc $(XT_DIR)/integration $(LIB)

## check-programs: python3, perl, sqlite3, gcc, git, redis under LD_PRELOAD, output compared (TAP)
check-programs: $(LIB)
	bash tests/integration/programs.sh $(LIB) $(XT_DIR)/programs

## check-api-glibc: the API, stress and danger tests on glibc (no preload), to prove the tests
check-api-glibc: $(XT_DIR)/api/check_api $(XT_STRESS_BIN) $(XT_PROBES) $(XT_DLOPEN_LIB)
	$(XT_CK_ENV) env -u LD_PRELOAD XT_ALLOCATOR=glibc $(XT_DIR)/api/check_api
	$(XT_CK_ENV) env -u LD_PRELOAD XT_ALLOCATOR=glibc $(XT_STRESS_BIN)
	bash tests/integration/run.sh glibc $(XT_DIR)/integration

CHECK_TARGETS += check-api check-stress check-danger check-programs
