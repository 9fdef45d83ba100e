#include "slab.h"

#include <vector>

namespace zonal {

namespace {

struct Pool {
  Segment& s;
  SlabPool& p;
  PageDesc* descs;

  explicit Pool(Segment& seg)
      : s(seg), p(seg.header()->pool), descs(seg.at<PageDesc>(seg.header()->pool.descs_off)) {}

  uint64_t page_size() const { return uint64_t{1} << p.page_shift; }
  uint64_t page_offset(uint32_t i) const { return p.data_off + (uint64_t{i} << p.page_shift); }

  // Doubly linked page lists (the free-run list and the per-slot partial lists).
  void ListPush(uint32_t& head, uint32_t i) {
    s.Put(descs[i].prev, kNone);
    s.Put(descs[i].next, head);
    if (head != kNone) s.Put(descs[head].prev, i);
    s.Put(head, i);
  }
  void ListRemove(uint32_t& head, uint32_t i) {
    uint32_t prev = descs[i].prev, next = descs[i].next;
    if (prev != kNone) s.Put(descs[prev].next, next);
    else s.Put(head, next);
    if (next != kNone) s.Put(descs[next].prev, prev);
  }

  // Marks [i, i+n) as one free run and puts it on the free list.
  void MarkFree(uint32_t i, uint32_t n) {
    s.Put(descs[i].kind, uint32_t{kPageFreeHead});
    s.Put(descs[i].aux, n);
    if (n > 1) {
      s.Put(descs[i + n - 1].kind, uint32_t{kPageFreeTail});
      s.Put(descs[i + n - 1].prev, i);
    }
    ListPush(p.free_head, i);
  }

  uint32_t AllocPages(uint32_t n) {
    for (uint32_t h = p.free_head; h != kNone; h = descs[h].next) {
      uint32_t len = descs[h].aux;
      if (len < n) continue;
      ListRemove(p.free_head, h);
      if (len > n) MarkFree(h + n, len - n);
      s.Put(descs[h].kind, uint32_t{kPageRunHead});
      s.Put(descs[h].aux, n);
      if (n > 1) s.Put(descs[h + n - 1].kind, uint32_t{kPageRunTail});
      s.Put(p.free_pages, p.free_pages - n);
      return h;
    }
    return kNone;
  }

  // Returns [i, i+n) to the free list, merged with free neighbours on both sides.
  void FreePages(uint32_t i, uint32_t n) {
    s.Put(p.free_pages, p.free_pages + n);
    if (i + n < p.npages && descs[i + n].kind == kPageFreeHead) {
      uint32_t next = i + n;
      ListRemove(p.free_head, next);
      n += descs[next].aux;
    }
    if (i > 0) {
      const PageDesc& left = descs[i - 1];
      uint32_t head = left.kind == kPageFreeHead ? i - 1 : left.kind == kPageFreeTail ? left.prev : kNone;
      if (head != kNone) {
        ListRemove(p.free_head, head);
        n += i - head;
        i = head;
      }
    }
    MarkFree(i, n);
  }

