// nginx's slab allocator semantics over a zone's pages: slots of 8, 16, 32 ... page/2
// bytes carved from single pages, and runs of whole pages above that. Callers hold the
// zone mutex; every write goes through Segment::Put so a dead owner can be rolled back.
#pragma once

#include <string>

#include "segment.h"

namespace zonal {

void SlabInit(Segment& s, uint32_t npages, uint32_t page_shift, uint64_t descs_off, uint64_t data_off);
// Offset of a block of at least `size` bytes, aligned to its slot size (or to a page);
// 0 when the zone is full, counted in that slot size's `fails`.
uint64_t SlabAlloc(Segment& s, uint64_t size);
// False (and nothing changed) when `offset` is not the start of an allocated block.
bool SlabFree(Segment& s, uint64_t offset);
// Walks every page and list; "" when all invariants hold, else the first broken one.
std::string SlabCheck(const Segment& s);

}  // namespace zonal
