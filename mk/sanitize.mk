# mk/sanitize.mk: the allocator under sanitizers (issue 14), with clang.
#   check-sanitize        both of the below
#   check-sanitize-ubsan  the Check unit suites on a test build compiled with
#                         -fsanitize=undefined (build/ubsan/), and the
#                         allocation fuzzer (ASan+UBSan) replaying its corpus
#   check-sanitize-tsan   tests/harden/tsan_stress.c on the test build with
#                         -fsanitize=thread: remote frees, abandonment and
#                         adoption, statistics publication while others read
# Any report fails the run (no recovery, halt_on_error).

SAN_CC ?= clang
SAN_UB := -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SAN_T := -fsanitize=thread -fno-omit-frame-pointer
TSAN_BIN := $(BUILD)/tsan/tsan_stress

$(TSAN_BIN): tests/harden/tsan_stress.c tests/harden/tsan.supp $(LIB_SRCS) $(wildcard src/*.h) src/options.def
	@mkdir -p $(dir $@)
	$(SAN_CC) -std=gnu11 -O1 -g $(WARN) -Iinclude -Isrc -DXA_TEST -DXA_DEBUG=1 -pthread \
	  -fno-builtin-malloc -fno-builtin-free $(SAN_T) tests/harden/tsan_stress.c $(LIB_SRCS) -o $@

.PHONY: check-sanitize check-sanitize-ubsan check-sanitize-tsan
## check-sanitize: unit tests and the test build under UBSan, concurrent parts under TSan (clang)
check-sanitize: check-sanitize-ubsan check-sanitize-tsan

## check-sanitize-ubsan: unit suites under UndefinedBehaviorSanitizer, fuzzer corpus replay
check-sanitize-ubsan: $(FUZZ_ALLOC_BIN)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 CK_TIMEOUT_MULTIPLIER=5 $(MAKE) --no-print-directory \
	  BUILD=$(BUILD)/ubsan CC=$(SAN_CC) CFLAGS="$(SAN_UB)" \
	  CHECK_CFLAGS="$(CHECK_CFLAGS) $(SAN_UB)" check-unit
	$(FUZZ_ALLOC_BIN) -runs=0 $(FUZZ_ALLOC_SEEDS) > $(BUILD)/fuzz/replay.log 2>&1 || \
	  { tail -n 30 $(BUILD)/fuzz/replay.log; exit 1; }
	@echo "check-sanitize-ubsan: unit suites and $$(ls $(FUZZ_ALLOC_SEEDS) | wc -l) fuzz inputs clean"

## check-sanitize-tsan: remote frees, abandonment, statistics publication under ThreadSanitizer
check-sanitize-tsan: $(TSAN_BIN)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(abspath tests/harden/tsan.supp) \
	  timeout 600 $(TSAN_BIN)
