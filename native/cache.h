// The proxy cache's keys in its zone's slab: one node per cache key (the MD5 of the
// key, as nginx names its files) with the entry's validity, size, uses, version, the
// updating flag (with its deadline, so that a dead updater does not hold it for ever) and
// LRU links. Every call is one critical section under the zone mutex with the undo log,
// so that all workers see one cache and a worker killed mid-call leaves it consistent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "segment.h"

namespace zonal {

constexpr uint32_t kCacheMagic = 0x48434143;  // "CACH"
constexpr uint32_t kCacheMaxShards = 16;

struct CacheTable {
  uint32_t magic;
  uint32_t shards;
  uint64_t buckets_off;
  uint64_t buckets;
  uint64_t lru_head;
  uint64_t lru_tail;
  uint64_t nodes;
  uint64_t size;  // bytes of the entries on disk
  uint64_t versions;  // the last version given: versions are unique in the table
  uint64_t shard_size[kCacheMaxShards];
};

struct CacheNode {
  uint64_t hash_next;
  uint64_t lru_prev;
  uint64_t lru_next;
  uint8_t key[16];
  int64_t valid_until;  // ms since the epoch: the files carry it across restarts
  int64_t accessed;     // ms since the epoch
  int64_t updating;     // ms since the epoch until which one request fetches it; 0 none
  uint64_t size;
  uint64_t version;  // moves at every store: a worker's copy of a body is current while equal
  uint32_t uses;
  uint32_t hash;
  uint32_t exists;
  uint32_t shard;
};

enum class CacheState : int32_t {
  Hit = 0,
  Miss = 1,          // fetch it; `store` says whether the response may be written
  MissLocked = 2,    // another request fetches it (proxy_cache_lock): wait
  Expired = 3,       // in the cache but expired; this request updates it
  Updating = 4,      // expired, and another request updates it
  Exhausted = 5,     // no room for a node even after evicting
};

struct CacheLookupResult {
  CacheState state;
  bool store;  // Miss/Expired: the response may be written (min_uses reached)
  uint64_t version;
  uint64_t size;
  int64_t valid_until;
};

// An entry the table let go of, whose file must go too.
struct CacheEvicted {
  uint8_t key[16];
  uint64_t size;
  uint32_t shard;
  bool exists;
};

uint64_t CacheTableEnsure(Segment& s, const std::string& key);
CacheTable* CacheTableAt(Segment& s, uint64_t table);

// nginx's ngx_http_file_cache_exists: counts a use, and says what the request does.
// `lock_ms` > 0 takes the updating flag for that long when this request is to fetch an
// expired entry, and a new one too when `lock_misses` (proxy_cache_lock).
CacheLookupResult CacheLookup(Segment& s, uint64_t table, const uint8_t* key, int64_t now, uint32_t min_uses, int64_t lock_ms,
                              bool lock_misses, std::vector<CacheEvicted>* evicted);
// A response was written to the key's file: the node exists with this size and validity,
// its updating flag cleared. Returns the change of the cache's size in bytes.
int64_t CacheStore(Segment& s, uint64_t table, const uint8_t* key, int64_t now, int64_t valid_until, uint64_t size,
                   uint32_t shard, std::vector<CacheEvicted>* evicted, uint64_t* version);
// The fetch ended without a store: the flag goes, so that others fetch.
void CacheRelease(Segment& s, uint64_t table, const uint8_t* key);
// An expired entry revalidated (304): valid again, same body.
bool CacheRefresh(Segment& s, uint64_t table, const uint8_t* key, int64_t valid_until);
// The key's file is missing or broken: the node goes. Returns the bytes the cache lost.
int64_t CacheForget(Segment& s, uint64_t table, const uint8_t* key);
// The loader found the key's file: a node unless one is there. Returns bytes added.
int64_t CacheLoad(Segment& s, uint64_t table, const uint8_t* key, int64_t now, int64_t valid_until, uint64_t size,
                  uint32_t shard, std::vector<CacheEvicted>* evicted);
// The manager: removes, least recently used first, nodes unused for `inactive_ms`, then
// while the cache (or a shard) is above its max size; at most `max` of them.
void CacheExpire(Segment& s, uint64_t table, int64_t now, int64_t inactive_ms, uint64_t max_size,
                 const uint64_t* shard_max, uint32_t shards, uint32_t max, std::vector<CacheEvicted>* evicted);
// [size, nodes, shard sizes...]
std::vector<uint64_t> CacheSizes(Segment& s, uint64_t table);
std::string CacheCheck(Segment& s, uint64_t table);

}  // namespace zonal
