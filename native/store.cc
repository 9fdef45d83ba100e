#include "store.h"

#include <sched.h>
#include <unistd.h>

#include "slab.h"

namespace zonal {

namespace {

uint64_t Hash(const std::string& key) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint64_t& Bucket(Segment& s, const std::string& key) {
  Header* h = s.header();
  return s.at<uint64_t>(h->dir_off)[Hash(key) & (h->dir_buckets - 1)];
}

bool KeyIs(Segment& s, const DirEntry* e, const std::string& key) {
  return e->key_len == key.size() &&
         memcmp(reinterpret_cast<const char*>(e + 1), key.data(), key.size()) == 0;
}

std::string KindName(uint32_t kind) {
  switch (kind) {
    case kEntryBlock: return "block";
    case kEntryCounters: return "counter block";
    case kEntryCells: return "cell block";
    case kEntryRecord: return "record";
  }
  return "entry";
}

}  // namespace

Entry DirEnsure(Segment& s, const std::string& key, uint32_t kind, uint64_t size) {
  if (key.empty() || key.size() > 4096) throw ZoneError("a key must have 1 to 4096 bytes");
  if (size == 0) throw ZoneError("a block must have at least one byte");
  Guard lock(s);
  uint64_t& bucket = Bucket(s, key);
  for (uint64_t off = bucket; off; off = s.at<DirEntry>(off)->next) {
    DirEntry* e = s.at<DirEntry>(off);
    if (!KeyIs(s, e, key)) continue;
    if (e->kind != kind || e->value_size != size)
      throw ZoneError("key \"" + key + "\" holds a " + KindName(e->kind) + " of " + std::to_string(e->value_size) +
                      " bytes, not a " + KindName(kind) + " of " + std::to_string(size));
    return Entry{e->value_off, e->value_size, e->kind, false};
  }
  const uint64_t entry_off = SlabAlloc(s, sizeof(DirEntry) + key.size());
  if (!entry_off) return Entry{};
  const uint64_t value_off = SlabAlloc(s, size);
  if (!value_off) {
    SlabFree(s, entry_off);
    return Entry{};
  }
  // Both blocks were free before this operation (SlabAlloc kept what a rollback needs).
  memset(s.at<uint8_t>(value_off), 0, size);
  DirEntry* e = s.at<DirEntry>(entry_off);
  e->next = bucket;
  e->value_off = value_off;
  e->value_size = size;
  e->kind = kind;
  e->key_len = static_cast<uint32_t>(key.size());
  memcpy(e + 1, key.data(), key.size());
  s.Put(bucket, entry_off);
  s.Put(s.header()->dir_count, s.header()->dir_count + 1);
  return Entry{value_off, size, kind, true};
}

bool DirFind(Segment& s, const std::string& key, Entry* out) {
  Guard lock(s);
  for (uint64_t off = Bucket(s, key); off; off = s.at<DirEntry>(off)->next) {
    const DirEntry* e = s.at<DirEntry>(off);
    if (!KeyIs(s, e, key)) continue;
    *out = Entry{e->value_off, e->value_size, e->kind, false};
    return true;
  }
  return false;
}

bool DirRemove(Segment& s, const std::string& key) {
  Guard lock(s);
  uint64_t* link = &Bucket(s, key);
  for (uint64_t off = *link; off; link = &s.at<DirEntry>(off)->next, off = *link) {
    DirEntry* e = s.at<DirEntry>(off);
    if (!KeyIs(s, e, key)) continue;
    s.Put(*link, e->next);
    if (e->kind == kEntryRecord) {
      uint64_t data = s.at<RecordHeader>(e->value_off)->data_off.load(std::memory_order_relaxed);
      if (data) SlabFree(s, data);
    }
    SlabFree(s, e->value_off);
    SlabFree(s, off);
    s.Put(s.header()->dir_count, s.header()->dir_count - 1);
    return true;
  }
  return false;
}

void DirList(Segment& s, const std::function<void(const std::string&, const Entry&)>& visit) {
  Guard lock(s);
  const Header* h = s.header();
  const uint64_t* buckets = s.at<uint64_t>(h->dir_off);
  for (uint32_t b = 0; b < h->dir_buckets; b++)
    for (uint64_t off = buckets[b]; off; off = s.at<DirEntry>(off)->next) {
      const DirEntry* e = s.at<DirEntry>(off);
      visit(std::string(reinterpret_cast<const char*>(e + 1), e->key_len),
            Entry{e->value_off, e->value_size, e->kind, false});
    }
}

RecordWriteResult RecordWrite(Segment& s, uint64_t record, const uint8_t* data, uint64_t length, int64_t expected) {
  Guard lock(s);
  RecordHeader* r = s.at<RecordHeader>(record);
  // Under the mutex the sequence is even (a dead writer's half publication was rolled
  // back when the mutex was taken): generation = seq / 2.
  if (expected >= 0 && (r->seq.load(std::memory_order_relaxed) >> 1) != static_cast<uint64_t>(expected)) return RecordWriteResult::Conflict;
  const uint64_t block = SlabAlloc(s, sizeof(uint64_t) + length);
  if (!block) return RecordWriteResult::NoRoom;
  *s.at<uint64_t>(block) = length;
  memcpy(s.at<uint8_t>(block + sizeof(uint64_t)), data, length);
  const uint32_t seq = r->seq.load(std::memory_order_relaxed);
  const uint64_t old = r->data_off.load(std::memory_order_relaxed);
  s.PutSeq(r->seq, seq + 1);
  std::atomic_thread_fence(std::memory_order_release);
  s.Put(*reinterpret_cast<uint64_t*>(&r->data_off), block);
  std::atomic_thread_fence(std::memory_order_release);
  s.PutSeq(r->seq, seq + 2);
  // Readers that still copy the old block see seq move and retry.
  if (old) SlabFree(s, old);
  return RecordWriteResult::Written;
}

std::string RecordRead(Segment& s, uint64_t record) {
  const RecordHeader* r = s.at<RecordHeader>(record);
  const uint64_t limit = s.size();
  for (int attempt = 0; attempt < 10000; attempt++) {
    const uint32_t before = r->seq.load(std::memory_order_acquire);
    if (before & 1) {
      sched_yield();
      continue;
    }
    const uint64_t block = r->data_off.load(std::memory_order_acquire);
    std::string out;
    if (block) {
      // The block may be freed and reused under us: bound every read by the zone and let
      // the sequence check below throw away what was read.
      if (block + sizeof(uint64_t) > limit) continue;
      const uint64_t length = *s.at<volatile uint64_t>(block);
      if (length > limit - block - sizeof(uint64_t)) continue;
      out.assign(s.at<const char>(block + sizeof(uint64_t)), length);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (r->seq.load(std::memory_order_relaxed) == before) return out;
  }
  // A writer died in the middle of a publication: taking the mutex recovers the record.
  Guard lock(s);
  const uint64_t block = r->data_off.load(std::memory_order_relaxed);
  if (!block) return std::string();
  return std::string(s.at<const char>(block + sizeof(uint64_t)), *s.at<uint64_t>(block));
}

namespace {

// Who holds a slot, as an error message says it: a thread of this process, or another
// process (and its thread, when that is not the main one).
std::string Holder(uint64_t owner) {
  const uint32_t tid = OwnerPid(owner);
  const uint32_t process = OwnerProcess(owner);
  if (process == static_cast<uint32_t>(getpid()))
    return "live thread " + std::to_string(tid) +
           " of this process: each thread that writes needs a slot of its own (a worker thread claims a free one "
           "unless setWorkerSlot() names one)";
  if (process != 0 && process != tid)
    return "live process " + std::to_string(process) + " (its thread " + std::to_string(tid) + ")";
  return "live process " + std::to_string(tid);
}

}  // namespace

int32_t ClaimSlot(Segment& s, int32_t slot) {
  Header* h = s.header();
  // A slot is a thread's: two threads of one process writing one shard would lose counts
  // (their plain stores race), so they are two owners. A process's main thread is the
  // process, as before threads had slots of their own.
  const uint64_t self = SelfThreadOwner();
  const int32_t slots = static_cast<int32_t>(h->worker_slots);
  if (slot >= slots)
    throw ZoneError("worker slot " + std::to_string(slot) + " is out of range: the zone has " + std::to_string(slots) +
                    " slots (0 to " + std::to_string(slots - 1) + ")");
  auto take = [&](int32_t i) {
    uint64_t cur = h->claims[i].load(std::memory_order_acquire);
    if (cur == self) return true;
    if (cur != 0 && OwnerAlive(cur)) return false;
    return h->claims[i].compare_exchange_strong(cur, self, std::memory_order_acq_rel);
  };
  // Marked before the claimer's first write to the shard (a seq_cst read-modify-write
  // orders it before the plain stores that follow), so a reader that skips an unmarked
  // shard skips nothing anyone wrote.
  auto written = [&](int32_t i) {
    h->written_slots[i / 32].fetch_or(1u << (i % 32));
    return i;
  };
  if (slot >= 0) {
    if (take(slot)) return written(slot);
    throw ZoneError("worker slot " + std::to_string(slot) + " is held by " + Holder(h->claims[slot].load()));
  }
  for (int32_t i = 0; i < slots; i++)
    if (h->claims[i].load(std::memory_order_acquire) == self) return written(i);
  for (int32_t i = 0; i < slots; i++)
    if (take(i)) return written(i);
  throw ZoneError("all " + std::to_string(slots) + " worker slots of the zone are held by live processes");
}

bool ReleaseSlot(Segment& s, int32_t slot) {
  Header* h = s.header();
  if (slot < 0 || slot >= static_cast<int32_t>(h->worker_slots)) return false;
  uint64_t self = SelfThreadOwner();
  return h->claims[slot].compare_exchange_strong(self, 0, std::memory_order_acq_rel);
}

}  // namespace zonal
