# Builds the ${gen.name} trainer (host backend): `make` -> ./train
#   make clean; make DEBUG=1    -O1 -g (run with ZR_DEBUG_MEM=1: arena guards, released slots poisoned)
#   make cuda       the CUDA backend (not generated yet)
#   make clean
# Overridable: ZGEN_ROOT (the zgen checkout whose runtime/ and build/libzrt.a are used), CC, OPT,
# CWARN, EXTRA_CFLAGS, EXTRA_LDFLAGS, MPI_CFLAGS/MPI_LIBS, BLAS_LIBS, URING_LIBS.

ZGEN_ROOT ?= ${cfmt.make_path(gen.root)}
ZRT       := $(ZGEN_ROOT)/build/libzrt.a

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

SRCS =
@@ for _, f in ipairs(gen.sources) do
SRCS += ${f}
@@ end
OBJS = $(SRCS:.c=.o)
HDRS = $(wildcard *.h) $(wildcard $(ZGEN_ROOT)/runtime/*.h)

.PHONY: all cuda clean zrt
all: train

train: $(OBJS) $(ZRT)
	$(CC) $(CFLAGS) -o $@ $(OBJS) $(LDLIBS)

%.o: %.c $(HDRS)
	$(CC) $(CFLAGS) -c $< -o $@

# libzrt comes from the zgen checkout; `make zrt` rebuilds it there.
$(ZRT):
	$(MAKE) -C $(ZGEN_ROOT) build/libzrt.a
zrt:
	$(MAKE) -C $(ZGEN_ROOT) build/libzrt.a

cuda:
	@echo "make cuda: the CUDA backend of ${gen.name} is not generated yet; 'make' builds the host backend." >&2
	@exit 1

clean:
	rm -f train $(OBJS)
