# Hardening (included by the top-level Makefile): sanitizer builds, the libFuzzer harness and
# the stress tests. See docs/hardening-tests.md.
#
#   make asan                    allocator + unit/API/stress tests under ASan+UBSan, run them
#   make tsan                    allocator + thread-heavy API tests + stress tests under TSan, run them
#   make fuzz [FUZZ_SECONDS=60]  libFuzzer on test/fuzz/fuzz_ops.cpp, corpus in build/fuzz/corpus
#   build/test/unit_stress       stress tests linked with libbobox.a (bobox_* names)   [make test]
#   build/test/preload_stress    fork storm, thread churn, OOM under LD_PRELOAD           [make test]
CLANG   ?= clang
CLANGXX ?= clang++
FUZZ_SECONDS ?= 60

HARD_ALLOC_SRCS := $(ALLOC_SRCS)
HARD_ALLOC_HDRS := $(wildcard allocator/*/*.h) include/bobox.h
STRESS_SRCS := $(wildcard test/stress/*.cpp)
STRESS_HDRS := $(wildcard test/stress/*.h) test/api/api.h
# The fork storm, thread churn and OOM tests also run with the real preload.
PRELOAD_STRESS_SRCS := test/stress/test_fork_storm.cpp test/stress/test_churn.cpp test/stress/test_oom.cpp test/stress/test_races.cpp

# ---- stress tests in `make test` -----------------------------------------------------------
# (each source compiled on its own, as the Makefile's Catch2 objects: $(TEST_OBJ)/...)
$(BUILD)/test/unit_stress: $(call prefixed_objs,$(STRESS_SRCS)) $(CATCH_MAIN) $(LIBBOBOX_A) test/hardening.mk
	$(CXX) $(TEST_CXXFLAGS) -o $@ $(call prefixed_objs,$(STRESS_SRCS)) $(CATCH_MAIN) $(LIBBOBOX_A)
$(BUILD)/test/preload_stress: $(call plain_objs,$(PRELOAD_STRESS_SRCS)) $(CATCH_MAIN) $(LIBBOBOX_SO) test/hardening.mk
	$(CXX) $(TEST_CXXFLAGS) -o $@ $(call plain_objs,$(PRELOAD_STRESS_SRCS)) $(CATCH_MAIN) -ldl
-include $(patsubst %.o,%.d,$(call prefixed_objs,$(STRESS_SRCS)) $(call plain_objs,$(PRELOAD_STRESS_SRCS)))

TEST_BINS += $(BUILD)/test/unit_stress $(BUILD)/test/preload_stress

# ---- sanitizer builds ------------------------------------------------------------------------
# The allocator is built as for libbobox.a, with clang and a sanitizer, into build/<san>/.
# -O1 keeps stacks readable; UBSan findings are fatal (no recovery) so that a run fails.
SAN_LIB_CFLAGS = -std=gnu11 $(WARN) -O1 -g -fno-omit-frame-pointer -fPIC -pthread -Iinclude -Iallocator -DBX_TESTING \
                 -fvisibility=hidden -ftls-model=initial-exec -fno-plt -fno-semantic-interposition
SAN_CXXFLAGS   = -std=c++17 $(WARN) -O1 -gline-tables-only -fno-omit-frame-pointer -pthread -Iinclude -Iallocator -Itest -DBX_TESTING

ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined
TSAN_FLAGS := -fsanitize=thread

ASAN_DIR := $(BUILD)/asan
TSAN_DIR := $(BUILD)/tsan
FUZZ_DIR := $(BUILD)/fuzz

$(ASAN_DIR)/allocator/%.o: allocator/%.c $(HARD_ALLOC_HDRS) test/hardening.mk
	@mkdir -p $(dir $@)
	$(CLANG) $(SAN_LIB_CFLAGS) $(ASAN_FLAGS) -c $< -o $@
$(TSAN_DIR)/allocator/%.o: allocator/%.c $(HARD_ALLOC_HDRS) test/hardening.mk
	@mkdir -p $(dir $@)
	$(CLANG) $(SAN_LIB_CFLAGS) $(TSAN_FLAGS) -c $< -o $@
# The fuzzer also instruments the allocator for coverage.
$(FUZZ_DIR)/allocator/%.o: allocator/%.c $(HARD_ALLOC_HDRS) test/hardening.mk
	@mkdir -p $(dir $@)
	$(CLANG) $(SAN_LIB_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -c $< -o $@

$(ASAN_DIR)/libbobox.a: $(HARD_ALLOC_SRCS:%.c=$(ASAN_DIR)/%.o)
	@rm -f $@
	ar rcs $@ $^
$(TSAN_DIR)/libbobox.a: $(HARD_ALLOC_SRCS:%.c=$(TSAN_DIR)/%.o)
	@rm -f $@
	ar rcs $@ $^
$(FUZZ_DIR)/libbobox.a: $(HARD_ALLOC_SRCS:%.c=$(FUZZ_DIR)/%.o)
	@rm -f $@
	ar rcs $@ $^

# Catch2's main (build/test/catch_main.o, g++) is linked as it is: it runs in the test thread
# only, and instrumenting it would cost a minute of compiling for nothing.
# Each test source is compiled on its own, after Catch2's header precompiled once per
# sanitizer (clang's .pch must match the sanitizer flags), as the Makefile's g++ objects:
#   <san>/obj/plain/X.o, <san>/obj/prefixed/X.o (-DAPI_PREFIXED)
# san_rules: DIR FLAGS
define san_rules
$(1)/pch/catch_pch.hpp.pch: test/hardening.mk Makefile
	@mkdir -p $$(dir $$@)
	@echo '#include <catch2/catch.hpp>' >$(1)/pch/catch_pch.hpp
	$$(CLANGXX) $$(SAN_CXXFLAGS) $(2) -MD -MP -MF $$@.d -MT $$@ -x c++-header $(1)/pch/catch_pch.hpp -o $$@
$(1)/obj/plain/%.o: %.cpp $(1)/pch/catch_pch.hpp.pch
	@mkdir -p $$(dir $$@)
	$$(CLANGXX) $$(SAN_CXXFLAGS) $(2) -include-pch $(1)/pch/catch_pch.hpp.pch -MMD -MP -c $$< -o $$@
$(1)/obj/prefixed/%.o: %.cpp $(1)/pch/catch_pch.hpp.pch
	@mkdir -p $$(dir $$@)
	$$(CLANGXX) $$(SAN_CXXFLAGS) $(2) -DAPI_PREFIXED -include-pch $(1)/pch/catch_pch.hpp.pch -MMD -MP -c $$< -o $$@
-include $(1)/pch/catch_pch.hpp.pch.d
endef
$(eval $(call san_rules,$(ASAN_DIR),$(ASAN_FLAGS)))
$(eval $(call san_rules,$(TSAN_DIR),$(TSAN_FLAGS)))
san_objs = $(patsubst %.cpp,$(1)/obj/$(2)/%.o,$(3))

# ASan+UBSan: every unit, API and stress test.
$(ASAN_DIR)/unit/%.o: test/unit/%.c $(HARD_ALLOC_HDRS) test/hardening.mk
	@mkdir -p $(dir $@)
	$(CLANG) $(SAN_LIB_CFLAGS) $(ASAN_FLAGS) -c $< -o $@
$(ASAN_DIR)/unit_alloc: $(call san_objs,$(ASAN_DIR),plain,$(UNIT_SRCS)) $(UNIT_C_OBJS:$(BUILD)/test/%=$(ASAN_DIR)/%) $(CATCH_MAIN) $(ASAN_DIR)/libbobox.a
	$(CLANGXX) $(SAN_CXXFLAGS) $(ASAN_FLAGS) -o $@ $(call san_objs,$(ASAN_DIR),plain,$(UNIT_SRCS)) $(UNIT_C_OBJS:$(BUILD)/test/%=$(ASAN_DIR)/%) $(CATCH_MAIN) $(ASAN_DIR)/libbobox.a
$(ASAN_DIR)/unit_api: $(call san_objs,$(ASAN_DIR),prefixed,$(API_SRCS)) $(CATCH_MAIN) $(ASAN_DIR)/libbobox.a
	$(CLANGXX) $(SAN_CXXFLAGS) $(ASAN_FLAGS) -o $@ $(call san_objs,$(ASAN_DIR),prefixed,$(API_SRCS)) $(CATCH_MAIN) $(ASAN_DIR)/libbobox.a -ldl
$(ASAN_DIR)/unit_stress: $(call san_objs,$(ASAN_DIR),prefixed,$(STRESS_SRCS)) $(CATCH_MAIN) $(ASAN_DIR)/libbobox.a
	$(CLANGXX) $(SAN_CXXFLAGS) $(ASAN_FLAGS) -o $@ $(call san_objs,$(ASAN_DIR),prefixed,$(STRESS_SRCS)) $(CATCH_MAIN) $(ASAN_DIR)/libbobox.a

# TSan: the thread-heavy API tests and the stress tests.
TSAN_API_SRCS := test/api/test_api_threads.cpp test/api/test_api_realloc_threads.cpp
$(TSAN_DIR)/unit_api_threads: $(call san_objs,$(TSAN_DIR),prefixed,$(TSAN_API_SRCS)) $(CATCH_MAIN) $(TSAN_DIR)/libbobox.a
	$(CLANGXX) $(SAN_CXXFLAGS) $(TSAN_FLAGS) -o $@ $(call san_objs,$(TSAN_DIR),prefixed,$(TSAN_API_SRCS)) $(CATCH_MAIN) $(TSAN_DIR)/libbobox.a -ldl
$(TSAN_DIR)/unit_stress: $(call san_objs,$(TSAN_DIR),prefixed,$(STRESS_SRCS)) $(CATCH_MAIN) $(TSAN_DIR)/libbobox.a
	$(CLANGXX) $(SAN_CXXFLAGS) $(TSAN_FLAGS) -o $@ $(call san_objs,$(TSAN_DIR),prefixed,$(STRESS_SRCS)) $(CATCH_MAIN) $(TSAN_DIR)/libbobox.a
-include $(patsubst %.o,%.d,$(call san_objs,$(ASAN_DIR),plain,$(UNIT_SRCS)) $(call san_objs,$(ASAN_DIR),prefixed,$(API_SRCS) $(STRESS_SRCS)) \
         $(call san_objs,$(TSAN_DIR),prefixed,$(TSAN_API_SRCS) $(STRESS_SRCS)))

ASAN_BINS := $(ASAN_DIR)/unit_alloc $(ASAN_DIR)/unit_api $(ASAN_DIR)/unit_stress
TSAN_BINS := $(TSAN_DIR)/unit_api_threads $(TSAN_DIR)/unit_stress

# Run-time options (also used by test/system/hardening_*.sh through scripts/... see there).
# detect_leaks=0: the allocator's own memory is mmap'ed and invisible to LSan; what LSan could
# see (test scaffolding, libstdc++ pools) is not what is under test.
ASAN_ENV := ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# die_after_fork=0: the fork tests start threads in children of multi-threaded parents, which
# TSan cannot model (it would kill those children); it checks everything up to the fork.
TSAN_ENV := TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:suppressions=$(CURDIR)/test/tsan.supp"
# Not under TSan: the RSS bound of the 2000-thread test (TSan's shadow and per-thread state
# make RSS meaningless). Catch2 test spec, passed to every TSan binary.
TSAN_SPEC := '~2000 short-lived threads*'


.PHONY: asan tsan fuzz asan-bins tsan-bins fuzz-bin
asan-bins: $(ASAN_BINS)
tsan-bins: $(TSAN_BINS)
fuzz-bin: $(FUZZ_DIR)/fuzz_ops

asan: asan-bins
	@set -e; for b in $(ASAN_BINS); do \
	    echo "== $$b"; start=$$(date +%s); \
	    $(ASAN_ENV) $$b --durations no; \
	    echo "   ($$(( $$(date +%s) - start )) s)"; done

tsan: tsan-bins
	@set -e; for b in $(TSAN_BINS); do \
	    echo "== $$b"; start=$$(date +%s); \
	    $(TSAN_ENV) $$b --durations no $(TSAN_SPEC); \
	    echo "   ($$(( $$(date +%s) - start )) s)"; done

# ---- fuzzing ---------------------------------------------------------------------------------
$(FUZZ_DIR)/fuzz_ops: test/fuzz/fuzz_ops.cpp $(FUZZ_DIR)/libbobox.a include/bobox.h test/hardening.mk
	$(CLANGXX) $(SAN_CXXFLAGS) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-o $@ $< $(FUZZ_DIR)/libbobox.a

fuzz: fuzz-bin
	@mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/artifacts
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_BIN=$(FUZZ_DIR)/fuzz_ops FUZZ_DIR=$(FUZZ_DIR) test/fuzz/run-fuzz.sh

# ---- in `make test` (when clang and its sanitizer runtimes are installed) ----------------------
# test/system/hardening_asan.sh runs $(ASAN_BINS), hardening_tsan.sh the TSan stress tests,
# hardening_fuzz.sh 60 s of fuzzing; each skips (exit 77) when its binaries were not built.
CLANG_RT_DIR := $(shell $(CLANG) --print-runtime-dir 2>/dev/null)
ifneq ($(wildcard $(CLANG_RT_DIR)/libclang_rt.asan-x86_64.a),)
TEST_BINS += $(ASAN_BINS)
endif
ifneq ($(wildcard $(CLANG_RT_DIR)/libclang_rt.tsan-x86_64.a),)
TEST_BINS += $(TSAN_DIR)/unit_stress
endif
ifneq ($(wildcard $(CLANG_RT_DIR)/libclang_rt.fuzzer-x86_64.a),)
TEST_BINS += $(FUZZ_DIR)/fuzz_ops
endif