  uint32_t SlotsPerPage(uint32_t shift) const { return 1u << (p.page_shift - shift); }
  uint16_t& SlotLink(uint32_t page, uint32_t slot, uint32_t shift) const {
    return *s.at<uint16_t>(page_offset(page) + (uint64_t{slot} << shift));
  }
};

uint32_t SlotShift(uint64_t size) {
  uint32_t shift = kMinSlotShift;
  while ((uint64_t{1} << shift) < size) shift++;
  return shift;
}

}  // namespace

void SlabInit(Segment& s, uint32_t npages, uint32_t page_shift, uint64_t descs_off, uint64_t data_off) {
  // A fresh zone: no other process sees it yet, so plain writes are fine here.
  SlabPool& p = s.header()->pool;
  p.page_shift = page_shift;
  p.nslots = page_shift - kMinSlotShift;
  p.npages = npages;
  p.free_pages = npages;
  p.descs_off = descs_off;
  p.data_off = data_off;
  for (uint32_t k = 0; k < kMaxSlotKinds; k++) p.partial_head[k] = kNone;
  PageDesc* d = s.at<PageDesc>(descs_off);
  d[0] = PageDesc{kNone, kNone, kPageFreeHead, npages};
  if (npages > 1) d[npages - 1] = PageDesc{0, kNone, kPageFreeTail, 0};
  p.free_head = 0;
}

uint64_t SlabAlloc(Segment& s, uint64_t size) {
  Pool pool(s);
  SlabPool& p = pool.p;
  if (size == 0) size = 1;
  if (size > pool.page_size() / 2) {
    uint64_t n = (size + pool.page_size() - 1) >> p.page_shift;
    if (n > p.npages) return 0;
    uint32_t i = pool.AllocPages(static_cast<uint32_t>(n));
    return i == kNone ? 0 : pool.page_offset(i);
  }
  const uint32_t shift = SlotShift(size);
  const uint32_t k = shift - kMinSlotShift;
  SlotStats& st = p.stats[k];
  s.Put(st.reqs, st.reqs + 1);
  uint32_t page = p.partial_head[k];
  if (page == kNone) {
    page = pool.AllocPages(1);
    if (page == kNone) {
      s.Put(st.fails, st.fails + 1);
      return 0;
    }
    // The page was free before this operation: its bytes need no undo entries.
    const uint32_t slots = pool.SlotsPerPage(shift);
    for (uint32_t i = 0; i < slots; i++) pool.SlotLink(page, i, shift) = i + 1 < slots ? i + 1 : kNoSlot;
    s.Put(pool.descs[page].kind, uint32_t{kPageSlab} | shift << 8);
    s.Put(pool.descs[page].aux, uint32_t{0});  // used 0, first free slot 0
    pool.ListPush(p.partial_head[k], page);
    s.Put(st.total, st.total + slots);
  }
  PageDesc& d = pool.descs[page];
  const uint32_t slot = d.aux & 0xffff;
  const uint32_t used = (d.aux >> 16) + 1;
  const uint16_t next = pool.SlotLink(page, slot, shift);
  s.Put(d.aux, used << 16 | next);
  if (next == kNoSlot) pool.ListRemove(p.partial_head[k], page);
  s.Put(st.used, st.used + 1);
  // The slot's first word is its free-chain link: the caller fills the slot with plain
  // writes, so keep that word for a rollback to put back.
  s.Preserve(&pool.SlotLink(page, slot, shift));
  return pool.page_offset(page) + (uint64_t{slot} << shift);
}

bool SlabFree(Segment& s, uint64_t offset) {
  Pool pool(s);
  SlabPool& p = pool.p;
  if (offset < p.data_off || offset >= pool.page_offset(p.npages)) return false;
  const uint32_t page = static_cast<uint32_t>((offset - p.data_off) >> p.page_shift);
  PageDesc& d = pool.descs[page];
  const uint32_t kind = d.kind & 0xff;
  if (kind == kPageRunHead) {
    if (offset != pool.page_offset(page)) return false;
    pool.FreePages(page, d.aux);
    return true;
  }
  if (kind != kPageSlab) return false;
  const uint32_t shift = d.kind >> 8;
  const uint64_t within = offset - pool.page_offset(page);
  if (within & ((uint64_t{1} << shift) - 1)) return false;
  const uint32_t slot = static_cast<uint32_t>(within >> shift);
  // A slot already on the page's free chain is a double free: refuse it.
  uint32_t steps = 0;
  for (uint32_t f = d.aux & 0xffff; f != kNoSlot && steps <= pool.SlotsPerPage(shift); f = pool.SlotLink(page, f, shift), steps++)
    if (f == slot) return false;

  const uint32_t k = shift - kMinSlotShift;
  SlotStats& st = p.stats[k];
  const uint32_t first = d.aux & 0xffff;
  const uint32_t used = (d.aux >> 16) - 1;
  s.Put(pool.SlotLink(page, slot, shift), static_cast<uint16_t>(first));
  s.Put(d.aux, used << 16 | slot);
  s.Put(st.used, st.used - 1);
  if (first == kNoSlot) pool.ListPush(p.partial_head[k], page);  // was full
  if (used == 0) {
    pool.ListRemove(p.partial_head[k], page);
    s.Put(st.total, st.total - pool.SlotsPerPage(shift));
    pool.FreePages(page, 1);
  }
  return true;
}

std::string SlabCheck(const Segment& seg) {
  Segment& s = const_cast<Segment&>(seg);  // read only: Pool's writers are not called
  Pool pool(s);
  const SlabPool& p = pool.p;
  std::vector<char> in_free(p.npages, 0), in_partial(p.npages, 0);
  uint64_t listed_free = 0;
  uint32_t guard = 0;
  for (uint32_t h = p.free_head, prev = kNone; h != kNone; prev = h, h = pool.descs[h].next) {
    if (h >= p.npages || ++guard > p.npages) return "free list is broken";
    if (pool.descs[h].prev != prev) return "free list back link of page " + std::to_string(h);
    in_free[h] = 1;
    listed_free += pool.descs[h].aux;
  }
  for (uint32_t k = 0; k < p.nslots; k++) {
    guard = 0;
    for (uint32_t h = p.partial_head[k], prev = kNone; h != kNone; prev = h, h = pool.descs[h].next) {
      if (h >= p.npages || ++guard > p.npages) return "partial list " + std::to_string(k) + " is broken";
      if (pool.descs[h].prev != prev) return "partial list back link of page " + std::to_string(h);
      if (pool.descs[h].kind != (kPageSlab | (k + kMinSlotShift) << 8))
        return "page " + std::to_string(h) + " on the wrong partial list";
      in_partial[h] = 1;
    }
  }
  SlotStats seen[kMaxSlotKinds] = {};
  uint64_t free_pages = 0;
  bool last_free = false;
  for (uint32_t i = 0; i < p.npages;) {
    const PageDesc& d = pool.descs[i];
    const uint32_t kind = d.kind & 0xff;
    uint32_t n = 1;
    if (kind == kPageFreeHead) {
      n = d.aux;
      if (n == 0 || i + n > p.npages) return "free run at page " + std::to_string(i) + " has a bad length";
      if (!in_free[i]) return "free run at page " + std::to_string(i) + " is not on the free list";
      if (last_free) return "free runs at page " + std::to_string(i) + " were not merged";
      if (n > 1 && (pool.descs[i + n - 1].kind != kPageFreeTail || pool.descs[i + n - 1].prev != i))
        return "free run at page " + std::to_string(i) + " has a bad tail";
      free_pages += n;
    } else if (kind == kPageRunHead) {
      n = d.aux;
      if (n == 0 || i + n > p.npages) return "run at page " + std::to_string(i) + " has a bad length";
      if (n > 1 && pool.descs[i + n - 1].kind != kPageRunTail)
        return "run at page " + std::to_string(i) + " has a bad tail";
    } else if (kind == kPageSlab) {
      const uint32_t shift = d.kind >> 8;
      if (shift < kMinSlotShift || shift >= p.page_shift) return "slab page " + std::to_string(i) + " has a bad slot size";
      const uint32_t slots = pool.SlotsPerPage(shift);
      uint32_t nfree = 0;
      for (uint32_t f = d.aux & 0xffff; f != kNoSlot; f = pool.SlotLink(i, f, shift))
        if (f >= slots || ++nfree > slots) return "slab page " + std::to_string(i) + " has a broken free chain";
      const uint32_t used = d.aux >> 16;
      if (used + nfree != slots || used == 0) return "slab page " + std::to_string(i) + " counts do not add up";
      if ((nfree > 0) != (in_partial[i] != 0)) return "slab page " + std::to_string(i) + " partial list membership";
      SlotStats& st = seen[shift - kMinSlotShift];
      st.total += slots;
      st.used += used;
    } else {
      return "page " + std::to_string(i) + " starts no block";
    }
    last_free = kind == kPageFreeHead;
    i += n;
  }
  if (free_pages != p.free_pages || listed_free != p.free_pages)
    return "free page count " + std::to_string(p.free_pages) + " but " + std::to_string(free_pages) + " found";
  for (uint32_t k = 0; k < p.nslots; k++)
    if (seen[k].total != p.stats[k].total || seen[k].used != p.stats[k].used)
      return "slot size " + std::to_string(8u << k) + " statistics do not match its pages";
  return "";
}

}  // namespace zonal
