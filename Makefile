# zgen — top-level build.
#   make          build bin/zgen and build/libzrt.a
#   make test     install what is missing, build everything, run tests/run.sh
#                 (ends with "N passed, N failed, N skipped")
#   make check    the quick tier (< 3 minutes): unit tests, fast generator tests, one trainer per backend
#   make demo     install what is missing, generate specs/tiny, build it, train on 2 ranks
#                 (ZeRO-3, NVMe + CPU offload)
#   make demo-llama   the same with specs/llama-tiny (arch llama)
#   make demo-finetune  fine-tune a tiny LLaMA folder on JSONL data (zgen data, 2 ranks, export)
#   make bench    run the benchmarks; figures go to bench/out/results.jsonl
#   make bundle   gpu/bundle.tar.gz: the GPU checks for a lent GPU machine (docs/GPU_BUNDLE.md)
#   make golden   refresh golden outputs under tests/gen/golden
# Strict warnings as Lua's makefile; -Werror always (CI and developers alike).

CC      ?= cc
MPICC   ?= mpicc
OPT     ?= -O2
WARN    := -Wall -Wextra -Werror -Wshadow -Wundef -Wwrite-strings -Wstrict-prototypes \
           -Wmissing-prototypes
CFLAGS  := -std=c11 $(OPT) -g -D_GNU_SOURCE $(WARN) -fno-math-errno
DEPFLAGS = -MMD -MP

PKGS_GEN := yaml-0.1 lua5.4
PKGS_RT  := liburing ompi-c
GEN_CFLAGS := $(shell pkg-config --cflags $(PKGS_GEN) 2>/dev/null)
GEN_LIBS   := $(shell pkg-config --libs $(PKGS_GEN) 2>/dev/null) -lm
RT_CFLAGS  := $(shell pkg-config --cflags $(PKGS_RT) 2>/dev/null) -fopenmp
RT_LIBS    := $(shell pkg-config --libs $(PKGS_RT) 2>/dev/null) -fopenmp -lm -lpthread

