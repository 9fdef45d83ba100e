// Keyed limit tables in a zone's slab: nginx's limit_req (a leaky bucket per key, in
// milli-requests) and limit_conn (a count per key of what is in progress). Every
// decision is one call under the zone mutex, every write logged in the undo log, so that
// all processes see one state and a process killed mid-call leaves it consistent.
#pragma once

#include <cstdint>
#include <string>

#include "segment.h"

namespace zonal {

constexpr uint32_t kLimitMagic = 0x544d494c;  // "LIMT"
constexpr uint32_t kLimitReq = 1;
constexpr uint32_t kLimitConn = 2;

struct LimitTable {
  uint32_t magic;
  uint32_t kind;
  uint64_t buckets_off;  // 0 until the bucket array is made
  uint64_t buckets;      // a power of two
  uint64_t lru_head;     // most recently used node (limit_req); most recently idle (limit_conn)
  uint64_t lru_tail;
  uint64_t nodes;
  uint64_t slot_holds[kMaxWorkerSlots];  // limit_conn: each worker slot's holds
};

struct LimitNode {
  uint64_t hash_next;
  uint64_t lru_prev;
  uint64_t lru_next;
  int64_t excess;  // limit_req: milli-requests over the rate; limit_conn: held in all slots
                   // (a node held by none stays, idle on the LRU list, until its room is needed)
  uint64_t last;   // limit_req: ms of the last charge; limit_conn: the first of its holds
  uint32_t hash;
  uint32_t key_len;
  // key bytes follow
};

// What one worker slot holds of one limit_conn key: the primary gives it back when the
// worker dies.
struct LimitHold {
  uint64_t node;
  uint64_t node_next;
  uint64_t slot_prev;
  uint64_t slot_next;
  uint64_t slot;
  uint64_t count;
};

// limit_req results besides an excess (>= 0, milli-requests).
constexpr int64_t kLimitBusy = -1;
constexpr int64_t kLimitExhausted = -2;

enum class LimitReqMode { Charge = 0, Look = 1, Account = 2 };

// The table under `key`, made on first use; 0 when the zone has no room for it.
uint64_t LimitTableEnsure(Segment& s, const std::string& key, uint32_t kind);
// Throws unless `table` is the offset of a table of `kind` (0: of either kind).
LimitTable* LimitTableAt(Segment& s, uint64_t table, uint32_t kind);

// nginx's ngx_http_limit_req_lookup: the key's excess after this request (milli-
// requests), kLimitBusy over `burst`, kLimitExhausted when no node could be made.
// Charge records the request; Look only reads (a limit that is not the last one of a
// request); Account records it without checking the burst (those limits, once all
// passed).
int64_t LimitReqTake(Segment& s, uint64_t table, const uint8_t* key, uint32_t len, uint64_t rate, uint64_t burst,
                     LimitReqMode mode, uint64_t now_ms);

// 1 passed, 0 rejected (`limit` held already), -1 exhausted (no room, even after
// reclaiming a few idle keys).
int32_t LimitConnAcquire(Segment& s, uint64_t table, const uint8_t* key, uint32_t len, uint64_t limit, uint32_t slot);
// False when the slot holds nothing of the key.
bool LimitConnRelease(Segment& s, uint64_t table, const uint8_t* key, uint32_t len, uint32_t slot);
// Gives back up to `max` of what `slot` holds; returns how many holds it ended (0: none left).
uint32_t LimitConnRepair(Segment& s, uint64_t table, uint32_t slot, uint32_t max);
// limit_req: the key's excess; limit_conn: its count; -1 when the key has no node.
int64_t LimitPeek(Segment& s, uint64_t table, const uint8_t* key, uint32_t len);
uint64_t LimitNodes(Segment& s, uint64_t table);
// "" when the hash chains, the LRU list, the counts and the holds agree.
std::string LimitCheck(Segment& s, uint64_t table);

uint64_t MonotonicMs();

}  // namespace zonal
