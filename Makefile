# bobox-malloc: `make` builds the libraries, `make test` runs every test, `make bench` compares allocators.
CC  ?= gcc
CXX ?= g++
PREFIX ?= /usr/local
BUILD := build

WARN      := -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
CXXFLAGS  ?= -O2 -g
# The allocator: hidden internals, initial-exec TLS (glibc's rule for a preloaded malloc).
# No straight-line vectorising: it pairs a free object's two header words into a 16-byte
# vector store, three more instructions on free's fast path.
LIB_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -fPIC -pthread -Iinclude -Iallocator \
              -fvisibility=hidden -ftls-model=initial-exec -fno-plt -fno-semantic-interposition \
              -fno-tree-slp-vectorize
TEST_CXXFLAGS := -std=c++17 $(WARN) $(CXXFLAGS) -pthread -Iinclude -Iallocator -Itest

# cxx.c refers to the C++ operators' symbols, which only the shared library defines.
ALLOC_SRCS := $(filter-out allocator/cxx.c,$(wildcard allocator/*.c))
ALLOC_OBJS := $(ALLOC_SRCS:%.c=$(BUILD)/%.o)
# The shared library's api.c also defines the standard names (BOBOX_OVERRIDE).
SO_OBJS := $(filter-out $(BUILD)/allocator/api.o,$(ALLOC_OBJS)) $(BUILD)/allocator/api-override.o \
           $(BUILD)/allocator/cxx.o
ALLOC_HDRS := $(wildcard allocator/*.h) include/bobox.h

LIBBOBOX_SO := $(BUILD)/libbobox.so
LIBBOBOX_A  := $(BUILD)/libbobox.a

.PHONY: all test deps install clean bench bench-full
all: $(LIBBOBOX_SO) $(LIBBOBOX_A)

$(BUILD)/allocator/%.o: allocator/%.c $(ALLOC_HDRS) Makefile
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(LIB_CFLAGS) -c $< -o $@

$(BUILD)/allocator/api-override.o: allocator/api.c $(ALLOC_HDRS) Makefile
	@mkdir -p $(dir $@)
	@echo "  CC      $< (standard names)"
	@$(CC) $(LIB_CFLAGS) -DBOBOX_OVERRIDE -c $< -o $@

$(LIBBOBOX_SO): $(SO_OBJS)
	$(CC) -shared -pthread -Wl,-z,now -Wl,-soname,libbobox.so -o $@ $^

# Only bobox_-prefixed entry points: links into a test without replacing its malloc.
$(LIBBOBOX_A): $(ALLOC_OBJS)
	@rm -f $@
	ar rcs $@ $^

# ---- tests -------------------------------------------------------------------------------
# build/test/unit_*    Catch2, run as they are
# build/test/preload_* Catch2, run under LD_PRELOAD=build/libbobox.so
# test/system/*.sh     one test each: exit 0 pass, 77 skipped, anything else fails
CATCH_MAIN := $(BUILD)/test/catch_main.o
$(CATCH_MAIN): test/catch_main.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -c $< -o $@

UNIT_SRCS := $(wildcard test/unit/*.cpp)
$(BUILD)/test/unit_alloc: $(UNIT_SRCS) $(CATCH_MAIN) $(LIBBOBOX_A) $(wildcard test/*.h*)
	$(CXX) $(TEST_CXXFLAGS) -o $@ $(UNIT_SRCS) $(CATCH_MAIN) $(LIBBOBOX_A)

API_SRCS := $(wildcard test/api/*.cpp)
$(BUILD)/test/unit_api: $(API_SRCS) $(CATCH_MAIN) $(LIBBOBOX_A) $(wildcard test/*.h* test/api/*.h)
	$(CXX) $(TEST_CXXFLAGS) -DAPI_PREFIXED -o $@ $(API_SRCS) $(CATCH_MAIN) $(LIBBOBOX_A)
$(BUILD)/test/preload_api: $(API_SRCS) $(CATCH_MAIN) $(LIBBOBOX_SO) $(wildcard test/*.h* test/api/*.h)
	$(CXX) $(TEST_CXXFLAGS) -o $@ $(API_SRCS) $(CATCH_MAIN) -ldl

# Helper programs the system tests run (C and C++ sources in test/progs).
PROG_C   := $(wildcard test/progs/*.c)
PROG_CXX := $(wildcard test/progs/*.cpp)
TEST_PROGS := $(PROG_C:test/progs/%.c=$(BUILD)/test/progs/%) $(PROG_CXX:test/progs/%.cpp=$(BUILD)/test/progs/%)
$(BUILD)/test/progs/%: test/progs/%.c include/bobox.h $(wildcard test/progs/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -O2 -g -pthread -Iinclude -fopenmp -o $@ $< -ldl
$(BUILD)/test/progs/%: test/progs/%.cpp include/bobox.h
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(WARN) -O2 -g -pthread -Iinclude -fopenmp -o $@ $< -ldl

TEST_BINS := $(BUILD)/test/unit_alloc $(BUILD)/test/unit_api $(BUILD)/test/preload_api $(TEST_PROGS)

# Parts of the project bring their own targets and tests.
-include pinning/pinning.mk
-include bench/bench.mk
-include test/hardening.mk
-include test/vm/vm.mk

deps:
	@scripts/deps.sh

test: deps
	$(MAKE) all $(TEST_BINS)
	@scripts/run-tests.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(LIBBOBOX_SO) $(INSTALL_LIBS) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 $(LIBBOBOX_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/bobox.h $(DESTDIR)$(PREFIX)/include/
	$(if $(INSTALL_BINS),install -m 755 $(INSTALL_BINS) $(DESTDIR)$(PREFIX)/bin/)

clean:
	rm -rf $(BUILD)
