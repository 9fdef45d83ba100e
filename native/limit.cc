#include "limit.h"

#include <time.h>

#include <cstring>

#include "slab.h"
#include "store.h"

namespace zonal {

namespace {

// The longest time a bucket leaks for (about 12 days): keeps rate * ms far from overflow.
constexpr int64_t kMaxElapsedMs = int64_t{1} << 30;

uint32_t Hash(const uint8_t* key, uint32_t len) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (uint32_t i = 0; i < len; i++) h = (h ^ key[i]) * 16777619u;
  return h;
}

struct Table {
  Segment& s;
  LimitTable* t;

  uint64_t& Bucket(uint32_t hash) const { return s.at<uint64_t>(t->buckets_off)[hash & (t->buckets - 1)]; }
  LimitNode* Node(uint64_t off) const { return s.at<LimitNode>(off); }
  LimitHold* Hold(uint64_t off) const { return s.at<LimitHold>(off); }

  uint64_t Find(uint32_t hash, const uint8_t* key, uint32_t len) const {
    for (uint64_t off = Bucket(hash); off; off = Node(off)->hash_next) {
      const LimitNode* n = Node(off);
      if (n->hash == hash && n->key_len == len && memcmp(n + 1, key, len) == 0) return off;
    }
    return 0;
  }

  // A node with the key, not yet linked anywhere; 0 when the slab has no room.
  uint64_t Alloc(uint32_t hash, const uint8_t* key, uint32_t len) {
    const uint64_t off = SlabAlloc(s, sizeof(LimitNode) + len);
    if (!off) return 0;
    // The slot was free before this call (SlabAlloc kept its first word for a rollback).
    LimitNode* n = Node(off);
    memset(n, 0, sizeof(LimitNode));
    n->hash = hash;
    n->key_len = len;
    memcpy(n + 1, key, len);
    return off;
  }

  void Link(uint64_t off) {
    LimitNode* n = Node(off);
    uint64_t& bucket = Bucket(n->hash);
    n->hash_next = bucket;
    s.Put(bucket, off);
    s.Put(t->nodes, t->nodes + 1);
  }

  void LruRemove(uint64_t off) {
    LimitNode* n = Node(off);
    if (n->lru_prev) s.Put(Node(n->lru_prev)->lru_next, n->lru_next);
    else s.Put(t->lru_head, n->lru_next);
    if (n->lru_next) s.Put(Node(n->lru_next)->lru_prev, n->lru_prev);
    else s.Put(t->lru_tail, n->lru_prev);
  }

  void LruPush(uint64_t off) {
    LimitNode* n = Node(off);
    s.Put(n->lru_prev, uint64_t{0});
    s.Put(n->lru_next, t->lru_head);
    if (t->lru_head) s.Put(Node(t->lru_head)->lru_prev, off);
    else s.Put(t->lru_tail, off);
    s.Put(t->lru_head, off);
  }

  // Unlinks the node from its hash chain and the LRU list (every limit_req node is on it,
  // and the limit_conn nodes nobody holds) and frees it.
  void Remove(uint64_t off) {
    LimitNode* n = Node(off);
    uint64_t* link = &Bucket(n->hash);
    while (*link && *link != off) link = &Node(*link)->hash_next;
    if (*link) s.Put(*link, n->hash_next);
    if (t->kind == kLimitReq || n->excess == 0) LruRemove(off);
    s.Put(t->nodes, t->nodes - 1);
    SlabFree(s, off);
  }

