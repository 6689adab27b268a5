# gpu2bs: PGXS build. C++17 engine (src/core), PostgreSQL glue (src/pg), CUDA kernels (kernels/)
# when nvcc is found (set NVCC= to build CPU-only).
EXTENSION   = gpu2bs
MODULE_big  = gpu2bs
DATA        = $(sort $(wildcard sql/gpu2bs--*.sql))
PGFILEDESC  = "gpu2bs - two-body statistics on the GPU or every CPU core"

REGRESS      = setup sdh pair_count relation_forms simjoin errors parallel precision privileges customscan customscan_shapes pushdown cancel literals boundary postgis pairwise resolve pair_expressions dbscan dbscan_postgis planner_join planner_join_postgis admission rdf direct_scan xi periodic multigpu weights dbscan_customscan rdf_weighted direct_scan_pages agg_read pairwise_toast pairwise_pushdown
REGRESS_OPTS = --inputdir=test --load-extension=gpu2bs
# isolationtester specs (test/specs/*.spec, expected output in test/expected): concurrent sessions
ISOLATION      = concurrent_ddl concurrent_ddl_views admission_wait admission_devices direct_scan_mvcc
ISOLATION_OPTS = --inputdir=test --load-extension=gpu2bs

include sources.mk
CORE_OBJS = $(patsubst %,src/core/%.o,$(CORE_SOURCES))
PG_OBJS   = src/pg/module.o src/pg/boundary.o src/pg/settings.o src/pg/points_agg.o \
            src/pg/aggregates.o src/pg/simjoin.o src/pg/simjoin_scan.o src/pg/info.o \
            src/pg/planner/pair_quals.o src/pg/pairwise.o src/pg/relation_stats.o \
            src/pg/pair_expr.o src/pg/dbscan.o src/pg/planner/join_path.o src/pg/admission.o \
            src/pg/rdf.o src/pg/heap_read.o src/pg/xi.o src/pg/weights.o src/pg/planner/agg_read.o

# CUDA: found on PATH or in /usr/local/cuda; empty NVCC means a CPU-only build.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifneq ($(and $(strip $(NVCC)),$(wildcard kernels/cuda_engine.cu)),)
CUDA_HOME   ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_SRCS    = $(sort $(wildcard kernels/*.cu kernels/*/*.cu))
CUDA_KOBJS   = $(CUDA_SRCS:.cu=.o)
CUDA_OBJS    = $(CUDA_KOBJS) kernels/device_link.o
CUDA_ARCH   ?= -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 \
               -gencode=arch=compute_90,code=compute_90
NVCCFLAGS   ?= $(CUDA_FLAGS) $(CUDA_ARCH) -I$(CUDA_HOME)/include -DGPU2BS_CUDA_HOME=\"$(CUDA_HOME)\"
CUDA_LIBS    = -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart_static -ldl -lrt
else
CUDA_OBJS    = src/core/$(CORE_NO_CUDA).o
CUDA_LIBS    =
endif

OBJS = $(CORE_OBJS) $(PG_OBJS) $(CUDA_OBJS)

# The extension's SQL version (default_version of gpu2bs.control), reported by gpu2bs_info().
EXT_VERSION := $(shell sed -nE "s/^default_version *= *'([^']+)'.*/\1/p" gpu2bs.control)
PG_CPPFLAGS = -Isrc -DGPU2BS_VERSION='"$(EXT_VERSION)"'
PG_CXXFLAGS = $(CORE_CXXFLAGS) -Wno-register -fvisibility-inlines-hidden
SHLIB_LINK  = $(CUDA_LIBS) -lstdc++ -lpthread -lm

# No LLVM bitcode (JIT inlining) for the C++ and CUDA objects.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The version is compiled into info.o: rebuilt when the control file changes.
src/pg/info.o: gpu2bs.control

# AVX2+FMA variant of the CPU kernels, chosen at run time.
src/core/cpu_kernels_avx2.o src/core/pairwise_cpu_avx2.o src/core/pair_expr_cpu_avx2.o src/core/rdf_cpu_avx2.o src/core/weights_cpu_avx2.o: override CXXFLAGS += $(CORE_AVX2_FLAGS)
src/core/cpu_kernels_generic.o src/core/pairwise_cpu_generic.o src/core/pair_expr_cpu_generic.o src/core/rdf_cpu_generic.o src/core/weights_cpu_generic.o: override CXXFLAGS += $(CORE_GENERIC_FLAGS)
src/core/pairwise_cpu_avx512.o src/core/pair_expr_cpu_avx512.o: override CXXFLAGS += $(CORE_AVX512_FLAGS)

KERNEL_HEADERS = $(wildcard kernels/*.cuh kernels/*.h kernels/*/*.cuh kernels/*/*.h) src/core/*.h
kernels/%.o: kernels/%.cu $(KERNEL_HEADERS)
	$(NVCC) $(NVCCFLAGS) -Isrc -c $< -o $@

kernels/pairwise/%.o: kernels/pairwise/%.cu kernels/pairwise/*.h kernels/*.cuh kernels/*.h src/core/*.h
	$(NVCC) $(NVCCFLAGS) -Isrc -c $< -o $@

# Device link step for relocatable device code, so the .so needs no nvcc at load time.
kernels/device_link.o: $(CUDA_KOBJS)
	$(NVCC) $(CUDA_ARCH) -Xcompiler -fPIC -dlink $^ -o $@

$(CORE_OBJS) $(PG_OBJS): src/core/*.h src/pg/*.h src/pg/planner/*.h src/core/cpu_kernels.inc src/core/pairwise_cpu.inc src/core/pair_expr_cpu.inc src/core/rdf_cpu.inc src/core/weights_cpu.inc

EXTRA_CLEAN = build test/unit/build

# --- project commands (README) ---------------------------------------------------------------
.PHONY: demo test unit
demo:      ## command 1: the main job on real data (installs what it needs)
	bash scripts/demo.sh
test:      ## command 2: the whole test suite (test/run: unit, asan, regress, upgrade, metadata, reliability)
	bash test/run
unit:
	cmake -S test/unit -B test/unit/build -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build test/unit/build -j2
	cd test/unit/build && ctest --output-on-failure
