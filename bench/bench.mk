# Benchmark workloads (issue 5). Included by the top-level Makefile.
# build/bench/NAME for each bench/NAME.c; `make bench` / `make bench-full` run scripts/bench/bench.sh.
BENCH_DIR    := $(BUILD)/bench
BENCH_NAMES  := server prodcons batches falseshare mixed pipeline mergesort paging realloc \
                handoff powerlaw tightloop fifo fastpath gendata bench-run larson prodcons64 \
                crossfree gmicro memshapes bulkpc
BENCH_BINS   := $(BENCH_NAMES:%=$(BENCH_DIR)/%)
# -fno-builtin-*: gcc may delete an unused malloc+free pair, which is exactly what we time.
BENCH_CFLAGS := -std=gnu11 $(WARN) -O2 -g -pthread \
                -fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free

# The node-lock benchmark uses the allocator's own spinlock header.
$(BENCH_DIR)/lockbench: bench/lockbench.c allocator/base/lock.h bench/bench.mk
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -Iallocator -o $@ $<
BENCH_BINS += $(BENCH_DIR)/lockbench

# The hot-path probe's C++ form (operator new and delete). -fno-builtin: a new+delete pair
# with nothing between them may be deleted, as with malloc+free.
$(BENCH_DIR)/fastpath_new: bench/fastpath_new.cpp bench/bench.mk
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(WARN) -O2 -g -fno-builtin -o $@ $<
BENCH_BINS += $(BENCH_DIR)/fastpath_new

# Random large buffers: C++ because the shape is std::make_unique<char[]>(n) (new + zero fill).
$(BENCH_DIR)/bigbuf: bench/bigbuf.cpp bench/bench.mk
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(WARN) -O2 -g -o $@ $<
BENCH_BINS += $(BENCH_DIR)/bigbuf

.PHONY: bench-bins
bench-bins: $(BENCH_BINS)

$(BENCH_DIR)/%: bench/%.c bench/common.h bench/spsc_ring.h bench/bench.mk
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $<


bench: all bench-bins
	scripts/bench/bench.sh

bench-full: all bench-bins
	scripts/bench/bench.sh --full
