# The thread-pinning shim, its launcher and their unit tests (included by the top-level Makefile).
# The shim is its own library: default visibility off, only the interposed functions exported.
PIN_SRCS := pinning/topology.c pinning/plan.c
PIN_HDRS := pinning/topology.h pinning/plan.h
PIN_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -fPIC -pthread -Ipinning -fvisibility=hidden

$(BUILD)/libbobox-pin.so: pinning/shim.c pinning/tree.c pinning/tree.h $(PIN_SRCS) $(PIN_HDRS) pinning/pinning.mk
	@mkdir -p $(dir $@)
	$(CC) $(PIN_CFLAGS) -shared -Wl,-z,now -Wl,-soname,libbobox-pin.so -o $@ pinning/shim.c pinning/tree.c $(PIN_SRCS) -ldl

# --mem= is checked with the allocator's own parser of BOBOX_MEM
$(BUILD)/bobox-run: pinning/bobox-run.c $(PIN_SRCS) $(PIN_HDRS) allocator/os/mempolicy.c allocator/os/mempolicy.h allocator/tools/live.h pinning/pinning.mk
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -Ipinning -Iallocator -o $@ pinning/bobox-run.c $(PIN_SRCS) allocator/os/mempolicy.c

# topology and plan linked straight into Catch2 tests that read the fixture trees
PIN_TEST_SRCS := $(wildcard test/pin/*.cpp)
$(BUILD)/test/pin/%.o: pinning/%.c $(PIN_HDRS)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -Ipinning -c $< -o $@
# (each source on its own, after the precompiled Catch2 header, as the Makefile's test objects)
$(TEST_OBJ)/pin/%.o: %.cpp $(CATCH_PCH).gch pinning/pinning.mk
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -Ipinning -DBOBOX_FIXTURES='"$(CURDIR)/test/fixtures/topo"' -include $(CATCH_PCH) -MMD -MP -c $< -o $@
PIN_TEST_OBJS := $(PIN_TEST_SRCS:%.cpp=$(TEST_OBJ)/pin/%.o)
-include $(PIN_TEST_OBJS:.o=.d)
$(BUILD)/test/unit_pin: $(PIN_TEST_OBJS) $(PIN_SRCS:pinning/%.c=$(BUILD)/test/pin/%.o) $(CATCH_MAIN)
	$(CXX) $(TEST_CXXFLAGS) -o $@ $(PIN_TEST_OBJS) $(PIN_SRCS:pinning/%.c=$(BUILD)/test/pin/%.o) $(CATCH_MAIN)

all: $(BUILD)/libbobox-pin.so $(BUILD)/bobox-run
TEST_BINS += $(BUILD)/test/unit_pin $(BUILD)/libbobox-pin.so $(BUILD)/bobox-run
INSTALL_LIBS += $(BUILD)/libbobox-pin.so
INSTALL_BINS += $(BUILD)/bobox-run
