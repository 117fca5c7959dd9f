# mk/prof.mk: the profiling build (issue 13): libxalloc-prof.so.1, the same
# sources as libxalloc.so.1 plus src/prof*.c, compiled with -DXA_PROF=1 and
# linked with libunwind; its tests (tests/prof/) and its benchmark.
# Needs: libunwind-dev (build); google-perftools (google-pprof) and
# libjemalloc-dev (jeprof) for the reader tests; libjemalloc2 for the bench.

PROF_SONAME := libxalloc-prof.so.1
PROF_LIB := $(BUILD)/$(PROF_SONAME)
PROF_SRCS := $(LIB_SRCS) $(wildcard src/prof*.c)
PROF_OBJS := $(patsubst src/%.c,$(BUILD)/obj-prof/%.o,$(PROF_SRCS))
PROF_LDLIBS := -lunwind -lpthread

$(BUILD)/obj-prof/%.o: src/%.c $(wildcard src/*.h src/*.def include/*.h) | $(BUILD)/obj-prof
	@$(if $(Q),echo "  CC PROF $<")
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) $(LIB_FORCE_CFLAGS) -DXA_PROF=1 -c $< -o $@

$(BUILD)/obj-prof:
	mkdir -p $@

$(PROF_LIB): $(PROF_OBJS) src/libxalloc.map
	$(CC) -shared -Wl,-soname,$(PROF_SONAME) -Wl,--version-script=src/libxalloc.map \
	  -Wl,--no-undefined -Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack $(LDFLAGS) \
	  -o $@ $(PROF_OBJS) $(PROF_LDLIBS)

$(BUILD)/libxalloc-prof.so: $(PROF_LIB)
	ln -sf $(PROF_SONAME) $@

.PHONY: prof install-prof uninstall-prof
## prof: build the profiling library build/libxalloc-prof.so.1 (needs libunwind-dev)
prof: $(PROF_LIB) $(BUILD)/libxalloc-prof.so

## install-prof: install libxalloc-prof.so.1 into LIBDIR (after make prof)
install-prof: prof
	$(INSTALL) -d $(DESTDIR)$(LIBDIR)
	$(INSTALL) -m 0644 $(PROF_LIB) $(DESTDIR)$(LIBDIR)/$(PROF_SONAME)

uninstall-prof:
	rm -f $(DESTDIR)$(LIBDIR)/$(PROF_SONAME)

# ---- tests ----
# check-prof: the profiler's own tests (tests/prof/run.sh, TAP): readers
#   (google-pprof and jeprof on a two-site profile, estimates within 15%),
#   deadlock (prof_sample:1 with dlopen/dlclose and fork), dump on request
#   (also of a process of another user), leak report, every allocating
#   entry point, prof_active at run time, sampled blocks through every
#   entry point (prof_sample:1, junk too, double frees reported), the
#   resident footprint of a small profiled program, the two stack walks
#   (light threads keep no trace cache; both walks agree), the stack cache
#   (callers that share a key, threads, signal handlers: every sample
#   charged to its own stack), the threads' tallies (many threads, frees
#   by another thread, fork, dumps requested meanwhile: exact at exit);
#   and the Check suites of the sampler's
#   arithmetic (check_prof_math) and of the stack cache
#   (check_prof_stack_cache). About 30 s.
# check-prof-compat: with prof:false the profiling library passes the API
#   conformance suite, the danger-list probes and the real programs; with
#   prof:true (a small sample distance) the API suite and the probes, and
#   the API suite again with every allocation sampled (prof_sample:1). It
#   runs a byte-for-byte copy of libxalloc-prof.so.1 named libxalloc.so.1,
#   because those tests recognise the library by that file name.

PROF_T := $(BUILD)/tests/prof
PROF_T_CFLAGS = -std=gnu11 -O2 -g $(WARN) -fno-omit-frame-pointer -pthread -rdynamic
PROF_T_BINS := $(PROF_T)/two_sites $(PROF_T)/deadlock $(PROF_T)/holder $(PROF_T)/leaky \
        $(PROF_T)/active $(PROF_T)/grow $(PROF_T)/dump_request $(PROF_T)/dl_obj.so \
        $(PROF_T)/footprint $(PROF_T)/sampled $(PROF_T)/walks $(PROF_T)/stack_cache \
        $(PROF_T)/tally
PROF_ALIAS := $(BUILD)/prof-alias/libxalloc.so.1

$(PROF_T)/%: tests/prof/%.c tests/prof/proc_kb.h
	@mkdir -p $(dir $@)
	$(CC) $(PROF_T_CFLAGS) $< -o $@ -ldl

$(PROF_T)/dl_obj.so: tests/prof/dl_obj.c
	@mkdir -p $(dir $@)
	$(CC) $(PROF_T_CFLAGS) -fPIC -shared $< -o $@

$(PROF_T)/dump_request: tests/prof/dump_request.c tools/xalloc-stat/statfile.c src/stats_report.c \
        $(STAT_TOOL_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(STATS_TEST_CFLAGS) -o $@ tests/prof/dump_request.c tools/xalloc-stat/statfile.c \
	  src/stats_report.c

# The sampler's libm-free arithmetic against libm (a Check suite).
$(PROF_T)/check_prof_math: tests/prof/check_prof_math.c src/prof_math.h tests/unit/unit_main.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(WARN) -Isrc -Itests $(CHECK_CFLAGS) $< -o $@ $(CHECK_LIBS) -lm

# The stack cache's fill, lookup and policy over made-up stacks (a Check suite).
$(PROF_T)/check_prof_stack_cache: tests/prof/check_prof_stack_cache.c src/prof_stack_cache.h \
        tests/unit/unit_main.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(WARN) -Isrc -Itests $(CHECK_CFLAGS) $< -o $@ $(CHECK_LIBS)

$(PROF_ALIAS): $(PROF_LIB)
	@mkdir -p $(dir $@)
	cp -f $< $@

.PHONY: check-prof check-prof-compat
## check-prof: profiler tests: pprof/jeprof readers, deadlock, dump on request, leak report
check-prof: $(PROF_LIB) $(PROF_T_BINS) $(PROF_T)/check_prof_math $(PROF_T)/check_prof_stack_cache \
        $(STAT_TOOL)
	$(XT_CK_ENV) $(PROF_T)/check_prof_math
	$(XT_CK_ENV) $(PROF_T)/check_prof_stack_cache
	bash tests/prof/run.sh $(PROF_LIB) $(PROF_T) $(STAT_TOOL)

## check-prof-compat: libxalloc-prof.so.1 with prof:false passes the API, danger and program tests
# (tests-build, from mk/tests.mk, which is read after this file.)
check-prof-compat: $(PROF_ALIAS) tests-build
	$(XT_CK_ENV) LD_PRELOAD=$(abspath $(PROF_ALIAS)) XT_ALLOCATOR=xalloc XALLOC_CONF=prof:false \
	  $(XT_DIR)/api/check_api
	XALLOC_CONF=prof:false bash tests/integration/run.sh xalloc $(XT_DIR)/integration $(PROF_ALIAS)
	XALLOC_CONF=prof:false bash tests/integration/programs.sh $(PROF_ALIAS) $(PROF_T)/programs
	@# And with sampling on (prof_sample:1k: thousands of samples per run).
	rm -rf $(PROF_T)/compat-dumps && mkdir -p $(PROF_T)/compat-dumps
	$(XT_CK_ENV) LD_PRELOAD=$(abspath $(PROF_ALIAS)) XT_ALLOCATOR=xalloc \
	  XALLOC_CONF=prof:true,prof_sample:1k,prof_dir:$(abspath $(PROF_T)/compat-dumps) \
	  $(XT_DIR)/api/check_api
	XALLOC_CONF=prof:true,prof_sample:64k,prof_dir:$(abspath $(PROF_T)/compat-dumps) \
	  bash tests/integration/run.sh xalloc $(XT_DIR)/integration $(PROF_ALIAS)
	@# Every allocation sampled: sampled blocks through the whole API suite (~10 s).
	$(XT_CK_ENV) LD_PRELOAD=$(abspath $(PROF_ALIAS)) XT_ALLOCATOR=xalloc \
	  XALLOC_CONF=prof:true,prof_sample:1,prof_dir:$(abspath $(PROF_T)/compat-dumps) \
	  $(XT_DIR)/api/check_api

CHECK_TARGETS += check-prof check-prof-compat

# ---- benchmark ----
# bench-prof: tools/prof-bench/run.py: 13 workloads of tools/bench under
#   libxalloc.so.1, libxalloc-prof.so.1 with prof:false and prof:true, and
#   jemalloc with and without MALLOC_CONF=prof:true; median of 7, about
#   6 minutes on 2 cores. Then the cost of one unwind and of one dump of a
#   10,000-stack profile (tests/prof/prof_cost.c). Results in
#   $(BUILD)/prof-bench.md.

$(PROF_T)/prof_cost: tests/prof/prof_cost.c tools/xalloc-stat/statfile.c src/stats_report.c \
        $(STAT_TOOL_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(STATS_TEST_CFLAGS) -O2 -fno-omit-frame-pointer -rdynamic -o $@ tests/prof/prof_cost.c \
	  tools/xalloc-stat/statfile.c src/stats_report.c -lunwind -ldl

.PHONY: bench-prof
## bench-prof: profiling overhead vs libxalloc.so.1 and jemalloc prof:true; unwind and dump costs
bench-prof: lib prof bench-build $(PROF_T)/prof_cost
	$(PYTHON) tools/prof-bench/run.py --build $(BUILD) --out $(BUILD)/prof-bench.md $(PROF_BENCH_ARGS)

BENCH_TARGETS += bench-prof