  // ngx_http_limit_req_expire: n == 1 removes up to two idle entries (a minute unused and
  // leaked empty); n == 0 also removes the least recently used one first, whatever it is.
  void Expire(int n, uint64_t rate, uint64_t now) {
    while (n < 3) {
      const uint64_t off = t->lru_tail;
      if (!off) return;
      const LimitNode* lr = Node(off);
      if (n++ != 0) {
        int64_t ms = static_cast<int64_t>(now - lr->last);
        if (ms < 0) ms = -ms;
        if (ms < 60000) return;
        if (ms > kMaxElapsedMs) ms = kMaxElapsedMs;
        if (lr->excess - static_cast<int64_t>(rate) * ms / 1000 > 0) return;
      }
      Remove(off);
    }
  }
};

Table Open(Segment& s, uint64_t table, uint32_t kind) { return Table{s, LimitTableAt(s, table, kind)}; }

// Ends a hold: off its node's list and its slot's list, and freed.
void DropHold(Table& tb, uint64_t hold) {
  Segment& s = tb.s;
  LimitHold* h = tb.Hold(hold);
  LimitNode* n = tb.Node(h->node);
  uint64_t* link = &n->last;
  while (*link && *link != hold) link = &tb.Hold(*link)->node_next;
  if (*link) s.Put(*link, h->node_next);
  if (h->slot_prev) s.Put(tb.Hold(h->slot_prev)->slot_next, h->slot_next);
  else s.Put(tb.t->slot_holds[h->slot], h->slot_next);
  if (h->slot_next) s.Put(tb.Hold(h->slot_next)->slot_prev, h->slot_prev);
  SlabFree(s, hold);
}

// Undo entries a reclaim may use: the rest of the log stays for the call's own writes
// (a node or hold freed takes up to some 25; a call would abort past the capacity).
constexpr uint32_t kReclaimBudget = kUndoCapacity * 2 / 3;

bool WithinBudget(Segment& s) { return s.header()->undo.count.load(std::memory_order_relaxed) < kReclaimBudget; }

// A limit_conn node nobody holds stays in the table, idle on the LRU list, with its
// holds at zero: a client with one request at a time then takes and gives back without
// allocating. The zone reclaims idle nodes, least recently used first, when a new key
// or hold has no room: as many as the call's undo budget allows. A node whose holds are
// not all ended within it stays idle, with the holds left.
void ReclaimIdle(Table& tb) {
  while (tb.t->lru_tail && WithinBudget(tb.s)) {
    const uint64_t off = tb.t->lru_tail;
    while (tb.Node(off)->last && WithinBudget(tb.s)) DropHold(tb, tb.Node(off)->last);
    if (tb.Node(off)->last) return;
    tb.Remove(off);
  }
}

// An allocation for a limit_conn table, reclaiming idle nodes when the zone is full.
uint64_t ConnAlloc(Table& tb, uint64_t size) {
  uint64_t off = SlabAlloc(tb.s, size);
  if (!off && tb.t->lru_tail) {
    ReclaimIdle(tb);
    off = SlabAlloc(tb.s, size);
  }
  return off;
}

}  // namespace

uint64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

uint64_t LimitTableEnsure(Segment& s, const std::string& key, uint32_t kind) {
  const Entry e = DirEnsure(s, key, kEntryBlock, sizeof(LimitTable));
  if (!e.offset) return 0;
  Guard lock(s);
  LimitTable* t = s.at<LimitTable>(e.offset);
  if (t->magic == kLimitMagic && t->kind != kind) throw ZoneError("key \"" + key + "\" holds another kind of limit table");
  if (t->buckets_off) return e.offset;
  // About one bucket per 256 bytes of the zone: chains of one or two nodes when it is full.
  uint64_t n = 64;
  while (n < s.header()->pool_size / 256 && n < (uint64_t{1} << 20)) n <<= 1;
  const uint64_t buckets = SlabAlloc(s, n * sizeof(uint64_t));
  if (!buckets) return 0;
  memset(s.at<uint8_t>(buckets), 0, n * sizeof(uint64_t));
  s.Put(t->magic, kLimitMagic);
  s.Put(t->kind, kind);
  s.Put(t->buckets, n);
  s.Put(t->buckets_off, buckets);
  return e.offset;
}

LimitTable* LimitTableAt(Segment& s, uint64_t table, uint32_t kind) {
  const SlabPool& p = s.header()->pool;
  if (table < p.data_off || table % 8 != 0 || table + sizeof(LimitTable) > s.size())
    throw ZoneError("not a limit table offset");
  LimitTable* t = s.at<LimitTable>(table);
  if (t->magic != kLimitMagic || !t->buckets_off) throw ZoneError("not a limit table offset");
  if (kind != 0 && t->kind != kind) throw ZoneError(kind == kLimitReq ? "not a request limit table" : "not a connection limit table");
  return t;
}

