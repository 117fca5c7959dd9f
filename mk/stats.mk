# mk/stats.mk: live statistics (issue 6): the xalloc-stat tool, its man
# page, and the statistics tests (tests/stats/).
#
# xalloc-stat compiles src/stats_report.c (the library's report emitter)
# and nothing else of src/: it reads other processes' statistics files
# through the ABI headers only.
# CI packages: check (libcheck), jq, redis-server, redis-tools, util-linux,
# prometheus (promtool).
# lifetime.sh runs in a mount namespace of its own when root (unshare -m).

STAT_TOOL_SRCS := tools/xalloc-stat/main.c tools/xalloc-stat/statfile.c src/stats_report.c
STAT_TOOL_HDRS := tools/xalloc-stat/statfile.h src/stats_report.h include/xalloc_stats.h \
        include/xalloc_stats_file.h include/xalloc.h
STAT_CFLAGS := -std=gnu11 $(OPT) -g $(WARN) -Iinclude -Isrc -Itools/xalloc-stat

TOOLS_TARGETS += $(STAT_TOOL)

$(STAT_TOOL): $(STAT_TOOL_SRCS) $(STAT_TOOL_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(STAT_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(STAT_TOOL_SRCS)

## xalloc-stat: build the live statistics tool (build/xalloc-stat)
.PHONY: xalloc-stat
xalloc-stat: $(STAT_TOOL)

# ---- tests ----

STATS_TEST_DIR := $(BUILD)/tests/stats
STATS_TEST_CFLAGS := -std=gnu11 -O1 -g $(WARN) -Iinclude -Isrc -Itools/xalloc-stat -pthread

# Emitter and file reader/writer protocol, on synthetic statistics: no
# allocator involved.
$(STATS_TEST_DIR)/check_stats_file: tests/stats/check_stats_file.c tools/xalloc-stat/statfile.c \
        src/stats_report.c $(STAT_TOOL_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(STATS_TEST_CFLAGS) $(CHECK_CFLAGS) -o $@ tests/stats/check_stats_file.c \
	  tools/xalloc-stat/statfile.c src/stats_report.c $(CHECK_LIBS) -lpthread

# The library's statistics, run under LD_PRELOAD of the real library.
$(STATS_TEST_DIR)/check_stats_live: tests/stats/check_stats_live.c tools/xalloc-stat/statfile.c \
        src/stats_report.c $(STAT_TOOL_HDRS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(STATS_TEST_CFLAGS) $(CHECK_CFLAGS) -o $@ tests/stats/check_stats_live.c \
	  tools/xalloc-stat/statfile.c src/stats_report.c $(LIB) \
	  -Wl,-rpath,$(abspath $(BUILD)) $(CHECK_LIBS) -lpthread

# A process that holds and caches known amounts, for the tool tests.
$(STATS_TEST_DIR)/holder: tests/stats/holder.c
	@mkdir -p $(dir $@)
	$(CC) $(STATS_TEST_CFLAGS) -o $@ $<

# Short-lived publishers (lifetime.sh), a content-verified workload and the
# statistics file fuzzer (fuzz.sh).
$(STATS_TEST_DIR)/lifer: tests/stats/lifer.c
	@mkdir -p $(dir $@)
	$(CC) $(STATS_TEST_CFLAGS) -o $@ $<

$(STATS_TEST_DIR)/victim: tests/stats/victim.c
	@mkdir -p $(dir $@)
	$(CC) $(STATS_TEST_CFLAGS) -o $@ $<

$(STATS_TEST_DIR)/fuzz_statfile: tests/stats/fuzz_statfile.c include/xalloc_stats_file.h include/xalloc_stats.h
	@mkdir -p $(dir $@)
	$(CC) $(STATS_TEST_CFLAGS) -o $@ $<

.PHONY: check-stats check-stats-unit check-stats-live check-stats-tool check-stats-redis \
        check-stats-lifetime check-stats-fuzz check-stats-formats check-stats-export
## check-stats: statistics tests: emitter, file protocol, live library, xalloc-stat, redis, lifetime, fuzz
check-stats: check-stats-unit check-stats-live check-stats-tool check-stats-redis \
        check-stats-lifetime check-stats-fuzz check-stats-formats check-stats-export

## check-stats-unit: report emitter and statistics file protocol (no allocator needed)
check-stats-unit: $(STATS_TEST_DIR)/check_stats_file
	CK_DEFAULT_TIMEOUT=60 $<

## check-stats-live: the library's statistics under LD_PRELOAD (exact counts, RSS, seqlock)
check-stats-live: $(STATS_TEST_DIR)/check_stats_live $(LIB)
	CK_DEFAULT_TIMEOUT=60 LD_PRELOAD=$(abspath $(LIB)) $<

## check-stats-tool: xalloc-stat against live processes (errors, purge, set, users)
check-stats-tool: $(STAT_TOOL) $(STATS_TEST_DIR)/holder $(LIB)
	timeout 180 tests/stats/tool.sh $(abspath $(LIB)) $(abspath $(STAT_TOOL)) \
	  $(abspath $(STATS_TEST_DIR)/holder)

## check-stats-lifetime: 1,000 killed processes leave nothing; exec; read-only and full /dev/shm (~30 s)
check-stats-lifetime: $(STAT_TOOL) $(STATS_TEST_DIR)/lifer $(STATS_TEST_DIR)/holder $(LIB)
	timeout 300 tests/stats/lifetime.sh $(abspath $(LIB)) $(abspath $(STAT_TOOL)) \
	  $(abspath $(STATS_TEST_DIR)/lifer) $(abspath $(STATS_TEST_DIR)/holder)

## check-stats-fuzz: a process survives any content of its statistics file, heap verified (~10 s)
check-stats-fuzz: $(STAT_TOOL) $(STATS_TEST_DIR)/victim $(STATS_TEST_DIR)/fuzz_statfile $(LIB)
	timeout 120 tests/stats/fuzz.sh $(abspath $(LIB)) $(abspath $(STAT_TOOL)) \
	  $(abspath $(STATS_TEST_DIR)/victim) $(abspath $(STATS_TEST_DIR)/fuzz_statfile) 8

## check-stats-formats: every xalloc-stat mode with every format; JSON parsed, promtool, option table
check-stats-formats: $(STAT_TOOL) $(STATS_TEST_DIR)/holder $(LIB)
	timeout 120 tests/stats/formats.sh $(abspath $(LIB)) $(abspath $(STAT_TOOL)) \
	  $(abspath $(STATS_TEST_DIR)/holder)

## check-stats-export: xalloc-stat-export into a textfile directory, read back by node_exporter
check-stats-export: $(STAT_TOOL) $(STATS_TEST_DIR)/holder $(LIB)
	timeout 120 tests/stats/export.sh $(abspath $(LIB)) $(abspath $(STAT_TOOL)) \
	  $(abspath $(STATS_TEST_DIR)/holder)

## check-stats-redis: xalloc-stat against redis-server under LD_PRELOAD
check-stats-redis: $(STAT_TOOL) $(LIB)
	timeout 180 tests/stats/redis.sh $(abspath $(LIB)) $(abspath $(STAT_TOOL))

CHECK_TARGETS += check-stats

# ---- install ----

# node_exporter export: a script and a oneshot service started by a timer
# (installed, not enabled: packages keep it disabled too).
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
EXPORT_SUBST = sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SBINDIR@|$(SBINDIR)|g' \
	-e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'

.PHONY: install-stats uninstall-stats
install-stats: $(STAT_TOOL)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(SBINDIR) \
	  $(DESTDIR)$(SYSTEMDUNITDIR)
	$(INSTALL) -m 0755 $(STAT_TOOL) $(DESTDIR)$(BINDIR)/xalloc-stat
	$(INSTALL) -m 0644 include/xalloc_stats_file.h $(DESTDIR)$(INCLUDEDIR)/xalloc_stats_file.h
	$(EXPORT_SUBST) tools/xalloc-stat-export.in > $(DESTDIR)$(SBINDIR)/xalloc-stat-export
	chmod 0755 $(DESTDIR)$(SBINDIR)/xalloc-stat-export
	$(EXPORT_SUBST) systemd/xalloc-stat-export.service.in > $(DESTDIR)$(SYSTEMDUNITDIR)/xalloc-stat-export.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/xalloc-stat-export.service
	$(INSTALL) -m 0644 systemd/xalloc-stat-export.timer $(DESTDIR)$(SYSTEMDUNITDIR)/xalloc-stat-export.timer

uninstall-stats:
	rm -f $(DESTDIR)$(BINDIR)/xalloc-stat
	rm -f $(DESTDIR)$(INCLUDEDIR)/xalloc_stats_file.h
	rm -f $(DESTDIR)$(SBINDIR)/xalloc-stat-export
	rm -f $(DESTDIR)$(SYSTEMDUNITDIR)/xalloc-stat-export.service $(DESTDIR)$(SYSTEMDUNITDIR)/xalloc-stat-export.timer

INSTALL_TARGETS += install-stats
UNINSTALL_TARGETS += uninstall-stats