GEN_SRC  := $(sort $(wildcard gen/*.c))
GEN_OBJ  := $(GEN_SRC:%.c=build/%.o)
GEN_LIB_OBJ := $(filter-out build/gen/main.o build/gen/ckpt.o,$(GEN_OBJ))
RT_SRC   := $(sort $(wildcard runtime/*.c))
RT_OBJ   := $(RT_SRC:%.c=build/%.o)

# Tests: tests/<area>/t_*.c are run by tests/run.sh; x_*.c are helpers (built, run by a t_*.sh).
TGEN_SRC := $(sort $(wildcard tests/gen/[tx]_*.c))
TRT_SRC  := $(sort $(wildcard tests/runtime/[tx]_*.c))
TTR_SRC  := $(sort $(wildcard tests/trainer/[tx]_*.c))
TCU_SRC  := $(sort $(wildcard tests/cuda/[tx]_*.cpp))
TCU_BIN  := $(TCU_SRC:tests/%.cpp=bin/tests/%)
TGEN_BIN := $(TGEN_SRC:tests/%.c=bin/tests/%)
TRT_BIN  := $(TRT_SRC:tests/%.c=bin/tests/%)
TTR_BIN  := $(TTR_SRC:tests/%.c=bin/tests/%)
BENCH_SRC := $(sort $(wildcard bench/b_*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=bin/bench/%)

.PHONY: all test test-build test-run demo demo-run demo-llama demo-finetune bench golden clean deps
all: bin/zgen build/libzrt.a

deps:
	bash scripts/install-deps.sh

build/gen/%.o: gen/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(GEN_CFLAGS) -c $< -o $@

build/runtime/%.o: runtime/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(RT_CFLAGS) -c $< -o $@

# `zgen ckpt` (gen/ckpt.c) links the runtime's checkpoint and safetensors code from libzrt
bin/zgen: $(GEN_OBJ) build/libzrt.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(GEN_LIBS)

build/libzrt.a: $(RT_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

bin/tests/gen/%: tests/gen/%.c $(GEN_LIB_OBJ) tests/zt.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(GEN_CFLAGS) -Igen -Itests -o $@ $< $(GEN_LIB_OBJ) $(GEN_LIBS)

bin/tests/runtime/%: tests/runtime/%.c build/libzrt.a tests/zt.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(RT_CFLAGS) -Iruntime -Itests -o $@ $< build/libzrt.a $(RT_LIBS)

bin/tests/trainer/%: tests/trainer/%.c build/libzrt.a tests/zt.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(RT_CFLAGS) -Iruntime -Itests -o $@ $< build/libzrt.a $(RT_LIBS) -lopenblas

# The llama host kernels live in templates/host/llama/ (emitted for arch llama); they include zk_host.h.
bin/tests/trainer/x_llama_kernels: CFLAGS += -Itemplates/host
bin/tests/trainer/x_llama_kernels: $(wildcard templates/host/*.[ch] templates/host/llama/*.[ch])

# CUDA kernel sources compiled for the CPU through the SIMT emulation header (templates/cuda/zr_simt.h).
# The kernel tests compare with the host kernels: templates/host/*.c compiled as C (into
# build/tests/cuda/<test>/), linked with OpenBLAS and OpenMP, and with libzrt (the CPU Adam).
CXX ?= g++
TCU_HOST_SRC := $(sort $(wildcard templates/host/*.c))
TCU_DEPS := $(wildcard templates/cuda/kernels/* templates/host/*.h tests/cuda/*.h)
# zr_simt.h's shared-memory race checker: GCC instruments every load and store of the kernel source
# (-fsanitize=thread at compile time only; zr_simt.h defines the hooks, no TSan runtime is linked).
TCU_RACE := -fsanitize=thread --param tsan-instrument-func-entry-exit=0
# t_gpu_race tests the stream stand-in (std::atomic inside, whose instrumented forms need the real TSan
# runtime), not a kernel: it is built without the instrumentation.
bin/tests/cuda/t_gpu_race: TCU_RACE :=
bin/tests/cuda/t_gpu_gemm_ex: TCU_RACE :=
bin/tests/cuda/t_gpu_gemm_lt: TCU_RACE :=
bin/tests/cuda/t_gpu_graph: TCU_RACE :=
bin/tests/cuda/t_gpu_gemm_lt bin/tests/cuda/t_gpu_gemm_ex bin/tests/cuda/t_gpu_race bin/tests/cuda/t_gpu_graph: $(wildcard templates/cuda_trainer/zr_gpu_emu*)
bin/tests/cuda/t_gpu_gemm_ex bin/tests/cuda/t_gpu_gemm_lt: tests/cuda/zk_coll_stubs.h
bin/tests/cuda/t_gpu_tf32: TCU_RACE :=
bin/tests/cuda/t_gpu_tf32: $(wildcard templates/cuda_trainer/zr_gpu_emu*) tests/cuda/zk_coll_stubs.h
# The host kernels are compiled once for all the kernel tests (build/tests/cuda/host/, the flags
# the same for each; build/flavor rebuilds them when SAN changes).
TCU_HOST_OBJ = $(TCU_HOST_SRC:templates/host/%.c=build/tests/cuda/host/%.o)
build/tests/cuda/host/%.o: templates/host/%.c $(wildcard templates/host/*.h templates/host/*/*.h) build/flavor
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fopenmp -Itemplates/host -c $< -o $@
bin/tests/cuda/%: tests/cuda/%.cpp templates/cuda/zr_simt.h tests/zt.h $(TCU_HOST_OBJ) $(TCU_DEPS) build/libzrt.a
	@mkdir -p $(@D) build/tests/cuda/$*
	$(CXX) -std=c++17 $(OPT) -g -Wall -Wextra -Werror -fno-math-errno -fopenmp $(if $(TCU_RACE),,$(SAN_CXX)) -Itests -Itemplates/cuda \
	  -Itemplates/host -Iruntime $(TCU_RACE) -c -o build/tests/cuda/$*/$*.o $<
	$(CXX) -fopenmp $(SAN_CXX) -o $@ build/tests/cuda/$*/$*.o $(TCU_HOST_OBJ) build/libzrt.a -lopenblas -lm
# The llama kernel tests (t_k_llama_*) compare with the llama host kernels as well (templates/host/llama/).
TCU_LLAMA := $(patsubst tests/%.cpp,bin/tests/%,$(wildcard tests/cuda/t_k_llama_*.cpp))
$(TCU_LLAMA): build/tests/cuda/host/llama/llama_host.o templates/host/llama/llama_host.h
$(TCU_LLAMA): TCU_HOST_SRC += templates/host/llama/llama_host.c

bin/bench/%: bench/%.c build/libzrt.a $(GEN_LIB_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(RT_CFLAGS) $(GEN_CFLAGS) -Iruntime -Igen -o $@ $< build/libzrt.a $(GEN_LIB_OBJ) $(RT_LIBS) $(GEN_LIBS)

# The calibration tool (writes a `host` hardware profile for zgen --predict; docs/PREDICT.md): not a
# benchmark (bench/run.sh runs only b_*), linked with OpenBLAS like the host kernels.
# It times the host kernels themselves (templates/host/*.c, compiled into build/bench/host/ with the
# emitted trainer's optimisation flags, templates/trainer/Makefile.tpl's OPT).
CAL_HOST_OBJ := $(TCU_HOST_SRC:templates/host/%.c=build/bench/host/%.o)
build/bench/host/%.o: templates/host/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -O3 -march=native -fopenmp -c $< -o $@
bin/bench/calibrate: bench/calibrate.c build/libzrt.a $(GEN_LIB_OBJ) $(CAL_HOST_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(RT_CFLAGS) $(GEN_CFLAGS) -Iruntime -Igen -Itemplates/host -o $@ $< $(CAL_HOST_OBJ) build/libzrt.a $(GEN_LIB_OBJ) $(RT_LIBS) $(GEN_LIBS) -lopenblas
# Every benchmark includes bench/zb.h (the shared clock, median and result line).
$(BENCH_BIN) bin/bench/calibrate: bench/zb.h
# The runtime tests that need scratch files include tests/zt_tmp.h.
$(TRT_BIN): tests/zt_tmp.h

# `make test` and `make demo` are the README's two set-up commands: each first installs what a fresh
# machine lacks (the same idempotent script CI uses), then re-runs make, because the pkg-config flags
# above are read when make starts and a package installed meanwhile would not be seen.
test:
	@bash scripts/install-deps.sh
	@$(MAKE) --no-print-directory -j$(or $(JOBS),1) test-build
	@$(MAKE) --no-print-directory test-run

# TESTS=FILTER runs only the tests whose path holds FILTER (e.g. make test-run SAN=1 TESTS=tests/cuda).
# `make test` and `make check` run JOBS tests at a time (tests/run.sh -j; default 2, the cores of the
# machine they are timed on; JOBS=1 runs one after another). The emitted trainers the tests build are
# reused from build/trainer-cache/ (tests/zt_make, tests/zt_cc; ZT_CACHE=0 builds each for real).
# `make test` builds what the tests need JOBS at a time first (test-build; build/solo too, so that no
# test builds a shared top-level target while others run), then runs them (test-run, a make without
# -j: the tests' own make calls then run outside any jobserver).
JOBS ?= 2
test-build: all $(TGEN_BIN) $(TRT_BIN) $(TTR_BIN) $(TCU_BIN) build/solo/libzrt.a
test-run: test-build
	@bash tests/run.sh $(if $(JOBS),-j $(JOBS)) $(TESTS)

# `make check`: the quick tier (under 3 minutes on the 2-core machine; `make test` runs everything):
# the generator and runtime unit tests, the fast generator scripts, the host kernels, one trainer per
# backend (t_e2e: host, 2 MPI ranks; t_gpu_stub: the CUDA trainer's host side on a stub driver) and
# two CUDA kernels under the SIMT emulation. JOBS=N runs N at a time (tests/run.sh -j; default 2).
CHECK_TESTS := $(TGEN_SRC:tests/%.c=bin/tests/%) $(TRT_SRC:tests/%.c=bin/tests/%) \
  tests/gen/t_bias_correction.sh tests/gen/t_bounds.sh tests/gen/t_cli.sh tests/gen/t_deps.sh tests/gen/t_fit_advice.sh \
  tests/gen/t_headroom.sh tests/gen/t_interrupt.sh tests/gen/t_llama_cli.sh tests/gen/t_nvme_files.sh \
  tests/gen/t_predict_cli.sh tests/gen/t_render.sh tests/gen/t_spec_from_hf.sh tests/gen/t_tf32.sh \
  tests/runtime/t_coll.sh bin/tests/trainer/t_kernels tests/trainer/t_parity.sh tests/trainer/t_e2e.sh \
  tests/cuda/t_gpu_stub.sh \
  bin/tests/cuda/t_simt bin/tests/cuda/t_k_elementwise
CHECK_BIN := $(filter bin/%,$(CHECK_TESTS))
.PHONY: check
check: all $(CHECK_BIN)
	@printf '%s\n' $(foreach t,$(CHECK_TESTS),$(if $(filter t_%,$(notdir $t)),$t)) | bash tests/run.sh $(if $(JOBS),-j $(JOBS)) --list -

bench: all $(BENCH_BIN)
	@bash bench/run.sh

demo:
	@bash scripts/install-deps.sh
	@$(MAKE) --no-print-directory demo-run

demo-run: all
	@bash scripts/demo.sh

# `make demo-llama`: the same chain on specs/llama-tiny.yaml (arch llama, grouped-query attention)
demo-llama:
	@bash scripts/install-deps.sh
	@$(MAKE) --no-print-directory all
	@DEMO_SPEC=specs/llama-tiny.yaml bash scripts/demo.sh

# `make demo-finetune`: the fine-tuning job (README "Fine-tuning"): a tiny LLaMA folder, JSONL data,
# bin/zgen data, ZeRO-2 with the optimizer on the CPU over 2 ranks, evaluation, export, generation
demo-finetune:
	@bash scripts/install-deps.sh
	@$(MAKE) --no-print-directory all
	@bash scripts/demo_finetune.sh

golden: bin/zgen
	@bash tests/gen/make_golden.sh

clean:
	rm -rf build bin out bench/out

-include $(GEN_OBJ:.o=.d) $(RT_OBJ:.o=.d)

# ---- Sanitizers and fuzzing (docs/RELIABILITY.md)
#   make test SAN=1   everything (generator, libzrt, unit tests, the emitted trainers the tests build)
#                     with ASan + UBSan, -fno-sanitize-recover=all. build/flavor records the flavour
#                     (and compiler); every object depends on it, so switching SAN rebuilds all and
#                     sanitized and plain objects never mix. The trainers get the flags through
#                     EXTRA_CFLAGS/EXTRA_LDFLAGS, which their Makefile already takes from the environment.
#   make fuzz         builds the libFuzzer harnesses of tests/fuzz/ (clang) into build/fuzz and bin/fuzz
#                     and runs each for FUZZ_SECONDS (default 60); crashes land in bin/fuzz/crashes/.
SAN ?= 0
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# the C++ kernel tests link C objects built with CFLAGS, so they link the same sanitizers; a test
# whose .cpp carries the race checker's -fsanitize=thread hooks (TCU_RACE) compiles without ASan,
# which cannot be combined with them
SAN_CXX := $(if $(filter 1,$(SAN)),$(SAN_FLAGS))
FLAVOR := $(if $(filter 1,$(SAN)),san,plain) $(CC)
ifeq ($(SAN),1)
CFLAGS   += $(SAN_FLAGS)
GEN_LIBS += $(SAN_FLAGS)
RT_LIBS  += $(SAN_FLAGS)
export EXTRA_CFLAGS  := $(EXTRA_CFLAGS) $(SAN_FLAGS)
export EXTRA_LDFLAGS := $(EXTRA_LDFLAGS) $(SAN_FLAGS)
# zgen frees nothing by design (a short-lived compiler) and MPI keeps its own allocations: leaks are
# not reported; every other error aborts the process with its stack.
export ASAN_OPTIONS  ?= detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
endif
.PHONY: FORCE fuzz fuzz-build
FORCE:
build/flavor: FORCE
	@mkdir -p $(@D)
	@echo '$(FLAVOR)' | cmp -s - $@ || echo '$(FLAVOR)' > $@
$(GEN_OBJ) $(RT_OBJ): build/flavor

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=c11 -O1 -g -D_GNU_SOURCE $(WARN) -fno-math-errno $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_HARN    := $(sort $(wildcard tests/fuzz/fz_*.c))
FUZZ_BIN     := $(FUZZ_HARN:tests/fuzz/%.c=bin/fuzz/%)
FUZZ_GEN_OBJ := $(GEN_LIB_OBJ:build/%=build/fuzz/%)
FUZZ_RT_OBJ  := $(RT_OBJ:build/%=build/fuzz/%)

build/fuzz/gen/%.o: gen/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(DEPFLAGS) $(GEN_CFLAGS) -c $< -o $@
build/fuzz/runtime/%.o: runtime/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(DEPFLAGS) $(RT_CFLAGS) -c $< -o $@
bin/fuzz/fz_spec: tests/fuzz/fz_spec.c tests/fuzz/fz_util.h $(FUZZ_GEN_OBJ)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(GEN_CFLAGS) -Igen -o $@ $< $(FUZZ_GEN_OBJ) $(GEN_LIBS)
bin/fuzz/%: tests/fuzz/%.c tests/fuzz/fz_util.h $(FUZZ_RT_OBJ)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(RT_CFLAGS) -Iruntime -o $@ $< $(FUZZ_RT_OBJ) $(RT_LIBS)
.SECONDARY: $(FUZZ_GEN_OBJ) $(FUZZ_RT_OBJ)
fuzz-build: $(FUZZ_BIN)
fuzz: fuzz-build
	@bash tests/fuzz/run.sh $(FUZZ_SECONDS)

-include $(FUZZ_GEN_OBJ:.o=.d) $(FUZZ_RT_OBJ:.o=.d)

# ---- One-process builds without MPI (runtime/solo/mpi.h, docs/GPU_BUNDLE.md)
#   build/solo/libzrt.a   libzrt compiled against the one-process MPI of runtime/solo; an emitted
#                         trainer built with `make SOLO=1` (or `make cuda SOLO=1`) links it and needs
#                         no Open MPI at build or run time
#   make bundle           gpu/: train-cuda built here for one GPU (SOLO, static OpenBLAS/liburing),
#                         the data, the predictions and gpu/run_checks.sh, the one script that runs
#                         every GPU check on a lent machine (scripts/bundle.sh)
SOLO_OBJ := $(RT_SRC:%.c=build/solo/%.o) build/solo/runtime/solo/zr_mpi_solo.o
build/solo/runtime/%.o: runtime/%.c build/flavor
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -Iruntime/solo -Iruntime $(RT_CFLAGS) -c $< -o $@
build/solo/libzrt.a: $(SOLO_OBJ)
	@rm -f $@ && ar rcs $@ $^
.PHONY: bundle
bundle: all build/solo/libzrt.a
	@bash scripts/bundle.sh
-include $(SOLO_OBJ:.o=.d)