int64_t LimitReqTake(Segment& s, uint64_t table, const uint8_t* key, uint32_t len, uint64_t rate, uint64_t burst,
                     LimitReqMode mode, uint64_t now_ms) {
  Guard lock(s);
  Table tb = Open(s, table, kLimitReq);
  // The time is read under the mutex: the callers' charges are then in time order.
  const uint64_t now = now_ms ? now_ms : MonotonicMs();
  const uint32_t hash = Hash(key, len);
  if (uint64_t off = tb.Find(hash, key, len)) {
    LimitNode* lr = tb.Node(off);
    if (tb.t->lru_head != off) {
      tb.LruRemove(off);
      tb.LruPush(off);
    }
    int64_t ms = static_cast<int64_t>(now - lr->last);
    if (ms < -60000) ms = 1;
    else if (ms < 0) ms = 0;
    else if (ms > kMaxElapsedMs) ms = kMaxElapsedMs;
    int64_t excess = lr->excess - static_cast<int64_t>(rate) * ms / 1000 + 1000;
    if (excess < 0) excess = 0;
    if (mode != LimitReqMode::Account && static_cast<uint64_t>(excess) > burst) return kLimitBusy;
    if (mode == LimitReqMode::Look) return excess;
    s.Put(lr->excess, excess);
    if (ms) s.Put(lr->last, now);
    return excess;
  }
  tb.Expire(1, rate, now);
  uint64_t off = tb.Alloc(hash, key, len);
  if (!off) {
    tb.Expire(0, rate, now);
    off = tb.Alloc(hash, key, len);
    if (!off) return kLimitExhausted;
  }
  // As nginx: a limit that only looks leaves `last` at 0, so that its account finds the
  // bucket empty; one that charges starts the bucket now, empty.
  tb.Node(off)->last = mode == LimitReqMode::Look ? 0 : now;
  tb.Link(off);
  tb.LruPush(off);
  return 0;
}

int32_t LimitConnAcquire(Segment& s, uint64_t table, const uint8_t* key, uint32_t len, uint64_t limit, uint32_t slot) {
  Guard lock(s);
  Table tb = Open(s, table, kLimitConn);
  if (slot >= s.header()->worker_slots) throw ZoneError("worker slot " + std::to_string(slot) + " is out of range");
  const uint32_t hash = Hash(key, len);
  uint64_t off = tb.Find(hash, key, len);
  const bool created = off == 0;
  if (created) {
    off = ConnAlloc(tb, sizeof(LimitNode) + len);
    if (!off) return -1;
    LimitNode* n = tb.Node(off);
    memset(n, 0, sizeof(LimitNode));
    n->hash = hash;
    n->key_len = len;
    memcpy(n + 1, key, len);
  }
  LimitNode* n = tb.Node(off);
  if (limit > 0 && static_cast<uint64_t>(n->excess) >= limit) return 0;
  // Off the idle list first: reclaiming room for its hold must not take the node itself.
  const bool was_idle = !created && n->excess == 0;
  if (was_idle) tb.LruRemove(off);
  uint64_t hold = n->last;
  while (hold && tb.Hold(hold)->slot != slot) hold = tb.Hold(hold)->node_next;
  if (!hold) {
    hold = ConnAlloc(tb, sizeof(LimitHold));
    if (!hold) {
      if (created) SlabFree(s, off);
      else if (was_idle) tb.LruPush(off);
      return -1;
    }
    LimitHold* h = tb.Hold(hold);
    h->node = off;
    h->node_next = n->last;
    h->slot_prev = 0;
    h->slot_next = tb.t->slot_holds[slot];
    h->slot = slot;
    h->count = 0;
    if (created) n->last = hold;
    else s.Put(n->last, hold);
    if (h->slot_next) s.Put(tb.Hold(h->slot_next)->slot_prev, hold);
    s.Put(tb.t->slot_holds[slot], hold);
  }
  if (created) tb.Link(off);
  s.Put(tb.Hold(hold)->count, tb.Hold(hold)->count + 1);
  s.Put(n->excess, n->excess + 1);
  return 1;
}

bool LimitConnRelease(Segment& s, uint64_t table, const uint8_t* key, uint32_t len, uint32_t slot) {
  Guard lock(s);
  Table tb = Open(s, table, kLimitConn);
  const uint64_t off = tb.Find(Hash(key, len), key, len);
  if (!off) return false;
  LimitNode* n = tb.Node(off);
  uint64_t hold = n->last;
  while (hold && tb.Hold(hold)->slot != slot) hold = tb.Hold(hold)->node_next;
  if (!hold || tb.Hold(hold)->count == 0) return false;
  s.Put(tb.Hold(hold)->count, tb.Hold(hold)->count - 1);
  s.Put(n->excess, n->excess - 1);
  if (n->excess == 0) tb.LruPush(off);
  return true;
}

