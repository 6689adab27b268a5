// Device-memory admission: the accounting of device memory reserved by the queries of all
// backends of one server against one budget. The table lives in shared memory (src/pg/admission.cpp
// places it there and provides the lock and the wake-ups); these functions only read and change
// it, with the caller holding the lock. No PostgreSQL and no CUDA headers here.
//
// A query asks for `want` bytes (what its in-memory path needs) and accepts `min` bytes or more
// (what its block path needs; min == want when it has none), on each device it uses (a set of
// device ordinals; the budget applies to every device on its own). It is granted want bytes
// when they are free on all of its devices, else the bytes free on the fullest of them when
// they are at least min (the query runs in blocks), else it waits; waiters are served first
// come, first served (a request is not granted while an older one that shares a device waits).
// A request whose min exceeds the whole budget is refused at once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "problem.h"

namespace gpu2bs {
namespace admission {

enum SlotState : uint32_t { kFree = 0, kWaiting = 1, kGranted = 2 };

// Device ordinals the table accounts separately (an ordinal d at or above it shares the
// account of d % kMaxDevices: reserved there too, never less).
constexpr uint32_t kMaxDevices = 64;

// One backend's entry: at most one request (waiting or granted) and the bytes it holds.
struct Slot {
  int32_t pid;       // the backend's process id (0: never used)
  uint32_t state;    // SlotState
  uint64_t want;     // bytes asked for (waiting or granted)
  uint64_t min;      // smallest grant accepted
  uint64_t granted;  // bytes held (granted)
  uint64_t ticket;   // arrival order of the waiting request
  int64_t since_us;  // when the request arrived (caller's clock, microseconds)
  uint64_t devices;  // bit d: the request reserves its bytes on device d
};

// The shared table: the budget, what is reserved, and one slot per backend.
struct Table {
  uint64_t total;        // the budget in bytes (of each device)
  uint64_t reserved;     // granted bytes on the device that holds the most
  uint64_t peak;         // largest `reserved` seen (the most any device held)
  uint64_t next_ticket;  // next arrival number
  uint64_t grants;       // requests granted
  uint64_t waits;        // requests that had to wait
  uint64_t block_grants; // grants below `want` (the query runs in blocks)
  uint64_t dev_reserved[kMaxDevices];  // granted bytes on each device
  uint64_t dev_peak[kMaxDevices];      // largest dev_reserved seen
  uint32_t nslots;
  Slot slots[1];         // nslots entries (the table is allocated with room for them)
};

// Bytes a table with `nslots` slots occupies.
size_t table_bytes(uint32_t nslots);

// Initializes a table of `nslots` slots with budget `total`.
void init(Table* t, uint32_t nslots, uint64_t total);

enum class Decision { Grant, Wait, Refuse };

struct Outcome {
  Decision decision = Decision::Wait;
  uint64_t bytes = 0;  // Grant: bytes granted (want, or min..want for blocks)
};

// Decides the request of slot `s` (kWaiting after enqueue) against the budget: Grant (and
// reserves the bytes: the slot becomes kGranted), Wait, or Refuse (min exceeds the whole budget;
// the slot is freed).
Outcome decide(Table* t, uint32_t s);

// Records a request of `want` bytes accepting `min` (min <= want) by process `pid` in slot `s`
// (which must be kFree) at time `now_us` on the devices of the mask `devices` (0: device 0);
// it waits in arrival order.
void enqueue(Table* t, uint32_t s, int32_t pid, uint64_t want, uint64_t min, int64_t now_us,
             uint64_t devices = 1);

// The mask of device ordinals `devs` (bit d % kMaxDevices for ordinal d; 0 for none).
uint64_t device_mask(const int* devs, size_t n);

// Ends slot `s`'s request or grant; returns the bytes given back (0 when it held none). Free
// slots are left alone.
uint64_t release(Table* t, uint32_t s);

// Changes the budget (a setting changed); grants already made stay.
void set_total(Table* t, uint64_t total);

// Bytes the GPU engine's in-memory all-pairs path (SDH, pair count by tiles) allocates for n
// points of `dims` coordinates and `nbuckets` buckets (0 for a pair count), with a margin for
// its small buffers.
uint64_t tiles_bytes(uint64_t n, int dims, Precision prec, int nbuckets);

// What an SDH or pair count asks for: the all-pairs path's bytes three times, room for the
// resolution's density map and the pair count's grid (the block path needs less, see below).
uint64_t tiles_want_bytes(uint64_t n, int dims, Precision prec, int nbuckets);

// Bytes the GPU engine's grid pair count allocates for n points (the raw and the cell-sorted
// coordinates, sort keys and their double buffers, the sort's scratch, cells and work items),
// with a margin: what a pair count with a finite positive radius asks for at least, so that
// the grant lets the grid run instead of the all-pairs tiles.
uint64_t grid_count_bytes(uint64_t n, int dims, Precision prec);

// Smallest budget under which the same problem runs in blocks of points (block pairs), or
// tiles_bytes when that is smaller.
uint64_t tiles_block_min_bytes(uint64_t n, int dims, Precision prec, int nbuckets);

// Points per block for the block path under `budget` bytes (three blocks resident: the anchor
// block and two column blocks, one being uploaded while the other is used); a multiple of
// kBlockQuantum, at least kBlockQuantum; 0 when the budget is below tiles_block_min_bytes.
uint64_t block_points(uint64_t budget, int dims, Precision prec, int nbuckets);

// Points per block are a multiple of this (whole tiles of every tile kernel).
constexpr uint64_t kBlockQuantum = 8192;
// Fixed device bytes besides the point arrays (histogram tables, bounds, launch scratch).
constexpr uint64_t kFixedMargin = uint64_t(1) << 20;

}  // namespace admission
}  // namespace gpu2bs
