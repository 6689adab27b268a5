// Host side of the in-place data-sliding primitives (sliding.cuh): the scratch buffers. The
// kernels and the dispatch templates are in sliding.cuh, instantiated where they are used.
#include "sliding.cuh"

namespace gpu2bs {
namespace cuda {
namespace sliding {

SlidingScratch::~SlidingScratch() {
  if (call_) return;  // the call frees its allocations
  if (flags_) (void)cudaFree(flags_);
  if (aux_) (void)cudaFree(aux_);
  if (host_) (void)cudaFreeHost(host_);
}

void* SlidingScratch::dev_alloc(size_t bytes, const char* what) {
  if (call_) return call_->alloc_bytes(bytes, what);
  void* p = nullptr;
  G2_CUDA(cudaMalloc(&p, bytes));
  return p;
}

void SlidingScratch::dev_free(void* p) {
  if (!p) return;
  if (call_) {
    call_->free(p);
  } else {
    G2_CUDA(cudaDeviceSynchronize());  // a kernel may still use it
    G2_CUDA(cudaFree(p));
  }
}

SlideFlags SlidingScratch::flags_for(size_t tiles, bool counted, cudaStream_t s) {
  // the head words, then per tile its look-back flag and its loaded flag
  const size_t bytes = (2 * tiles + kFlagsHead) * sizeof(unsigned long long);
  if (bytes > flags_bytes_) {
    const size_t want = std::max(bytes, flags_bytes_ * 2);
    dev_free(flags_);
    flags_ = nullptr;
    flags_bytes_ = 0;
    flags_ = static_cast<unsigned long long*>(dev_alloc(want, "sliding tile flags"));
    flags_bytes_ = want;
    epoch_ = kEpochLimit;  // zeroed below
  }
  if (epoch_ == kEpochLimit) {
    // every flag unset again (epoch 0 is never a launch's), the counter at 0
    G2_CUDA(cudaMemsetAsync(flags_, 0, flags_bytes_, s));
    epoch_ = 0;
    id_base_ = 0;
  }
  const SlideFlags f{flags_, ++epoch_, id_base_};
  if (counted) id_base_ += unsigned(tiles);  // one counter increment per block
  return f;
}

void* SlidingScratch::aux_for(size_t bytes) {
  if (bytes > aux_bytes_) {
    dev_free(aux_);
    aux_ = nullptr;
    aux_bytes_ = 0;
    aux_ = dev_alloc(bytes, "sliding rejected elements");
    aux_bytes_ = bytes;
  }
  return aux_;
}

unsigned long long* SlidingScratch::host_count() {
  if (!host_) {
    if (call_) {
      host_ = static_cast<unsigned long long*>(call_->alloc_host(sizeof(unsigned long long)));
    } else {
      void* p = nullptr;
      G2_CUDA(cudaHostAlloc(&p, sizeof(unsigned long long), cudaHostAllocDefault));
      host_ = static_cast<unsigned long long*>(p);
    }
  }
  return host_;
}

}  // namespace sliding
}  // namespace cuda
}  // namespace gpu2bs
