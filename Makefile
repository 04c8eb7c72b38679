# gpuprobe-bpf: one Makefile for the BPF programs, the loader, the shim, the
# stub vendor and the tests. Everything is built under $(BUILD); nothing is
# written into the source tree.
#
#   make               loader, shim, stub vendor, test programs
#   make static        build/static/gpuprobe-bpf, fully static (for other hosts)
#   make test          cmocka unit tests (no root)
#   make test-bpf      root-only BPF integration tests
#   make test-tsan     unit tests under ThreadSanitizer
#   make test-asan     unit tests under AddressSanitizer + UBSan
#   make fuzz-smoke    each fuzzer briefly; `make fuzz` runs them long
#   make check         deps-test + all of the above + tools checks: every stage runs,
#                      one total closes ("check: N passed, M failed, K skipped")
#   make demo          profile the bundled stub workload (no GPU needed)
#   V=1                show full commands

.DELETE_ON_ERROR:
# Keep objects of test programs: they are intermediates, not throwaways.
.SECONDARY:
.SUFFIXES:
.DEFAULT_GOAL := all

V ?= 0
ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2);
endif

ARCH ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BUILD ?= build
PREFIX ?= /usr/local
DESTDIR ?=
CUDA_HOME ?= /usr/local/cuda
SAN ?=
# Builds inside make check run this many jobs; the tests themselves run one at a time.
NPROC ?= $(shell nproc 2>/dev/null || echo 1)
# The runners' name for the tests of this build (make check's total says unit, tsan, asan).
TEST_SUITE ?= unit

CC := clang
BPF_CLANG ?= clang
# More flags for the BPF program (experiments: tools/gpu/ablate-build.sh).
BPF_EXTRA ?=
BPFTOOL ?= bpftool
GO ?= go
PKG_CONFIG ?= pkg-config

# Our own code: warnings are errors.
WARN := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2 \
	-Wno-missing-field-initializers
CPPFLAGS_COMMON := -I. -I$(BUILD)/bpf -D_GNU_SOURCE
CFLAGS_COMMON := -std=gnu11 -g -O2 -fPIC -fno-omit-frame-pointer $(WARN) -MMD -MP
ifeq ($(SAN),thread)
CFLAGS_COMMON += -fsanitize=thread -O1
LDFLAGS_SAN := -fsanitize=thread
else ifeq ($(SAN),address)
CFLAGS_COMMON += -fsanitize=address,undefined -fno-sanitize-recover=all -O1
LDFLAGS_SAN := -fsanitize=address,undefined
endif
CFLAGS ?=
EXTRA_CFLAGS ?=
ALL_CFLAGS = $(CPPFLAGS_COMMON) $(CFLAGS_COMMON) $(CFLAGS) $(EXTRA_CFLAGS)
CUDA_CPPFLAGS := -isystem $(CUDA_HOME)/include

LIBBPF_LIBS := -lbpf -lelf -lz -lstdc++
STATIC_LIBS := -Wl,-Bstatic -l:libbpf.a -l:libelf.a -l:libz.a -l:libzstd.a \
	-l:libstdc++.a
SYS_LIBS := -lpthread -ldl -lm

# ---------------------------------------------------------------- sources
BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.skel.h,$(BPF_SRCS))

