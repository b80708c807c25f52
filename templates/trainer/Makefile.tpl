# Builds the ${gen.name} trainer (host backend): `make` -> ./train
#   make clean; make DEBUG=1    -O1 -g (run with ZR_DEBUG_MEM=1: arena guards, released slots poisoned)
#   make cuda       train-cuda, the CUDA backend (make cuda-emu: its CPU stand-in build)
#   make SOLO=1 / make cuda SOLO=1   one process, no Open MPI needed (runtime/solo/mpi.h; world size 1)
#   make bundle     bundle/: train-cuda, lib/, run.sh, NEEDS.txt for a GPU node with only the NVIDIA
#                   driver (docs/GPU_BUNDLE.md; BUNDLE_STATIC, BUNDLE_CUDA_LIBS, BUNDLE_DIR)
#   make clean
# Overridable: ZGEN_ROOT (the zgen checkout whose runtime/ and build/libzrt.a are used), CC, OPT,
# CWARN, EXTRA_CFLAGS, EXTRA_LDFLAGS, MPI_CFLAGS/MPI_LIBS, BLAS_LIBS, URING_LIBS.

ZGEN_ROOT ?= ${cfmt.make_path(gen.root)}
ZRT       := $(ZGEN_ROOT)/build/libzrt.a

# SOLO=1: libzrt's one-process build (the MPI calls answered in-process for a world of 1), so a
# one-GPU or one-CPU run builds and starts where Open MPI is not installed.
ifeq ($(SOLO),1)
ZRT        := $(ZGEN_ROOT)/build/solo/libzrt.a
MPI_CFLAGS := -I$(ZGEN_ROOT)/runtime/solo
MPI_LIBS   :=
endif

OPT   ?= -O3 -march=native
CWARN ?= -Wall -Wextra
ifeq ($(DEBUG),1)
OPT   := -O1 -g -march=native
endif

# MPI through pkg-config's ompi-c; without it, the mpicc wrapper.
ifeq ($(origin MPI_LIBS),undefined)
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null)
ifeq ($(strip $(MPI_LIBS)),)
CC := mpicc
endif
endif
BLAS_CFLAGS ?= $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   ?= $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
URING_LIBS  ?= $(shell pkg-config --libs liburing 2>/dev/null || echo -luring)

CFLAGS = -std=c11 $(OPT) -fno-math-errno -fopenmp -D_GNU_SOURCE $(CWARN) \
         -I. -I$(ZGEN_ROOT)/runtime $(MPI_CFLAGS) $(BLAS_CFLAGS) $(EXTRA_CFLAGS)
LDLIBS = $(ZRT) $(URING_LIBS) $(MPI_LIBS) $(BLAS_LIBS) -fopenmp -lm -lpthread $(EXTRA_LDFLAGS)

