// Device-memory admission accounting (see admission.h): pure functions over the shared table.
#include "admission.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace gpu2bs {
namespace admission {

namespace {

// Bytes of one coordinate in the precision's device arrays.
uint64_t coord_bytes(Precision prec) { return prec == Precision::Float64 ? 8 : 4; }

// Device bytes besides the points: the histogram (uint64 counts), the fast path's thresholds
// (at most 5/4 of the buckets plus 64 floats) and the fixed margin.
uint64_t side_bytes(int nbuckets) { return uint64_t(std::max(nbuckets, 0)) * 16 + kFixedMargin; }

// Recomputes `reserved` (the fullest device) after dev_reserved changed.
void update_reserved(Table* t) {
  uint64_t m = 0;
  for (uint32_t d = 0; d < kMaxDevices; ++d) m = std::max(m, t->dev_reserved[d]);
  t->reserved = m;
}

}  // namespace

uint64_t device_mask(const int* devs, size_t n) {
  uint64_t m = 0;
  for (size_t k = 0; k < n; ++k)
    if (devs[k] >= 0) m |= uint64_t(1) << (uint32_t(devs[k]) % kMaxDevices);
  return m;
}

size_t table_bytes(uint32_t nslots) {
  return offsetof(Table, slots) + sizeof(Slot) * std::max<uint32_t>(nslots, 1);
}

void init(Table* t, uint32_t nslots, uint64_t total) {
  std::memset(static_cast<void*>(t), 0, table_bytes(nslots));
  t->nslots = nslots;
  t->total = total;
  t->next_ticket = 1;
}

void enqueue(Table* t, uint32_t s, int32_t pid, uint64_t want, uint64_t min, int64_t now_us,
             uint64_t devices) {
  Slot& e = t->slots[s];
  e.devices = devices ? devices : 1;
  e.pid = pid;
  e.state = kWaiting;
  e.want = want;
  e.min = std::min(min, want);
  e.granted = 0;
  e.ticket = t->next_ticket++;
  e.since_us = now_us;
}

Outcome decide(Table* t, uint32_t s) {
  Slot& e = t->slots[s];
  Outcome out;
  if (e.state == kGranted) {
    out.decision = Decision::Grant;
    out.bytes = e.granted;
    return out;
  }
  if (e.min > t->total) {  // can never run, whatever the others release
    e.state = kFree;
    out.decision = Decision::Refuse;
    return out;
  }
  // First come, first served: an older waiting request on a device of this one goes first.
  for (uint32_t k = 0; k < t->nslots; ++k)
    if (k != s && t->slots[k].state == kWaiting && t->slots[k].ticket < e.ticket &&
        (t->slots[k].devices & e.devices) != 0)
      return out;
  // What is free on the fullest of the request's devices.
  uint64_t held = 0;
  for (uint32_t d = 0; d < kMaxDevices; ++d)
    if (e.devices >> d & 1) held = std::max(held, t->dev_reserved[d]);
  const uint64_t free_b = t->total > held ? t->total - held : 0;
  uint64_t grant = 0;
  if (e.want <= free_b)
    grant = e.want;
  else if (e.min <= free_b)
    grant = free_b;  // the block path, with all that is free
  else
    return out;
  if (grant < e.want) ++t->block_grants;
  e.state = kGranted;
  e.granted = grant;
  for (uint32_t d = 0; d < kMaxDevices; ++d)
    if (e.devices >> d & 1) {
      t->dev_reserved[d] += grant;
      t->dev_peak[d] = std::max(t->dev_peak[d], t->dev_reserved[d]);
    }
  update_reserved(t);
  t->peak = std::max(t->peak, t->reserved);
  ++t->grants;
  out.decision = Decision::Grant;
  out.bytes = grant;
  return out;
}

uint64_t release(Table* t, uint32_t s) {
  Slot& e = t->slots[s];
  uint64_t given = 0;
  if (e.state == kGranted) {
    given = e.granted;
    for (uint32_t d = 0; d < kMaxDevices; ++d)
      if (e.devices >> d & 1) t->dev_reserved[d] = t->dev_reserved[d] >= given ? t->dev_reserved[d] - given : 0;
    update_reserved(t);
  }
  e.state = kFree;
  e.granted = 0;
  e.want = 0;
  e.min = 0;
  e.ticket = 0;
  e.devices = 0;
  return given;
}

void set_total(Table* t, uint64_t total) { t->total = total; }

uint64_t tiles_bytes(uint64_t n, int dims, Precision prec, int nbuckets) {
  const uint64_t per = (n * coord_bytes(prec) + 255) / 256 * 256;
  return per * uint64_t(dims) + side_bytes(nbuckets);
}

uint64_t tiles_want_bytes(uint64_t n, int dims, Precision prec, int nbuckets) {
  return 3 * tiles_bytes(n, dims, prec, nbuckets);
}

uint64_t grid_count_bytes(uint64_t n, int dims, Precision prec) {
  const uint64_t per_point = 2 * coord_bytes(prec) * uint64_t(dims) + 8 * uint64_t(dims) + 128;
  return n * per_point + (uint64_t(16) << 20);
}

uint64_t tiles_block_min_bytes(uint64_t n, int dims, Precision prec, int nbuckets) {
  const uint64_t blocks = 3 * kBlockQuantum * coord_bytes(prec) * uint64_t(dims) + side_bytes(nbuckets);
  return std::min(blocks, tiles_bytes(n, dims, prec, nbuckets));
}

uint64_t block_points(uint64_t budget, int dims, Precision prec, int nbuckets) {
  const uint64_t side = side_bytes(nbuckets);
  if (budget <= side || dims <= 0) return 0;
  const uint64_t per_point = 3 * coord_bytes(prec) * uint64_t(dims);
  const uint64_t pts = (budget - side) / per_point / kBlockQuantum * kBlockQuantum;
  return pts;
}

}  // namespace admission
}  // namespace gpu2bs
