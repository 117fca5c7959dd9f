# mk/numa.mk: NUMA (issue 12). The policy's unit tests are
# tests/unit/check_numa.c (in check-unit). Here: the multi-node checks in
# qemu (TCG) guests with 2 and 4 nodes, and the node-local benchmark.
# Needs (tools/deps.sh): qemu-system-x86, linux-image-amd64 (or network
# access to the mirror for apt-get download), busybox-static, numactl,
# cpio, python3; bench-numa also libjemalloc2, libmimalloc2.0,
# libtcmalloc-minimal4.

NUMA_DIR := $(BUILD)/numa
NUMA_CFLAGS = -std=gnu11 -O2 -g $(WARN) -pthread
NUMA_BINS := $(NUMA_DIR)/numa_probe $(NUMA_DIR)/bench_numa

$(NUMA_DIR)/%: tests/numa/%.c
	@mkdir -p $(dir $@)
	$(CC) $(NUMA_CFLAGS) $< -o $@

.PHONY: numa-check bench-numa
## numa-check: placement checks in qemu guests with 2 and 4 NUMA nodes (about 2 min)
numa-check: $(LIB) $(NUMA_BINS) $(STAT_TOOL)
	bash tests/numa/numa-check.sh $(BUILD)

## bench-numa: node-local workload in a 4-node qemu guest, all five allocators
bench-numa: $(LIB) $(NUMA_BINS)
	bash tests/numa/bench-numa.sh $(BUILD)
