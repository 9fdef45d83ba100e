#include "cache.h"

#include <cstring>

#include "keyed.h"
#include "slab.h"
#include "store.h"

namespace zonal {

namespace {

using Table = Keyed<CacheTable, CacheNode>;

uint32_t HashOf(const uint8_t* key) {
  uint32_t h;
  memcpy(&h, key, sizeof h);  // an MD5 is uniform already
  return h;
}

Table Open(Segment& s, uint64_t table) { return Table{s, CacheTableAt(s, table)}; }

uint64_t Find(const Table& tb, const uint8_t* key) {
  for (uint64_t off = tb.Bucket(HashOf(key)); off; off = tb.At(off)->hash_next)
    if (memcmp(tb.At(off)->key, key, 16) == 0) return off;
  return 0;
}

// Unlinks and frees a node, its bytes out of the sizes; the caller unlinks its file.
void Remove(Table& tb, uint64_t off, std::vector<CacheEvicted>* evicted) {
  Segment& s = tb.s;
  CacheNode* n = tb.At(off);
  if (n->exists) {
    s.Put(tb.t->size, tb.t->size - n->size);
    if (n->shard < kCacheMaxShards) s.Put(tb.t->shard_size[n->shard], tb.t->shard_size[n->shard] - n->size);
  }
  if (evicted) {
    CacheEvicted e;
    memcpy(e.key, n->key, 16);
    e.size = n->size;
    e.shard = n->shard;
    e.exists = n->exists != 0;
    evicted->push_back(e);
  }
  tb.Unlink(off);
  tb.LruRemove(off);
  SlabFree(s, off);
}

// A node for the key, linked; when the zone is full, the least recently used nodes that
// nobody updates make room, as nginx's ngx_http_file_cache_forced_expire.
uint64_t Make(Table& tb, const uint8_t* key, int64_t now, std::vector<CacheEvicted>* evicted) {
  uint64_t off = SlabAlloc(tb.s, sizeof(CacheNode));
  for (int tries = 0; !off && tries < 20; tries++) {
    uint64_t victim = tb.t->lru_tail;
    while (victim && tb.At(victim)->updating > now) victim = tb.At(victim)->lru_prev;
    if (!victim) return 0;
    Remove(tb, victim, evicted);
    off = SlabAlloc(tb.s, sizeof(CacheNode));
  }
  if (!off) return 0;
  // The slot was free before this call (SlabAlloc kept its first word for a rollback).
  CacheNode* n = tb.At(off);
  memset(n, 0, sizeof(CacheNode));
  memcpy(n->key, key, 16);
  n->hash = HashOf(key);
  n->accessed = now;
  tb.Link(off);
  tb.LruPush(off);
  return off;
}

}  // namespace

uint64_t CacheTableEnsure(Segment& s, const std::string& key) {
  const Entry e = DirEnsure(s, key, kEntryBlock, sizeof(CacheTable));
  if (!e.offset) return 0;
  Guard lock(s);
  CacheTable* t = s.at<CacheTable>(e.offset);
  if (t->buckets_off) return e.offset;
  Table tb{s, t};
  if (!tb.MakeBuckets()) return 0;
  s.Put(t->magic, kCacheMagic);
  return e.offset;
}

CacheTable* CacheTableAt(Segment& s, uint64_t table) {
  const SlabPool& p = s.header()->pool;
  if (table < p.data_off || table % 8 != 0 || table + sizeof(CacheTable) > s.size()) throw ZoneError("not a cache table offset");
  CacheTable* t = s.at<CacheTable>(table);
  if (t->magic != kCacheMagic || !t->buckets_off) throw ZoneError("not a cache table offset");
  return t;
}

CacheLookupResult CacheLookup(Segment& s, uint64_t table, const uint8_t* key, int64_t now, uint32_t min_uses, int64_t lock_ms,
                              bool lock_misses, std::vector<CacheEvicted>* evicted) {
  Guard lock(s);
  Table tb = Open(s, table);
  CacheLookupResult r{CacheState::Miss, false, 0, 0, 0};
  uint64_t off = Find(tb, key);
  if (!off) {
    off = Make(tb, key, now, evicted);
    if (!off) {
      r.state = CacheState::Exhausted;
      return r;
    }
  } else {
    tb.Touch(off);
  }
  CacheNode* n = tb.At(off);
  s.Put(n->uses, n->uses + 1);
  s.Put(n->accessed, now);
  r.version = n->version;
  r.size = n->size;
  r.valid_until = n->valid_until;
  if (n->exists && n->valid_until > now) {
    r.state = CacheState::Hit;
    return r;
  }
  const bool busy = n->updating > now;
  if (n->exists) {
    r.state = busy ? CacheState::Updating : CacheState::Expired;
  } else if (busy) {
    r.state = CacheState::MissLocked;
  }
  if (busy) return r;
  r.store = n->uses >= min_uses;
  if (r.store && lock_ms > 0 && (n->exists || lock_misses)) s.Put(n->updating, now + lock_ms);
  return r;
}

int64_t CacheStore(Segment& s, uint64_t table, const uint8_t* key, int64_t now, int64_t valid_until, uint64_t size,
                   uint32_t shard, std::vector<CacheEvicted>* evicted, uint64_t* version) {
  Guard lock(s);
  Table tb = Open(s, table);
  uint64_t off = Find(tb, key);
  if (!off) {
    off = Make(tb, key, now, evicted);
    if (!off) return 0;
  } else {
    tb.Touch(off);
  }
  CacheNode* n = tb.At(off);
  if (shard >= kCacheMaxShards) shard = 0;
  int64_t delta = static_cast<int64_t>(size);
  if (n->exists) {
    delta -= static_cast<int64_t>(n->size);
    s.Put(tb.t->shard_size[n->shard], tb.t->shard_size[n->shard] - n->size);
  }
  s.Put(tb.t->shard_size[shard], tb.t->shard_size[shard] + size);
  s.Put(tb.t->size, static_cast<uint64_t>(static_cast<int64_t>(tb.t->size) + delta));
  s.Put(n->exists, uint32_t{1});
  s.Put(n->size, size);
  s.Put(n->shard, shard);
  s.Put(n->valid_until, valid_until);
  s.Put(n->updating, int64_t{0});
  s.Put(n->accessed, now);
  s.Put(tb.t->versions, tb.t->versions + 1);
  s.Put(n->version, tb.t->versions);
  if (version) *version = n->version;
  return delta;
}

void CacheRelease(Segment& s, uint64_t table, const uint8_t* key) {
  Guard lock(s);
  Table tb = Open(s, table);
  if (uint64_t off = Find(tb, key)) s.Put(tb.At(off)->updating, int64_t{0});
}

bool CacheRefresh(Segment& s, uint64_t table, const uint8_t* key, int64_t valid_until) {
  Guard lock(s);
  Table tb = Open(s, table);
  const uint64_t off = Find(tb, key);
  if (!off || !tb.At(off)->exists) return false;
  s.Put(tb.At(off)->valid_until, valid_until);
  s.Put(tb.At(off)->updating, int64_t{0});
  return true;
}

int64_t CacheForget(Segment& s, uint64_t table, const uint8_t* key) {
  Guard lock(s);
  Table tb = Open(s, table);
  const uint64_t off = Find(tb, key);
  if (!off) return 0;
  const int64_t lost = tb.At(off)->exists ? static_cast<int64_t>(tb.At(off)->size) : 0;
  Remove(tb, off, nullptr);
  return -lost;
}

int64_t CacheLoad(Segment& s, uint64_t table, const uint8_t* key, int64_t now, int64_t valid_until, uint64_t size,
                  uint32_t shard, std::vector<CacheEvicted>* evicted) {
  Guard lock(s);
  Table tb = Open(s, table);
  if (Find(tb, key)) return 0;
  const uint64_t off = Make(tb, key, now, evicted);
  if (!off) return 0;
  if (shard >= kCacheMaxShards) shard = 0;
  CacheNode* n = tb.At(off);
  // Fresh from SlabAlloc and Make: its words are logged already or were free.
  s.Put(n->exists, uint32_t{1});
  s.Put(n->size, size);
  s.Put(n->shard, shard);
  s.Put(n->valid_until, valid_until);
  s.Put(tb.t->versions, tb.t->versions + 1);
  s.Put(n->version, tb.t->versions);
  s.Put(tb.t->size, tb.t->size + size);
  s.Put(tb.t->shard_size[shard], tb.t->shard_size[shard] + size);
  return static_cast<int64_t>(size);
}

void CacheExpire(Segment& s, uint64_t table, int64_t now, int64_t inactive_ms, uint64_t max_size, const uint64_t* shard_max,
                 uint32_t shards, uint32_t max, std::vector<CacheEvicted>* evicted) {
  Guard lock(s);
  Table tb = Open(s, table);
  uint32_t done = 0;
  uint64_t off = tb.t->lru_tail;
  while (off && done < max) {
    CacheNode* n = tb.At(off);
    const uint64_t prev = n->lru_prev;
    bool over = max_size > 0 && tb.t->size > max_size;
    if (!over && n->shard < shards && shard_max && shard_max[n->shard] > 0)
      over = tb.t->shard_size[n->shard] > shard_max[n->shard];
    const bool idle = now - n->accessed >= inactive_ms;
    if (n->updating <= now && (idle || (over && n->exists))) {
      Remove(tb, off, evicted);
      done++;
    } else if (!over && !idle) {
      // Older nodes are behind: none of them is idle, and nothing is over its size
      // unless a shard further back is.
      bool any_shard_over = false;
      for (uint32_t i = 0; i < shards && shard_max; i++)
        if (shard_max[i] > 0 && tb.t->shard_size[i] > shard_max[i]) any_shard_over = true;
      if (!any_shard_over) break;
    }
    off = prev;
  }
}

std::vector<uint64_t> CacheSizes(Segment& s, uint64_t table) {
  Guard lock(s);
  CacheTable* t = CacheTableAt(s, table);
  std::vector<uint64_t> out{t->size, t->nodes};
  for (uint32_t i = 0; i < kCacheMaxShards; i++) out.push_back(t->shard_size[i]);
  return out;
}

std::string CacheCheck(Segment& s, uint64_t table) {
  Guard lock(s);
  Table tb = Open(s, table);
  std::string e = tb.Check(s.size() / sizeof(CacheNode) + 1);
  if (!e.empty()) return e;
  uint64_t size = 0;
  for (uint64_t off = tb.t->lru_head; off; off = tb.At(off)->lru_next)
    if (tb.At(off)->exists) size += tb.At(off)->size;
  if (size != tb.t->size) return "the cache size is " + std::to_string(tb.t->size) + " but its entries hold " + std::to_string(size);
  return "";
}

}  // namespace zonal
