// A PairSink that lends pinned host buffers to the batched join's drains, so that a drained
// chunk of bank pages is copied from the device straight into memory the sink keeps and is handed
// over whole, instead of being copied from the join's staging buffer into the sink's own pages.
#pragma once

#include <cstddef>

#include "core/engine.h"

namespace gpu2bs {
namespace cuda {

// The lending side of a sink (the slab queue's QueueSink): lend, take, give_back.
class ChunkSink : public PairSink {
 public:
  // A pinned buffer of at least `bytes` bytes, or null when the sink lends none of that size
  // (the join then copies through its staging buffer). Once the join holds lent buffers, a call
  // waits for one to come back; it throws Error(Interrupted) when the sink is closed.
  virtual char* lend(size_t bytes) = 0;
  // Takes the lent buffer `buf` holding `pages` pages of `page_pairs` records each, of which the
  // first fills[k] of page k are pairs (the fills are copied); the pairs follow, in order, every
  // pair passed to consume() before.
  virtual void take(char* buf, const unsigned* fills, size_t pages, size_t page_pairs) = 0;
  // Returns a lent buffer that is not handed over (the end of the join, or an error), once no
  // copy into it is pending.
  virtual void give_back(char* buf) = 0;
};

}  // namespace cuda
}  // namespace gpu2bs