@@ local gen_cuda_missing = plan.model.cuda_missing and plan.model.cuda_missing:gsub("'", "")
SRCS =
@@ for _, f in ipairs(gen.sources) do
SRCS += ${f}
@@ end
OBJS = $(SRCS:.c=.o)
HDRS = $(wildcard *.h) $(wildcard $(ZGEN_ROOT)/runtime/*.h)

.PHONY: all cuda cuda-emu clean zrt
all: train

train: $(OBJS) $(ZRT)
	$(CC) $(CFLAGS) -o $@ $(OBJS) $(LDLIBS)

%.o: %.c $(HDRS)
	$(CC) $(CFLAGS) -c $< -o $@

# libzrt comes from the zgen checkout; `make zrt` rebuilds it there.
$(ZRT):
	$(MAKE) -C $(ZGEN_ROOT) $(patsubst $(ZGEN_ROOT)/%,%,$(ZRT))
zrt:
	$(MAKE) -C $(ZGEN_ROOT) $(patsubst $(ZGEN_ROOT)/%,%,$(ZRT))

@@ if gen_cuda_missing then
# ---- the CUDA backend: not for arch ${plan.model.arch} (zgen decided it from its arch table)
cuda cuda-emu train-cuda train-cuda-emu bundle:
	@echo 'make $@: no train-cuda for arch ${plan.model.arch}: ${gen_cuda_missing}' >&2; exit 1

@@ else
# ---- the CUDA backend (docs/CUDA_TRAINER.md): the host trainer's files plus cuda/trainer/.
#   make cuda       train-cuda: driver API (libcuda opened at run time) + cuBLAS + NCCL (CUDA_HOME;
#                   builds and starts without a GPU)
#   make cuda-emu   train-cuda-emu: the same orchestration on the GPU stand-in (CPU, no CUDA)
# The host files are compiled as they are; only the backend table differs: cuda_main.c's
# (tr_build_backend) in place of train_backend_host.c's, which these builds leave out.
CUDA_HOME ?= /usr/local/cuda
CXX       ?= g++
CZ_HOST   = $(filter-out train_backend_host.c,$(SRCS))
CZ_SRCS   = cuda/trainer/cuda_exec.c cuda/trainer/cuda_spec.c cuda/trainer/cuda_norm.c cuda/trainer/cuda_model.c cuda/trainer/${plan.model.cuda_adapter} \
            cuda/trainer/cuda_main.c \
            cuda/zg_kernels_bin.c
CZ_HDRS   = $(HDRS) $(wildcard cuda/trainer/*.h cuda/*.h) cuda/kernels/zk_shapes.h

cuda-emu.obj/host/%.o: %.c $(CZ_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
cuda-emu.obj/%.o: %.c $(CZ_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Icuda/trainer -c $< -o $@
cuda-emu.obj/zr_gpu_emu.o: cuda/trainer/zr_gpu_emu.cpp $(wildcard cuda/trainer/zr_gpu_emu*.h) $(wildcard cuda/kernels/*) cuda/zr_simt.h
	@mkdir -p $(@D)
	$(CXX) -std=c++17 $(OPT) -fno-math-errno -ffp-contract=off -Wall -Wextra -Icuda -I$(ZGEN_ROOT)/runtime \
	  $(MPI_CFLAGS) $(BLAS_CFLAGS) -c $< -o $@
train-cuda-emu: $(CZ_HOST:%.c=cuda-emu.obj/host/%.o) $(CZ_SRCS:%.c=cuda-emu.obj/%.o) cuda-emu.obj/zr_gpu_emu.o $(ZRT)
	$(CXX) $(OPT) -o $@ $(filter %.o,$^) $(LDLIBS)
cuda-emu: train-cuda-emu

# real: libzrt rebuilt with NCCL, runtime/zr_gpu_cuda.c for the driver API and cuBLAS
CUDA_CFLAGS = -DZR_WITH_CUDA -DZR_WITH_NCCL -I$(CUDA_HOME)/include
CUDA_LIBS   = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart -lnccl -ldl
CZ_RT_SRCS  = $(wildcard $(ZGEN_ROOT)/runtime/*.c)
ifeq ($(SOLO),1)
CZ_RT_SRCS += $(ZGEN_ROOT)/runtime/solo/zr_mpi_solo.c
endif
cuda.obj/host/%.o: %.c $(CZ_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
cuda.obj/%.o: %.c $(CZ_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Icuda/trainer -c $< -o $@
cuda.obj/zrt/%.o: $(ZGEN_ROOT)/runtime/%.c $(wildcard $(ZGEN_ROOT)/runtime/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CUDA_CFLAGS) -c $< -o $@
train-cuda: $(CZ_HOST:%.c=cuda.obj/host/%.o) $(CZ_SRCS:%.c=cuda.obj/%.o) $(CZ_RT_SRCS:$(ZGEN_ROOT)/runtime/%.c=cuda.obj/zrt/%.o)
	$(CC) $(CFLAGS) -o $@ $^ $(URING_LIBS) $(MPI_LIBS) $(BLAS_LIBS) $(CUDA_LIBS) \
	  -fopenmp -lm -lpthread $(EXTRA_LDFLAGS)
cuda: train-cuda

# the plan's world size decides SOLO (one rank: no MPI in the bundle)
.PHONY: bundle
bundle:
	ZGEN_ROOT=$(ZGEN_ROOT) bash $(ZGEN_ROOT)/scripts/trainer_bundle.sh . ${cfmt.int(plan.model.world_size)}

@@ end
clean:
	rm -rf train $(OBJS) train-cuda train-cuda-emu cuda.obj cuda-emu.obj bundle
