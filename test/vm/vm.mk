# The VM tests (included by the top-level Makefile): `make test-vm` boots multi-socket,
# multi-node, Hyper-Threaded guests in QEMU and runs test/vm/guest.sh in each. docs/vm-tests.md.
VM_PROGS := $(BUILD)/test/vm/vm_affinity $(BUILD)/test/vm/vm_numa
$(BUILD)/test/vm/%: test/vm/%.c test/vm/vm_sys.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -O2 -g -pthread -o $@ $<

.PHONY: test-vm
test-vm: deps
	$(MAKE) all $(VM_PROGS) $(BUILD)/test/progs/pin_threads $(BUILD)/test/unit_stress $(BUILD)/test/preload_stress
	@scripts/test/test-vm.sh

TEST_BINS += $(VM_PROGS)
