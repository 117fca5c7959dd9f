# mk/unit.mk: Check unit suites, one per src module: tests/unit/check_<module>.c.
# Each links the internal test build (build/libxalloc_test.a, exported names
# renamed xa_test_*), so the test runner and glibc keep their own malloc.

CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt)
UNIT_SRCS := $(wildcard tests/unit/check_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
TEST_CFLAGS := -std=gnu11 -O1 -g $(WARN) -Iinclude -Isrc -Itests -DXA_TEST -DXA_DEBUG=1 -pthread

$(BUILD)/tests/unit/%: tests/unit/%.c $(TEST_LIB) $(wildcard tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(CHECK_CFLAGS) $< -o $@ $(TEST_LIB) $(CHECK_LIBS) -lpthread

.PHONY: check-unit
## check-unit: run the Check unit suites of the src modules
check-unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; CK_DEFAULT_TIMEOUT=120 $$t; done

CHECK_TARGETS += check-unit

# The size-class tables: tools/gen-sizeclass.c prints them from the rules
# in src/sizeclass.c; check-unit fails when src/sizeclass.c lacks a line.
$(BUILD)/gen-sizeclass: tools/gen-sizeclass.c src/sizeclass.c src/sizeclass.h src/common.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 $(WARN) -Isrc -Iinclude $< src/sizeclass.c -o $@

.PHONY: sizeclass-tables check-sizeclass-tables
## sizeclass-tables: print the literal tables of src/sizeclass.c from their rules
sizeclass-tables: $(BUILD)/gen-sizeclass
	@$<

check-sizeclass-tables: $(BUILD)/gen-sizeclass
	@missing=$$($< | grep -v '^$$' | grep -Fxvf src/sizeclass.c || true); \
	if [ -n "$$missing" ]; then echo "src/sizeclass.c differs from make sizeclass-tables:"; \
	    echo "$$missing" | head -5; exit 1; fi; echo "check-sizeclass-tables: ok"

check-unit: check-sizeclass-tables
