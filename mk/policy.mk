# mk/policy.mk: page-policy tests (THP modes, decay, trim, exited threads).

POLICY_PROBE := $(BUILD)/tests/policy/probe
RETURN_PROBE := $(BUILD)/tests/policy/return

$(RETURN_PROBE): tests/policy/return.c tests/policy/proc.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g $(WARN) -pthread $< -o $@

$(POLICY_PROBE): tests/policy/probe.c tests/policy/proc.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g $(WARN) -pthread $< -o $@

.PHONY: check-policy
## check-policy: page policy under LD_PRELOAD: huge pages per thp mode, RSS after decay and trim
check-policy: $(POLICY_PROBE) $(RETURN_PROBE) $(LIB)
	timeout 300 tests/policy/run.sh $(abspath $(LIB)) $(abspath $(POLICY_PROBE))
	timeout 300 tests/policy/return.sh $(abspath $(LIB)) $(abspath $(RETURN_PROBE))

CHECK_TARGETS += check-policy