SHIM_CORE_SRCS := $(wildcard shim/*.c)
# nvidia/*.c is the shim's CUPTI adapter; nvidia/helper/ is gpuprobe-crc, the
# sandboxed child that makes the loader's one CUPTI call (CRC_HELPER below).
NVIDIA_SRCS := $(wildcard nvidia/*.c)
USER_SRCS := $(shell find user -name '*.c' 2>/dev/null | sort)
USER_MAIN := user/main.c
USER_LIB_SRCS := $(filter-out $(USER_MAIN),$(USER_SRCS))
STUB_CUDA_SRCS := $(wildcard stub/libcuda/*.c)
STUB_CUPTI_SRCS := $(wildcard stub/cupti/*.c)
PROG_SRCS := $(wildcard tests/progs/*.c)
UNIT_SRCS := $(wildcard tests/test_*.c)
BPFTEST_SRCS := $(wildcard tests/bpf/test_*.c)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

SHIM_CORE_OBJS := $(call obj,$(SHIM_CORE_SRCS))
NVIDIA_OBJS := $(call obj,$(NVIDIA_SRCS))
USER_LIB_OBJS := $(call obj,$(USER_LIB_SRCS))
STUB_CUDA_OBJS := $(call obj,$(STUB_CUDA_SRCS))
STUB_CUPTI_OBJS := $(call obj,$(STUB_CUPTI_SRCS))

LOADER := $(BUILD)/gpuprobe-bpf
LOADER_STATIC := $(BUILD)/static/gpuprobe-bpf
CORE_LIB := $(BUILD)/libgpuprobe.a
SHIM_SO := $(BUILD)/libgpuprobe_shim.so
STUB_CUDA := $(BUILD)/stub/libcuda.so.1
STUB_CUPTI := $(BUILD)/stub/libcupti.so
PROGS := $(patsubst tests/progs/%.c,$(BUILD)/tests/progs/%,$(PROG_SRCS))
UNIT_TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
BPF_TESTS := $(patsubst tests/bpf/%.c,$(BUILD)/tests/bpf/%,$(BPFTEST_SRCS))
FUZZERS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

# The CFI held-in program: no frame pointers, two libraries (tests/progs/nofp).
NOFP := $(BUILD)/tests/progs/nofp
NOFP_LIBS := $(BUILD)/tests/progs/libgp_nofp_a.so $(BUILD)/tests/progs/libgp_nofp_b.so
# One library built twice, for the stack cache's reload test (tests/progs/keys.c),
# and a third time with a large symbol table, for the load budget's test.
KEYLIBS := $(BUILD)/tests/progs/libgp_keys_a.so $(BUILD)/tests/progs/libgp_keys_b.so \
	$(BUILD)/tests/progs/libgp_keys_big.so
# A stand-in autograd engine under libtorch's name, and its program (tests/progs/engine).
ENGINE_LIB := $(BUILD)/tests/progs/libtorch_cpu.so
ENGINE_PROG := $(BUILD)/tests/progs/autograd
ENGINE_CASES := $(BUILD)/tests/progs/autograd_cases
# A process that opens the stand-in engine only after its first driver calls.
ENGINE_LATE := $(BUILD)/tests/progs/autograd_late
# The sandboxed CRC helper: the only program that hands cubins to CUPTI.
CRC_HELPER := $(BUILD)/gpuprobe-crc
CRC_HELPER_SRCS := $(wildcard nvidia/helper/*.c)
# What the loader's tables cost per file (tools/gpu/tables.sh runs it on the GPU machine).
TABLE_COST := $(BUILD)/gpuprobe-table-cost
# What the verifier does with the BPF programs at every loader start (root).
VERIFIER_STATS := $(BUILD)/gpuprobe-verifier-stats
# The launch program's counters read from outside the loader (benchmarks, root).
BPF_COUNTERS := $(BUILD)/gpuprobe-bpf-counters
ALL_TARGETS := $(LOADER) $(CRC_HELPER) $(SHIM_SO) $(STUB_CUDA) $(STUB_CUPTI) $(PROGS) $(NOFP) $(KEYLIBS) \
	$(ENGINE_LIB) $(ENGINE_PROG) $(ENGINE_CASES) $(ENGINE_LATE) \
	$(TABLE_COST) $(VERIFIER_STATS) $(BPF_COUNTERS)

.PHONY: all static test test-bpf test-tsan test-asan check deps deps-test demo fuzz \
	fuzz-smoke tools-check install clean cuda-check unit-tests bpf-tests soak

all: $(ALL_TARGETS)

# ---------------------------------------------------------------- CUDA headers
cuda-check:
	@test -f $(CUDA_HOME)/include/cupti.h -a -f $(CUDA_HOME)/include/cuda.h || \
	{ echo "error: CUDA headers not found under CUDA_HOME=$(CUDA_HOME) (need include/cuda.h and include/cupti.h); install the CUDA toolkit or pass CUDA_HOME=/path" >&2; exit 1; }

# ---------------------------------------------------------------- BPF
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c | $(BUILD)/bpf
	$(call msg,BPF,$@)
	$(Q)$(BPF_CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
		-Ivmlinux/$(ARCH) -I. $(BPF_EXTRA) -MMD -MP -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf:
	$(Q)mkdir -p $@

# ---------------------------------------------------------------- C objects
# User-space objects may include a skeleton; the first build needs them all
# generated before compiling (order-only); -MMD tracks them afterwards.
$(BUILD)/obj/%.o: %.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(if $(filter nvidia/% stub/% tests/%,$<),$(CUDA_CPPFLAGS)) -c $< -o $@

$(NVIDIA_OBJS) $(call obj,$(CRC_HELPER_SRCS)) $(STUB_CUDA_OBJS) $(STUB_CUPTI_OBJS): | cuda-check

$(CRC_HELPER): $(call obj,$(CRC_HELPER_SRCS))
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS_SAN) -o $@ $^ -ldl

# The shim is injected into programs we do not own: hide everything but
# InitializeInjection, and link nothing but libc's family.
$(SHIM_SO): $(SHIM_CORE_OBJS) $(NVIDIA_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -fvisibility=hidden $(if $(SAN),,-Wl,--no-undefined -Wl,-z,defs) \
		-Wl,--version-script=nvidia/shim.map $(LDFLAGS_SAN) -o $@ $^ -ldl -lpthread

$(CORE_LIB): $(USER_LIB_OBJS) $(SHIM_CORE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# What --version prints: the commit built (git describe), "unknown" outside a
# clone; version.h is rewritten only when that changes, so main.o rebuilds then.
VERSION_H := $(BUILD)/gen/version.h
GP_VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(VERSION_H): FORCE
	$(Q)mkdir -p $(@D)
	$(Q)v='#define GP_VERSION "$(GP_VERSION)"'; [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" >$@
$(call obj,$(USER_MAIN)): $(VERSION_H)
$(call obj,$(USER_MAIN)): CPPFLAGS_COMMON += -I$(BUILD)/gen
.PHONY: FORCE
FORCE:

$(LOADER): $(call obj,$(USER_MAIN)) $(CORE_LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS_SAN) -o $@ $^ $(LIBBPF_LIBS) $(SYS_LIBS)

$(TABLE_COST): $(call obj,tools/table_cost.c) $(CORE_LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS_SAN) -o $@ $^ $(LIBBPF_LIBS) $(SYS_LIBS)

$(VERIFIER_STATS): $(call obj,tools/verifier_stats.c)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS_SAN) -o $@ $^ $(LIBBPF_LIBS) $(SYS_LIBS)

$(BPF_COUNTERS): $(call obj,tools/bpf_counters.c)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS_SAN) -o $@ $^ $(LIBBPF_LIBS) $(SYS_LIBS)

static: $(LOADER_STATIC) $(BUILD)/static/gpuprobe-table-cost $(BUILD)/static/gpuprobe-bpf-counters \
	$(BUILD)/static/gpuprobe-crc
# The CRC helper dlopens libcupti, so it stays dynamic (libc only); the loader
# finds it beside itself, and without it names cubins by zlib's CRC, which
# CUPTI's PC samples do not carry.
$(BUILD)/static/gpuprobe-crc: $(CRC_HELPER)
	$(call msg,CP,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cp $< $@
$(LOADER_STATIC): $(call obj,$(USER_MAIN)) $(CORE_LIB)
$(BUILD)/static/gpuprobe-table-cost: $(call obj,tools/table_cost.c) $(CORE_LIB)
$(BUILD)/static/gpuprobe-bpf-counters: $(call obj,tools/bpf_counters.c)
$(LOADER_STATIC) $(BUILD)/static/gpuprobe-table-cost $(BUILD)/static/gpuprobe-bpf-counters:
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -static -o $@ $^ $(STATIC_LIBS) -Wl,-Bstatic $(SYS_LIBS)

# ---------------------------------------------------------------- stub vendor
$(STUB_CUDA): $(STUB_CUDA_OBJS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libcuda.so.1 $(LDFLAGS_SAN) -o $@ $^ -ldl -lpthread
	$(Q)ln -sf libcuda.so.1 $(BUILD)/stub/libcuda.so

$(STUB_CUPTI): $(STUB_CUPTI_OBJS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libcupti.so $(LDFLAGS_SAN) -o $@ $^ -ldl -lpthread

# Test workloads link the stub driver the way real programs link libcuda.
$(BUILD)/tests/progs/%: $(BUILD)/obj/tests/progs/%.o $(STUB_CUDA)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_SAN) -o $@ $< -L$(BUILD)/stub -l:libcuda.so.1 \
		-Wl,-rpath,'$$ORIGIN/../../stub' -lpthread

NOFP_CFLAGS := -O2 -g0 -fomit-frame-pointer -fasynchronous-unwind-tables -Wall -Wextra -Werror \
	$(CUDA_CPPFLAGS) $(EXTRA_CFLAGS)
$(BUILD)/tests/progs/libgp_nofp_b.so: tests/progs/nofp/nofp_b.c tests/progs/nofp/nofp.h $(STUB_CUDA)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(NOFP_CFLAGS) -fPIC -shared -o $@ $< -L$(BUILD)/stub -l:libcuda.so.1
$(BUILD)/tests/progs/libgp_nofp_a.so: tests/progs/nofp/nofp_a.c tests/progs/nofp/nofp.h \
		$(BUILD)/tests/progs/libgp_nofp_b.so
	$(call msg,LD,$@)
	$(Q)$(CC) $(NOFP_CFLAGS) -fPIC -shared -o $@ $< -L$(@D) -lgp_nofp_b -Wl,-rpath,'$$ORIGIN' -lpthread
$(NOFP): tests/progs/nofp/main.c tests/progs/cubin.h $(NOFP_LIBS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(NOFP_CFLAGS) $(LDFLAGS_SAN) -o $@ $< -L$(@D) -lgp_nofp_a -lgp_nofp_b -L$(BUILD)/stub \
		-l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -Wl,-rpath,'$$ORIGIN/../../stub' -lpthread

$(BUILD)/tests/progs/libgp_keys_big.so: tests/progs/keylib/keylib.c tests/progs/keylib/fill.S $(STUB_CUDA)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -fPIC -shared -Wall -Wextra -Werror $(CUDA_CPPFLAGS) -DKEYLIB_SITE=keylib_big_site \
		-DKEYLIB_FILL=60000 -o $@ tests/progs/keylib/keylib.c tests/progs/keylib/fill.S \
		-L$(BUILD)/stub -l:libcuda.so.1

$(BUILD)/tests/progs/libgp_keys_%.so: tests/progs/keylib/keylib.c $(STUB_CUDA)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -fPIC -shared -Wall -Wextra -Werror $(CUDA_CPPFLAGS) -DKEYLIB_SITE=keylib_$*_site \
		-o $@ $< -L$(BUILD)/stub -l:libcuda.so.1

ENGINE_CFLAGS := -std=gnu11 -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $(CUDA_CPPFLAGS) \
	$(EXTRA_CFLAGS)
$(ENGINE_LIB): tests/progs/engine/engine.c tests/progs/engine/engine.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ENGINE_CFLAGS) -fPIC -shared -Wl,-soname,libtorch_cpu.so -o $@ $< -lpthread
$(ENGINE_PROG): tests/progs/engine/main.c tests/progs/engine/prog.h tests/progs/engine/base.h tests/progs/engine/engine.h tests/progs/cubin.h \
		tests/progs/args.h $(ENGINE_LIB) $(STUB_CUDA)
	$(call msg,LD,$@)
	$(Q)$(CC) $(ENGINE_CFLAGS) -I. $(LDFLAGS_SAN) -o $@ $< -L$(@D) -l:libtorch_cpu.so -L$(BUILD)/stub \
		-l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -Wl,-rpath,'$$ORIGIN/../../stub' -lpthread
$(ENGINE_LATE): tests/progs/engine/late.c tests/progs/engine/base.h tests/progs/engine/engine.h tests/progs/cubin.h $(ENGINE_LIB) $(STUB_CUDA)
	$(call msg,LD,$@)
	$(Q)$(CC) $(ENGINE_CFLAGS) -I. $(LDFLAGS_SAN) -o $@ $< -L$(BUILD)/stub -l:libcuda.so.1 -ldl \
		-Wl,-rpath,'$$ORIGIN' -Wl,-rpath,'$$ORIGIN/../../stub' -lpthread
$(ENGINE_CASES): tests/progs/engine/cases.c tests/progs/engine/prog.h tests/progs/engine/base.h tests/progs/engine/engine.h tests/progs/cubin.h \
		tests/progs/args.h $(ENGINE_LIB) $(STUB_CUDA)
	$(call msg,LD,$@)
	$(Q)$(CC) $(ENGINE_CFLAGS) -I. $(LDFLAGS_SAN) -o $@ $< -L$(@D) -l:libtorch_cpu.so -L$(BUILD)/stub \
		-l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -Wl,-rpath,'$$ORIGIN/../../stub' -lpthread

# ---------------------------------------------------------------- tests
TEST_LIBS := -lcmocka $(LIBBPF_LIBS) $(SYS_LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(CORE_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_SAN) -o $@ $< $(CORE_LIB) $(TEST_LIBS)

# The CUPTI adapter's parts that run no CUPTI (its headers only), tested alone.
NVIDIA_PURE_OBJS := $(call obj,nvidia/decode.c nvidia/cbids.c)
$(BUILD)/tests/test_decode: $(BUILD)/obj/tests/test_decode.o $(NVIDIA_PURE_OBJS) $(CORE_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_SAN) -o $@ $< $(NVIDIA_PURE_OBJS) $(CORE_LIB) $(TEST_LIBS)

unit-tests: $(UNIT_TESTS) $(ALL_TARGETS)
	$(Q)tools/run-tests.sh $(TEST_SUITE) $(BUILD) $(UNIT_TESTS)

test: unit-tests

BPF_E2E := $(sort $(wildcard tests/bpf/e2e_*.sh))
SPEEDSCOPE := $(BUILD)/browser/node_modules/speedscope/dist/release/index.html
bpf-tests: $(BPF_TESTS) $(ALL_TARGETS) $(SPEEDSCOPE)
	$(Q)tools/run-tests.sh bpf $(BUILD) $(BPF_TESTS) $(BPF_E2E)

# Not root: each BPF test is reported skipped, by name (make check's total counts them).
test-bpf:
	$(Q)if [ "$$(id -u)" != 0 ]; then \
		tools/run-tests.sh --skip "needs root (BPF programs and uprobes): sudo make test-bpf" \
			bpf $(BUILD) $(BPF_TESTS) $(BPF_E2E); \
	else $(MAKE) --no-print-directory bpf-tests; fi

test-tsan:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan SAN=thread TEST_SUITE=tsan unit-tests

test-asan:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SAN=address TEST_SUITE=asan unit-tests

# ---------------------------------------------------------------- fuzzers
# The loader's code is compiled once for all fuzzers (instrumented for
# coverage, ASan and UBSan) into one archive; each fuzzer is its own target
# file linked with it and libFuzzer's main.
FUZZ_BUILD := $(BUILD)/fuzz
FUZZ_SAN := address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := $(CPPFLAGS_COMMON) $(CUDA_CPPFLAGS) -std=gnu11 -g -O1 $(WARN) -MMD -MP \
	-fsanitize=fuzzer-no-link,$(FUZZ_SAN)
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(USER_LIB_SRCS) $(SHIM_CORE_SRCS))
FUZZ_LIB := $(FUZZ_BUILD)/libgpuprobe-fuzz.a

$(FUZZ_BUILD)/obj/%.o: %.c | $(SKELS) cuda-check
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZERS): $(FUZZ_BUILD)/%: $(FUZZ_BUILD)/obj/tests/fuzz/%.o $(FUZZ_LIB)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) -fsanitize=fuzzer,$(FUZZ_SAN) -o $@ $< $(FUZZ_LIB) $(LIBBPF_LIBS) $(SYS_LIBS)

FUZZ_SECONDS ?= 20
fuzz-smoke: $(FUZZERS)
	$(Q)tools/run-fuzzers.sh 5 $(FUZZERS)
fuzz: $(FUZZERS)
	$(Q)tools/run-fuzzers.sh $(FUZZ_SECONDS) $(FUZZERS)

# ---------------------------------------------------------------- the rest
tools-check: $(SHIM_SO)
	$(Q)tools/run-tests.sh tools $(BUILD) "tools/check-portable-elf $(SHIM_SO)" tools/check-cubin-defer \
		tools/check-pc-unload tools/check-ablate-patch tools/check-window-ratio tools/check-syntax

deps:
	$(Q)tools/deps.sh
deps-test:
	$(Q)tools/deps.sh test

# The viewer the browser test opens timelines in (tests/bpf/e2e_browser.sh),
# from npm at the version tests/browser/package-lock.json pins.
$(SPEEDSCOPE): tests/browser/package.json tests/browser/package-lock.json
	$(call msg,NPM,$(BUILD)/browser)
	$(Q)mkdir -p $(BUILD)/browser && cp $^ $(BUILD)/browser/
	$(Q)cd $(BUILD)/browser && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	$(Q)touch $@

# Every runner records each test's verdict (pass, fail, skip) in GP_SUMMARY
# (tools/testlib.sh); every stage runs even after one failed (a stage that
# fails before its runner starts, a build error, is recorded as a failure);
# one total closes the run, and its exit status says whether anything failed
# or was skipped on a machine that can run every test (tools/check-summary.sh).
# Builds run NPROC jobs at a time; tests one at a time.
CHECK_STAGE = tools/check-stage.sh
SUB_MAKE = $(MAKE) --no-print-directory -j$(NPROC)
check: export GP_SUMMARY = $(abspath $(BUILD))/check-summary
check: deps-test
	$(Q)mkdir -p $(BUILD) && rm -f $(GP_SUMMARY)
	$(Q)$(CHECK_STAGE) build $(SUB_MAKE) all
	$(Q)$(CHECK_STAGE) unit $(SUB_MAKE) test
	$(Q)$(CHECK_STAGE) bpf $(SUB_MAKE) test-bpf
	$(Q)$(CHECK_STAGE) tsan $(SUB_MAKE) test-tsan
	$(Q)$(CHECK_STAGE) asan $(SUB_MAKE) test-asan
	$(Q)$(CHECK_STAGE) fuzz $(SUB_MAKE) fuzz-smoke
	$(Q)$(CHECK_STAGE) tools $(SUB_MAKE) tools-check
	$(Q)tools/check-summary.sh $(GP_SUMMARY)

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/demo.sh $(BUILD)

# Not in check: 30 minutes of the stub workload under --all-cgroups --interval
# (SOAK_MINUTES, SOAK_PROCS, SOAK_OUT pass through the environment).
soak: $(ALL_TARGETS)
	$(Q)tools/soak.sh $(BUILD)

install: $(LOADER) $(SHIM_SO) $(CRC_HELPER)
	install -D -m 0755 $(LOADER) $(DESTDIR)$(PREFIX)/bin/gpuprobe-bpf
	install -D -m 0644 $(SHIM_SO) $(DESTDIR)$(PREFIX)/lib/gpuprobe/libgpuprobe_shim.so
	install -D -m 0755 $(CRC_HELPER) $(DESTDIR)$(PREFIX)/lib/gpuprobe/gpuprobe-crc

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
