# bobox-malloc: `make` builds the libraries, `make test` runs every test (`make test-quick` the
# fast ones), `make bench` compares allocators.
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
# Tests keep line tables only (-g1): a failure's backtrace still names file and line, and a
# Catch2 source compiles in two thirds of the time (test_api_basic.cpp 9.3 s -> 6.2 s).
TEST_CXXFLAGS := -std=c++17 $(WARN) $(CXXFLAGS) -g1 -pthread -Iinclude -Iallocator -Itest -DBX_TESTING

# Every allocator source is built twice: for libbobox.so with BOBOX_OVERRIDE (the standard
# names, the C++ operators, dlopen, pthread_join: the files of cxx/ go only there), and for
# libbobox.a with BX_TESTING (bobox_* names only, and the hooks the unit tests use).
CXX_SRCS := $(wildcard allocator/cxx/*.c)
ALLOC_SRCS := $(filter-out $(CXX_SRCS),$(wildcard allocator/*/*.c))
SO_OBJS := $(patsubst allocator/%.c,$(BUILD)/so/%.o,$(ALLOC_SRCS) $(CXX_SRCS))
A_OBJS  := $(patsubst allocator/%.c,$(BUILD)/a/%.o,$(ALLOC_SRCS))

LIBBOBOX_SO := $(BUILD)/libbobox.so
LIBBOBOX_A  := $(BUILD)/libbobox.a
LIBBOBOX_DIST_A := $(BUILD)/dist/libbobox.a

.PHONY: all test test-quick test-bins deps install uninstall man clean bench bench-full format layers check-scripts print-catch-bins sizeclass-tables
all: $(LIBBOBOX_SO) $(LIBBOBOX_A) $(LIBBOBOX_DIST_A)

# -MMD: each object is rebuilt when a header it includes changes, and only then.
$(BUILD)/so/%.o: allocator/%.c Makefile
	@mkdir -p $(dir $@)
	@echo "  CC      $< (libbobox.so)"
	@$(CC) $(LIB_CFLAGS) -MMD -MP -DBOBOX_OVERRIDE -c $< -o $@
$(BUILD)/a/%.o: allocator/%.c Makefile
	@mkdir -p $(dir $@)
	@echo "  CC      $< (libbobox.a)"
	@$(CC) $(LIB_CFLAGS) -MMD -MP -DBX_TESTING -c $< -o $@
-include $(SO_OBJS:.o=.d) $(A_OBJS:.o=.d)

$(LIBBOBOX_SO): $(SO_OBJS)
	$(CC) -shared -pthread -static-libgcc -Wl,--exclude-libs,ALL -Wl,-z,now -Wl,-soname,libbobox.so -o $@ $^

# Only bobox_-prefixed entry points: links into a test without replacing its malloc.
$(LIBBOBOX_A): $(A_OBJS)
	@rm -f $@
	ar rcs $@ $^

