# mk/config.mk: checks of the tuning layer (src/options.def, src/config.c).
#   check-config  options observed in a real process under LD_PRELOAD
#   check-docs    man/xalloc.conf.5 matches the option table, renders cleanly
#   check-fuzz    short libFuzzer run of the parser (SKIPs loudly without clang)
#   fuzz          longer libFuzzer run (FUZZ_TIME seconds), fails without clang
# The unit suite tests/unit/check_config.c is run by mk/unit.mk.

FUZZ_CC ?= clang
FUZZ_TIME ?= 60
CHECK_FUZZ_TIME ?= 20
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_BIN := $(FUZZ_DIR)/fuzz_config
# The parser and the two bottom modules it stands on; nothing else is needed.
FUZZ_SRCS := src/config.c src/os_file.c src/util.c
FUZZ_CFLAGS := -std=gnu11 -O1 -g $(WARN) -Iinclude -Isrc -DXA_TEST -DXA_DEBUG=1 \
        -pthread -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_ARGS := -max_len=4096 -timeout=5 -rss_limit_mb=1024 -print_final_stats=1 \
        -dict=tests/fuzz/config.dict -artifact_prefix=$(FUZZ_DIR)/

CONFIG_PROBE := $(BUILD)/tests/config/probe

$(FUZZ_BIN): tests/fuzz/fuzz_config.c $(FUZZ_SRCS) $(wildcard src/*.h) src/options.def include/xalloc.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz_config.c $(FUZZ_SRCS) -o $@

# New corpus entries go to the build tree; tests/fuzz/corpus holds the seeds.
define run_fuzzer
	@mkdir -p $(FUZZ_DIR)/corpus
	$(FUZZ_BIN) $(FUZZ_ARGS) -max_total_time=$(1) $(FUZZ_DIR)/corpus tests/fuzz/corpus
endef

.PHONY: fuzz check-fuzz check-config check-docs
## fuzz: fuzz the configuration parser for FUZZ_TIME seconds (default 60; needs clang, libclang-rt-14-dev)
fuzz: $(FUZZ_BIN)
	$(call run_fuzzer,$(FUZZ_TIME))

## check-fuzz: short fuzz run of the configuration parser (CHECK_FUZZ_TIME, default 20 s)
check-fuzz:
	@if ! printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' | \
	    $(FUZZ_CC) -fsanitize=fuzzer,address,undefined -x c - -o /dev/null >/dev/null 2>&1; then \
	  echo "##################################################################"; \
	  echo "## check-fuzz: SKIPPED: '$(FUZZ_CC) -fsanitize=fuzzer' does not work."; \
	  echo "## Install clang and libclang-rt-14-dev to fuzz the config parser."; \
	  echo "##################################################################"; \
	else \
	  $(MAKE) --no-print-directory $(FUZZ_BIN) && \
	  mkdir -p $(FUZZ_DIR)/corpus && \
	  $(FUZZ_BIN) $(FUZZ_ARGS) -max_total_time=$(CHECK_FUZZ_TIME) $(FUZZ_DIR)/corpus tests/fuzz/corpus \
	    > $(FUZZ_DIR)/check-fuzz.log 2>&1 || { tail -n 60 $(FUZZ_DIR)/check-fuzz.log; \
	    echo "check-fuzz: FAILED (log: $(FUZZ_DIR)/check-fuzz.log)"; exit 1; }; \
	  grep -E '^(Done|stat::number_of_executed_units)' $(FUZZ_DIR)/check-fuzz.log; \
	  echo "check-fuzz: passed"; \
	fi

$(CONFIG_PROBE): tests/config/probe.c include/xalloc.h include/xalloc_stats.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g $(WARN) -Iinclude -pthread $< -o $@ -ldl

## check-config: effects of XALLOC_CONF and config files on a real process (LD_PRELOAD)
check-config: $(LIB) $(CONFIG_PROBE)
	tests/config/check-symbols.sh $(BUILD)/obj/config.o
	tests/config/run.sh $(LIB) $(CONFIG_PROBE)

## check-docs: man/xalloc.conf.5 lists the options of src/options.def with their defaults
check-docs:
	CC="$(CC)" tools/check-options-doc.sh src/options.def man/xalloc.conf.5

CHECK_TARGETS += check-config check-docs check-fuzz
