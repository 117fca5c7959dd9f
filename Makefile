# xalloc: top-level Makefile (GNU make).
# Targets are listed by `make help`. Sub-makefiles in mk/ add their own
# targets and append to CHECK_TARGETS; each concern owns one mk/*.mk file.

VERSION_MAJOR := $(shell sed -n 's/^\#define XALLOC_VERSION_MAJOR \([0-9]*\)/\1/p' include/xalloc.h)
VERSION_MINOR := $(shell sed -n 's/^\#define XALLOC_VERSION_MINOR \([0-9]*\)/\1/p' include/xalloc.h)
VERSION_PATCH := $(shell sed -n 's/^\#define XALLOC_VERSION_PATCH \([0-9]*\)/\1/p' include/xalloc.h)
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)

PREFIX ?= /usr/local
EXEC_PREFIX ?= $(PREFIX)
BINDIR ?= $(EXEC_PREFIX)/bin
SBINDIR ?= $(EXEC_PREFIX)/sbin
LIBDIR ?= $(EXEC_PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SYSCONFDIR ?= /etc
DESTDIR ?=
INSTALL ?= install

CC ?= cc
BUILD ?= build
# Quiet rules unless V=1.
ifeq ($(V),1)
Q :=
else
Q := @
endif
DEBUG ?= 0
WERROR ?= 1
OPT ?= -O2

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wundef -Wvla -Wformat=2 -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN += -Werror
endif
BASE_CFLAGS := -std=gnu11 $(OPT) -g $(WARN) -fPIC -fvisibility=hidden \
        -fno-strict-aliasing -ftls-model=initial-exec -pthread \
        -Iinclude -Isrc -DXA_DEBUG=$(DEBUG)
# The allocator must not have its own calls replaced by builtins that
# call malloc, nor be instrumented by hardening flags that allocate.
LIB_CFLAGS := $(BASE_CFLAGS)
# Last on the command line, after distribution CFLAGS: the allocator's own
# calls must not become builtins, and the fast path carries no stack
# protector (it runs before TLS canaries are trustworthy in some loaders).
LIB_FORCE_CFLAGS := -fno-builtin-malloc -fno-builtin-free -fno-builtin-calloc \
        -fno-builtin-realloc -fno-stack-protector -fno-tree-slp-vectorize
CFLAGS ?=
LDFLAGS ?=

LIB_SRCS := $(filter-out src/prof%.c,$(wildcard src/*.c))
LIB_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
TEST_OBJS := $(patsubst src/%.c,$(BUILD)/obj-test/%.o,$(LIB_SRCS))
LIB_SONAME := libxalloc.so.1
LIB := $(BUILD)/$(LIB_SONAME)
TEST_LIB := $(BUILD)/libxalloc_test.a
LIB_LDLIBS := -lpthread

CHECK_TARGETS :=
BENCH_TARGETS :=
INSTALL_TARGETS :=
UNINSTALL_TARGETS :=
ALL_TARGETS := $(LIB) $(BUILD)/libxalloc.so

.PHONY: all lib check bench install uninstall clean help
## all: build the library and the tools
all: lib tools-all

lib: $(LIB) $(BUILD)/libxalloc.so

# Code that runs once or on request (option parsing, NUMA discovery, the
# statistics file and reports, messages): optimised for size, last on the
# command line like the flags above. The kernel maps a library's file pages
# around each page in use into every process, so the size of the library
# is resident memory of every small service (stats_report.o: 32 -> 15 KiB).
COLD_SRCS := config numa stats stats_report os_file os_stats util invariant
$(patsubst %,$(BUILD)/obj/%.o,$(COLD_SRCS)): LIB_FORCE_CFLAGS += -Os

$(BUILD)/obj/%.o: src/%.c $(wildcard src/*.h src/*.def include/*.h) | $(BUILD)/obj
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) $(LIB_FORCE_CFLAGS) -c $< -o $@

# Unit tests link an internal build in which the exported malloc names are
# renamed (xa_test_malloc, ...), so Check and glibc keep their own malloc.
$(BUILD)/obj-test/%.o: src/%.c $(wildcard src/*.h src/*.def include/*.h) | $(BUILD)/obj-test
	@$(if $(Q),echo "  CC TEST $<")
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) $(LIB_FORCE_CFLAGS) -DXA_TEST -c $< -o $@

$(BUILD)/obj $(BUILD)/obj-test $(BUILD):
	mkdir -p $@

$(LIB): $(LIB_OBJS) src/libxalloc.map
	$(CC) -shared -Wl,-soname,$(LIB_SONAME) -Wl,--version-script=src/libxalloc.map \
	  -Wl,--no-undefined -Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack $(LDFLAGS) -o $@ $(LIB_OBJS) $(LIB_LDLIBS)

$(BUILD)/libxalloc.so: $(LIB)
	ln -sf $(LIB_SONAME) $@

$(TEST_LIB): $(TEST_OBJS)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $(TEST_OBJS)

# Named here, before mk/*.mk is read: several of them use it in
# prerequisites, which make expands as it reads them.
STAT_TOOL := $(BUILD)/xalloc-stat

-include mk/*.mk

tools-all: $(TOOLS_TARGETS)
.PHONY: tools-all

## check: run every test (unit, API, stress, real programs, packaging)
check: $(CHECK_TARGETS)
	@echo "make check: all test groups passed ($(CHECK_TARGETS))"

## bench: run the benchmark suite (tools/bench)
bench: $(BENCH_TARGETS)

## install: install library, header, tools and man pages (PREFIX, DESTDIR, LIBDIR)
install: lib $(INSTALL_TARGETS)
	$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR)
	$(INSTALL) -m 0644 $(LIB) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libxalloc.so
	$(INSTALL) -m 0644 include/xalloc.h $(DESTDIR)$(INCLUDEDIR)/xalloc.h
	$(if $(wildcard include/xalloc_stats.h),$(INSTALL) -m 0644 include/xalloc_stats.h $(DESTDIR)$(INCLUDEDIR)/xalloc_stats.h)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    xalloc.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/xalloc.pc

## uninstall: remove what install put in place
uninstall: $(UNINSTALL_TARGETS)
	rm -f $(DESTDIR)$(LIBDIR)/$(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libxalloc.so
	rm -f $(DESTDIR)$(INCLUDEDIR)/xalloc.h $(DESTDIR)$(INCLUDEDIR)/xalloc_stats.h
	rm -f $(DESTDIR)$(PKGCONFIGDIR)/xalloc.pc

## clean: remove build outputs
clean:
	rm -rf $(BUILD)

## help: list the targets
help:
	@grep -h '^## ' $(MAKEFILE_LIST) | sed 's/^## /  make /'
