# mk/demo.mk: the newcomer's targets: deps (build packages) and demo.

.PHONY: deps deps-check demo check-demo
## deps: install the packages needed to build and test (as root), or print the command
deps:
	tools/deps.sh check

DEMO_SEEDS := $(BUILD)/demo/seeds

$(DEMO_SEEDS): tools/demo/seeds.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(WARN) -pthread -o $@ $<

## demo: what xalloc is for, in under a minute: the design's situations and python3/sqlite3
## against glibc (and jemalloc if installed), then a live xalloc-stat
demo:
	@tools/deps.sh build
	@command -v python3 >/dev/null && command -v sqlite3 >/dev/null || tools/deps.sh check
	$(MAKE) --no-print-directory lib $(STAT_TOOL) $(DEMO_SEEDS)
	tools/demo.py $(LIB) $(DEMO_SEEDS) $(STAT_TOOL)

## check-demo: make demo in a quick mode; every row it prints must have numbers
check-demo: lib $(STAT_TOOL) $(DEMO_SEEDS)
	timeout 120 tools/demo.py $(LIB) $(DEMO_SEEDS) $(STAT_TOOL) --quick --check

CHECK_TARGETS += check-demo