# The archive `make install` installs: the same objects linked into one, whose internal names
# (hidden, bx_*) are made local, so that a program linking it statically meets only bobox_*
# names of ours (the tests' archive above keeps them global for the unit tests).
$(LIBBOBOX_DIST_A): $(A_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(LD) -r -o $(BUILD)/dist/bobox.o $^
	objcopy --localize-hidden $(BUILD)/dist/bobox.o
	ar rcs $@ $(BUILD)/dist/bobox.o

# The size-class tables are constants generated from their growth rules, committed: a fresh
# clone's timestamps must not regenerate them mid-build (make -j compiled sizeclass.c before
# the new copy, and the next make relinked libbobox.so under the running tests). Test
# build_tables checks the committed copy against the generator.
sizeclass-tables:
	python3 scripts/gen/gen-sizeclass.py allocator/small/sizeclass_tables.h

# No include or call goes up a layer (allocator/layers.txt); the README's layout table matches.
layers: $(SO_OBJS)
	@scripts/test/check-layers.sh $(BUILD)/so

# Every test script stops on a missing helper file (test/system/build_scripts.sh runs it in make test).
check-scripts:
	@scripts/test/check-scripts.sh

# Both trees follow .clang-format.
format:
	clang-format -i allocator/*/*.[ch] pinning/*.[ch] include/*.h

# ---- tests -------------------------------------------------------------------------------
# build/test/unit_*    Catch2, run as they are
# build/test/preload_* Catch2, run under LD_PRELOAD=build/libbobox.so
# test/system/*.sh     one test each: exit 0 pass, 77 skipped, anything else fails
CATCH_MAIN := $(BUILD)/test/catch_main.o
$(CATCH_MAIN): test/catch_main.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -c $< -o $@

# Each Catch2 test source is compiled on its own (make -j spreads the 70 of them over the
# CPUs to the end of the build, where one command per binary left one CPU idle), after
# Catch2's header precompiled once per compiler and flag set: every test source includes it
# first, and reading it took about 2 of each source's 3 to 17 seconds. The header is the
# first thing each source includes, so -include changes nothing but the time (g++ reads the
# text when the .gch does not fit). -MMD: rebuilt when a header it includes changes.
#   $(TEST_OBJ)/plain/X.o     g++, TEST_CXXFLAGS
#   $(TEST_OBJ)/prefixed/X.o  the same with -DAPI_PREFIXED (bobox_* names)
TEST_OBJ := $(BUILD)/test/obj
CATCH_PCH := $(BUILD)/test/pch/catch_pch.hpp
$(CATCH_PCH).gch: Makefile
	@mkdir -p $(dir $@)
	@echo '#include <catch2/catch.hpp>' >$(CATCH_PCH)
	$(CXX) $(TEST_CXXFLAGS) -MD -MP -MF $@.d -MT $@ -x c++-header $(CATCH_PCH) -o $@
$(TEST_OBJ)/plain/%.o: %.cpp $(CATCH_PCH).gch
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -include $(CATCH_PCH) -MMD -MP -c $< -o $@
$(TEST_OBJ)/prefixed/%.o: %.cpp $(CATCH_PCH).gch
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -DAPI_PREFIXED -include $(CATCH_PCH) -MMD -MP -c $< -o $@
-include $(CATCH_PCH).gch.d
plain_objs = $(patsubst %.cpp,$(TEST_OBJ)/plain/%.o,$(1))
prefixed_objs = $(patsubst %.cpp,$(TEST_OBJ)/prefixed/%.o,$(1))

UNIT_SRCS := $(wildcard test/unit/*.cpp)
# Probes of the layers whose headers only C reads (C11 atomics), driven by the Catch2 cases.
UNIT_C_OBJS := $(patsubst test/unit/%.c,$(BUILD)/test/unit/%.o,$(wildcard test/unit/*.c))
$(BUILD)/test/unit/%.o: test/unit/%.c $(LIBBOBOX_A)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -pthread -Iinclude -Iallocator -DBX_TESTING -c $< -o $@
$(BUILD)/test/unit_alloc: $(call plain_objs,$(UNIT_SRCS)) $(UNIT_C_OBJS) $(CATCH_MAIN) $(LIBBOBOX_A)
	$(CXX) $(TEST_CXXFLAGS) -o $@ $(call plain_objs,$(UNIT_SRCS)) $(UNIT_C_OBJS) $(CATCH_MAIN) $(LIBBOBOX_A)

API_SRCS := $(wildcard test/api/*.cpp)
$(BUILD)/test/unit_api: $(call prefixed_objs,$(API_SRCS)) $(CATCH_MAIN) $(LIBBOBOX_A)
	$(CXX) $(TEST_CXXFLAGS) -o $@ $(call prefixed_objs,$(API_SRCS)) $(CATCH_MAIN) $(LIBBOBOX_A)
$(BUILD)/test/preload_api: $(call plain_objs,$(API_SRCS)) $(CATCH_MAIN) $(LIBBOBOX_SO)
	$(CXX) $(TEST_CXXFLAGS) -o $@ $(call plain_objs,$(API_SRCS)) $(CATCH_MAIN) -ldl
-include $(patsubst %.o,%.d,$(call plain_objs,$(UNIT_SRCS) $(API_SRCS)) $(call prefixed_objs,$(API_SRCS)))

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

# The tests' binaries build on every CPU unless make was given its own -j.
TEST_BUILD_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))
test: deps
	$(MAKE) $(TEST_BUILD_JOBS) test-bins
	@scripts/test/run-tests.sh

# The unit and API binaries and the system tests not tagged slow (scripts/test/run-tests.sh).
test-quick: deps
	$(MAKE) $(TEST_BUILD_JOBS) test-bins
	@scripts/test/run-tests.sh --quick

# The Catch2 binaries of make test, which scripts/test/run-tests.sh fails when one is missing.
print-catch-bins:
	@printf '%s\n' $(notdir $(filter $(BUILD)/test/unit_% $(BUILD)/test/preload_%,$(TEST_BINS)))

# Everything the tests run, without running them (then TEST_FILTER=... scripts/test/run-tests.sh).
test-bins: all $(TEST_BINS)

# ---- install -----------------------------------------------------------------------------
# make install PREFIX=... DESTDIR=...: libraries, header, launcher, bobox.pc and the man pages;
# make uninstall with the same PREFIX and DESTDIR removes exactly those files (and, under a
# DESTDIR, the directories left empty). bobox-run finds the libraries in ../lib, so lib/ is
# fixed; MANDIR may be moved.
VERSION := 0.1.0
MANDIR ?= $(PREFIX)/share/man
DEST := $(DESTDIR)$(PREFIX)
# The man pages, generated from README.md, docs/api.md, include/bobox.h and bobox-run --help.
MAN_PAGES = $(shell python3 scripts/gen/gen-man.py --list)
INSTALLED_FILES = $(addprefix $(DEST)/lib/,$(notdir $(LIBBOBOX_SO) $(INSTALL_LIBS) $(LIBBOBOX_A)) pkgconfig/bobox.pc) \
                  $(DEST)/include/bobox.h $(addprefix $(DEST)/bin/,$(notdir $(INSTALL_BINS))) \
                  $(addprefix $(DESTDIR)$(MANDIR)/,$(MAN_PAGES))
INSTALLED_DIRS = $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7 \
                 $(DESTDIR)$(MANDIR) $(DEST)/share $(DEST)/lib/pkgconfig $(DEST)/lib $(DEST)/include \
                 $(DEST)/bin $(DEST)

man: all
	@rm -rf $(BUILD)/man && mkdir -p $(BUILD)/man
	$(BUILD)/bobox-run --help >$(BUILD)/man/bobox-run.help
	python3 scripts/gen/gen-man.py --out $(BUILD)/man --help-text $(BUILD)/man/bobox-run.help \
		--prefix $(PREFIX) --version $(VERSION)

install: all man
	install -d $(DEST)/lib/pkgconfig $(DEST)/include $(DEST)/bin
	install -m 755 $(LIBBOBOX_SO) $(INSTALL_LIBS) $(DEST)/lib/
	install -m 644 $(LIBBOBOX_DIST_A) $(DEST)/lib/
	install -m 644 include/bobox.h $(DEST)/include/
	$(if $(INSTALL_BINS),install -m 755 $(INSTALL_BINS) $(DEST)/bin/)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' bobox.pc.in >$(BUILD)/bobox.pc
	install -m 644 $(BUILD)/bobox.pc $(DEST)/lib/pkgconfig/
	@for page in $(MAN_PAGES); do \
		install -d $(DESTDIR)$(MANDIR)/$$(dirname $$page) || exit 1; \
		if [ -L $(BUILD)/man/$$page ]; then \
			ln -sfn $$(readlink $(BUILD)/man/$$page) $(DESTDIR)$(MANDIR)/$$page || exit 1; \
		else install -m 644 $(BUILD)/man/$$page $(DESTDIR)$(MANDIR)/$$page || exit 1; fi; \
	done; echo "  installed $(words $(MAN_PAGES)) man pages in $(DESTDIR)$(MANDIR)"

uninstall:
	rm -f $(INSTALLED_FILES)
	@if [ -n "$(DESTDIR)" ]; then \
		rmdir $(INSTALLED_DIRS) 2>/dev/null; \
		for d in $$(dirname $(DEST)) $$(dirname $(DESTDIR)$(MANDIR)); do \
			while [ "$$d" != "$(patsubst %/,%,$(DESTDIR))" ] && [ "$$d" != / ] && rmdir "$$d" 2>/dev/null; do d=$$(dirname "$$d"); done; \
		done; \
	fi; true

clean:
	rm -rf $(BUILD)
