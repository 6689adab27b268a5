// In-place data sliding on the CPU: the counterparts of the GPU primitives in
// kernels/sliding/sliding.cuh, with the same results (stable select / remove_if, unique of
// adjacent duplicates, stream compaction, stable partition). Multi-threaded over chunks of
// kChunk elements when a Control with more than one thread is given (parallel_for: cancel is
// polled between chunks and throws Error(Interrupted), leaving the array unspecified): every
// chunk slides its own elements in place, then the chunks' results move down in order.
//
//   size_t kept = sliding::select_inplace(d, n, keep, &ctl);     // d[0, kept): keep(x) true
//   size_t left = sliding::remove_if_inplace(d, n, pred, &ctl);   // std::remove_if
//   size_t kept = sliding::unique_inplace(d, n, eq, &ctl);        // first of each run of eq
//   size_t left = sliding::compact_inplace(d, n, value, &ctl);    // removes bitwise == value
//   size_t first = sliding::partition_inplace(d, n, keep, &ctl); // stable, both parts
//
// unique compares adjacent input elements (eq must be an equivalence), as the GPU and
// cub::DeviceSelect::Unique. partition keeps the rejected elements in a buffer meanwhile (their
// count), as std::stable_partition does. T: trivially copyable.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine.h"
#include "parallel.h"

namespace gpu2bs {
namespace sliding {

// Elements per chunk (one parallel_for item: about a millisecond of work).
constexpr size_t kChunk = size_t(1) << 18;

namespace detail {

// Chunks of n elements, and whether they run on several threads.
inline size_t chunks_of(size_t n) { return (n + kChunk - 1) / kChunk; }
inline bool parallel(const Control* ctl, size_t chunks) {
  return ctl && ctl->threads > 1 && chunks > 1;
}

// Runs body(chunk) for every chunk, on ctl's threads when parallel.
template <typename Body>
void for_chunks(Control* ctl, size_t chunks, Body body) {
  if (parallel(ctl, chunks)) {
    parallel_for(*ctl, chunks, [&](size_t c, int) { body(c); });
  } else {
    for (size_t c = 0; c < chunks; ++c) body(c);
  }
}

// Moves each chunk's first cnt[c] elements behind the previous chunks' (in order; a chunk's
// destination may overlap the previous chunk's source). Returns the total.
template <typename T>
size_t gather_chunks(T* d, const std::vector<size_t>& cnt) {
  size_t off = 0;
  for (size_t c = 0; c < cnt.size(); ++c) {
    const size_t src = c * kChunk;
    if (off != src && cnt[c]) std::memmove(d + off, d + src, cnt[c] * sizeof(T));
    off += cnt[c];
  }
  return off;
}

// Bitwise equality.
template <typename T>
bool bitwise_equal(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace detail

// Keeps the elements with keep(x) true, in order, in d[0, kept); returns kept.
template <typename T, typename Pred>
size_t select_inplace(T* d, size_t n, Pred keep, Control* ctl = nullptr) {
  static_assert(std::is_trivially_copyable<T>::value, "elements must be trivially copyable");
  // one chunk: slides in place with no bookkeeping (callers pass single elements too)
  if (n <= kChunk) return size_t(std::remove_if(d, d + n, [&](const T& x) { return !keep(x); }) - d);
  const size_t chunks = detail::chunks_of(n);
  std::vector<size_t> cnt(chunks);
  detail::for_chunks(ctl, chunks, [&](size_t c) {
    T* b = d + c * kChunk;
    T* e = d + std::min(n, (c + 1) * kChunk);
    cnt[c] = size_t(std::remove_if(b, e, [&](const T& x) { return !keep(x); }) - b);
  });
  return detail::gather_chunks(d, cnt);
}

// Removes the elements with pred(x) true (std::remove_if); returns the count left.
template <typename T, typename Pred>
size_t remove_if_inplace(T* d, size_t n, Pred pred, Control* ctl = nullptr) {
  return select_inplace(d, n, [&](const T& x) { return !pred(x); }, ctl);
}

// Removes the elements bitwise equal to `value`; returns the count left.
template <typename T>
size_t compact_inplace(T* d, size_t n, const T& value, Control* ctl = nullptr) {
  const T v = value;
  return select_inplace(d, n, [&](const T& x) { return !detail::bitwise_equal(x, v); }, ctl);
}

// Keeps d[0] and every d[i] with !eq(d[i - 1], d[i]) (input neighbours); returns the count.
template <typename T, typename Eq>
size_t unique_inplace(T* d, size_t n, Eq eq, Control* ctl = nullptr) {
  static_assert(std::is_trivially_copyable<T>::value, "elements must be trivially copyable");
  const size_t chunks = detail::chunks_of(n);
  std::vector<T> before(chunks);  // the element before each chunk, read before any move
  for (size_t c = 1; c < chunks; ++c) before[c] = d[c * kChunk - 1];
  std::vector<size_t> cnt(chunks);
  detail::for_chunks(ctl, chunks, [&](size_t c) {
    const size_t b = c * kChunk, e = std::min(n, b + kChunk);
    size_t w = b;
    T prev = before[c];
    for (size_t i = b; i < e; ++i) {
      const T cur = d[i];
      if (i == 0 || !eq(prev, cur)) d[w++] = cur;
      prev = cur;
    }
    cnt[c] = w - b;
  });
  return detail::gather_chunks(d, cnt);
}

// Stable partition: elements with keep(x) true first, then the others, each in order; returns
// the count of the first part.
template <typename T, typename Pred>
size_t partition_inplace(T* d, size_t n, Pred keep, Control* ctl = nullptr) {
  static_assert(std::is_trivially_copyable<T>::value, "elements must be trivially copyable");
  const size_t chunks = detail::chunks_of(n);
  std::vector<size_t> cnt(chunks);
  std::vector<std::vector<T>> rejected(chunks);
  detail::for_chunks(ctl, chunks, [&](size_t c) {
    const size_t b = c * kChunk, e = std::min(n, b + kChunk);
    size_t w = b;
    for (size_t i = b; i < e; ++i) {
      const T cur = d[i];
      if (keep(cur))
        d[w++] = cur;
      else
        rejected[c].push_back(cur);
    }
    cnt[c] = w - b;
  });
  const size_t kept = detail::gather_chunks(d, cnt);
  std::vector<size_t> off(chunks);
  size_t o = kept;
  for (size_t c = 0; c < chunks; ++c) {
    off[c] = o;
    o += rejected[c].size();
  }
  detail::for_chunks(ctl, chunks, [&](size_t c) {
    if (!rejected[c].empty())
      std::memcpy(d + off[c], rejected[c].data(), rejected[c].size() * sizeof(T));
  });
  return kept;
}

}  // namespace sliding
}  // namespace gpu2bs