uint32_t LimitConnRepair(Segment& s, uint64_t table, uint32_t slot, uint32_t max) {
  Guard lock(s);
  Table tb = Open(s, table, kLimitConn);
  if (slot >= s.header()->worker_slots) return 0;
  uint32_t done = 0;
  // Bounded per call: each ended hold takes some tens of undo entries.
  while (done < max && tb.t->slot_holds[slot]) {
    const uint64_t hold = tb.t->slot_holds[slot];
    const uint64_t off = tb.Hold(hold)->node;
    LimitNode* n = tb.Node(off);
    const int64_t before = n->excess;
    s.Put(n->excess, before - static_cast<int64_t>(tb.Hold(hold)->count));
    DropHold(tb, hold);
    if (before > 0 && n->excess == 0) tb.LruPush(off);
    done++;
  }
  return done;
}

int64_t LimitPeek(Segment& s, uint64_t table, const uint8_t* key, uint32_t len) {
  Guard lock(s);
  Table tb = Open(s, table, 0);
  const uint64_t off = tb.Find(Hash(key, len), key, len);
  return off ? tb.Node(off)->excess : -1;
}

uint64_t LimitNodes(Segment& s, uint64_t table) {
  Guard lock(s);
  return Open(s, table, 0).t->nodes;
}

std::string LimitCheck(Segment& s, uint64_t table) {
  Guard lock(s);
  Table tb = Open(s, table, 0);
  LimitTable* t = tb.t;
  const uint64_t limit = s.size() / sizeof(LimitNode) + 1;
  uint64_t nodes = 0;
  uint64_t idle = 0;
  for (uint64_t b = 0; b < t->buckets; b++)
    for (uint64_t off = s.at<uint64_t>(t->buckets_off)[b]; off; off = tb.Node(off)->hash_next) {
      if (++nodes > limit) return "a hash chain loops";
      const LimitNode* n = tb.Node(off);
      if ((n->hash & (t->buckets - 1)) != b) return "a node is in the wrong bucket";
      if (t->kind == kLimitConn) {
        int64_t held = 0;
        uint64_t holds = 0;
        for (uint64_t h = n->last; h; h = tb.Hold(h)->node_next) {
          if (++holds > kMaxWorkerSlots) return "a node's holds loop";
          if (tb.Hold(h)->node != off) return "a hold names another node";
          held += static_cast<int64_t>(tb.Hold(h)->count);
        }
        if (held != n->excess || held < 0) return "a node's count is not what its holds hold";
        if (held == 0) idle++;
      }
    }
  if (nodes != t->nodes) return "the node count is " + std::to_string(t->nodes) + " but " + std::to_string(nodes) + " are linked";
  {
    // limit_req: every node is on the LRU list; limit_conn: the idle ones.
    uint64_t listed = 0;
    for (uint64_t off = t->lru_head, prev = 0; off; prev = off, off = tb.Node(off)->lru_next) {
      if (++listed > limit) return "the LRU list loops";
      if (tb.Node(off)->lru_prev != prev) return "an LRU back link is wrong";
      if (t->kind == kLimitConn && tb.Node(off)->excess != 0) return "a held node is on the idle list";
      if (!tb.Node(off)->lru_next && t->lru_tail != off) return "the LRU tail is wrong";
    }
    const uint64_t expected = t->kind == kLimitReq ? nodes : idle;
    if (listed != expected) return "the LRU list has " + std::to_string(listed) + " nodes, not " + std::to_string(expected);
  }
  if (t->kind == kLimitConn) {
    for (uint32_t slot = 0; slot < kMaxWorkerSlots; slot++) {
      uint64_t n = 0;
      for (uint64_t h = t->slot_holds[slot], prev = 0; h; prev = h, h = tb.Hold(h)->slot_next) {
        if (++n > limit) return "a slot's holds loop";
        if (tb.Hold(h)->slot_prev != prev || tb.Hold(h)->slot != slot) return "a slot's hold list is wrong";
      }
    }
  }
  return "";
}

}  // namespace zonal
