// The bytes of a zone, as every process sees them. Nothing in here is a pointer: each
// process maps the segment at its own address, so every reference is an offset from the
// segment's first byte. Changing anything in this file means bumping kLayoutVersion.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace zonal {

constexpr uint32_t kMagic = 0x4c4e4f5a;  // "ZONL" in memory order
constexpr uint32_t kLayoutVersion = 2;
constexpr uint32_t kMaxWorkerSlots = 256;
constexpr uint32_t kUndoCapacity = 512;
constexpr uint32_t kMinSlotShift = 3;     // smallest slot: 8 bytes
constexpr uint32_t kMaxSlotKinds = 16;    // slot shifts 3..18: pages up to 512 KiB
constexpr uint32_t kNone = 0xffffffffu;   // "no page" in page lists
constexpr uint16_t kNoSlot = 0xffff;      // "no slot" in a slab page's free chain

// An undo entry restores one aligned 64-bit word. Entries whose offset has kSeqFlag set
// are sequence words of records: rolling them back must never move them backwards (a
// reader may have seen the newer value), so recovery sets them to the next even value.
struct UndoEntry {
  uint64_t offset;
  uint64_t old;
};
constexpr uint64_t kSeqFlag = 1;

struct UndoLog {
  std::atomic<uint32_t> count;
  uint32_t reserved;
  UndoEntry entries[kUndoCapacity];
};

// Per-slot-size statistics, exactly what /status/slabs/<zone>/slots/<size> shows
// (free = total - used).
struct SlotStats {
  uint64_t total;
  uint64_t used;
  uint64_t reqs;
  uint64_t fails;
};

// One descriptor per page. Only the first and the last page of every block (free run,
// allocated run, slab page) are kept exact; inner pages of runs may hold stale values
// and are never read, which keeps every operation to a bounded number of writes.
enum PageKind : uint32_t {
  kPageFreeInner = 0,
  kPageFreeHead = 1,  // aux = run length in pages; prev/next link the free list
  kPageFreeTail = 2,  // last page of a free run longer than one page; prev = its head
  kPageSlab = 3,      // shift << 8 | kind; aux = used << 16 | first free slot
  kPageRunHead = 4,   // first page of an allocated run; aux = run length
  kPageRunTail = 5,   // last page of an allocated run longer than one page
};

struct PageDesc {
  uint32_t prev;
  uint32_t next;
  uint32_t kind;
  uint32_t aux;
};

struct SlabPool {
  uint32_t page_shift;
  uint32_t nslots;  // slot sizes 8 .. page/2
  uint32_t npages;
  uint32_t free_pages;
  uint64_t descs_off;
  uint64_t data_off;  // first page, page aligned
  uint32_t free_head;  // first free run, kNone if none
  uint32_t reserved;
  uint32_t partial_head[kMaxSlotKinds];  // slab pages with a free slot, per slot size
  SlotStats stats[kMaxSlotKinds];
};

struct Header {
  uint32_t magic;  // written last when a zone is created
  uint32_t layout_version;
  uint64_t size;       // whole segment
  uint64_t pool_size;  // bytes of pages given to the slab allocator, as requested
  uint64_t page_size;
  uint32_t worker_slots;
  uint32_t dir_buckets;
  uint64_t owner;  // creator: start time << 22 | pid (see process.h)
  uint64_t created_ms;
  uint64_t dir_off;  // bucket array of the key directory
  uint64_t dir_count;
  uint64_t recoveries;  // times a locker found the owner dead and rolled back
  alignas(64) pthread_mutex_t mutex;
  alignas(64) UndoLog undo;
  alignas(64) std::atomic<uint64_t> claims[kMaxWorkerSlots];  // owner of each shard
  // Bit s: slot s has been claimed for writing at least once. Never cleared, so that a
  // dead worker's counts are still read; readers read only these slots' shards.
  alignas(64) std::atomic<uint32_t> written_slots[kMaxWorkerSlots / 32];
  alignas(64) SlabPool pool;
};

// A key directory entry: the way processes that did not allocate a block find it.
enum EntryKind : uint32_t {
  kEntryBlock = 1,     // raw bytes
  kEntryCounters = 2,  // counter block: worker_slots shards
  kEntryCells = 3,     // shared atomic cells
  kEntryRecord = 4,    // seqlocked record (RecordHeader)
};

struct DirEntry {
  uint64_t next;
  uint64_t value_off;
  uint64_t value_size;
  uint32_t kind;
  uint32_t key_len;
  // key bytes follow
};

// A seqlocked record: seq is odd while a writer publishes; data points at an immutable
// block [uint64 length][bytes], replaced (never changed in place) by every write.
struct RecordHeader {
  std::atomic<uint32_t> seq;
  uint32_t reserved;
  std::atomic<uint64_t> data_off;
};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "address-free atomics needed");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "address-free atomics needed");
static_assert(sizeof(PageDesc) == 16, "page descriptor size");

}  // namespace zonal
