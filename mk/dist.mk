# mk/dist.mk — MPI for data-parallel training (`ramtrace train --dist`,
# core/train/rn_dist.c): Debian's OpenMPI (libopenmpi-dev, openmpi-bin;
# scripts/setup installs them).  The flags come from pkg-config's ompi-c,
# looked up once, when first needed (after scripts/setup has run); without
# it the build stops with one line saying what to install.
MPI_CFLAGS = $(eval MPI_CFLAGS := $(call mpi_pc,--cflags))$(MPI_CFLAGS)
MPI_LIBS   = $(eval MPI_LIBS := $(call mpi_pc,--libs))$(MPI_LIBS)
mpi_pc = $(or $(shell pkg-config $(1) ompi-c 2>/dev/null),$(error OpenMPI not found (pkg-config ompi-c): run scripts/setup, which installs libopenmpi-dev and openmpi-bin))

CFLAGS += $(MPI_CFLAGS)
LDLIBS += $(MPI_LIBS)

# 2 ranks x 1 thread against 1 process x 2 threads (bench/bench_dist.sh).
.PHONY: bench-dist
bench-dist: setup $(BIN)
	bench/bench_dist.sh $(BIN)
