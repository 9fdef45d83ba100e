// A keyed table's links in a zone's slab: hash chains and a least-recently-used list of
// nodes, every write through Segment::Put so that the undo log can roll a dead writer's
// half-done change back. Shared by the tables that index keys in a zone (the proxy
// cache's keys; its node and table field names are those of the limit tables, so they
// can take it too). Callers hold the zone mutex.
#pragma once

#include <cstdint>

#include "segment.h"
#include "slab.h"

namespace zonal {

// Table: buckets_off, buckets (a power of two), lru_head, lru_tail, nodes.
// Node: hash_next, lru_prev, lru_next, hash.
template <class Table, class Node>
struct Keyed {
  Segment& s;
  Table* t;

  uint64_t& Bucket(uint32_t hash) const { return s.at<uint64_t>(t->buckets_off)[hash & (t->buckets - 1)]; }
  Node* At(uint64_t off) const { return s.at<Node>(off); }

  void Link(uint64_t off) {
    Node* n = At(off);
    uint64_t& bucket = Bucket(n->hash);
    s.Put(n->hash_next, bucket);
    s.Put(bucket, off);
    s.Put(t->nodes, t->nodes + 1);
  }

  void Unlink(uint64_t off) {
    Node* n = At(off);
    uint64_t* link = &Bucket(n->hash);
    while (*link && *link != off) link = &At(*link)->hash_next;
    if (*link) s.Put(*link, n->hash_next);
    s.Put(t->nodes, t->nodes - 1);
  }

  void LruRemove(uint64_t off) {
    Node* n = At(off);
    if (n->lru_prev) s.Put(At(n->lru_prev)->lru_next, n->lru_next);
    else s.Put(t->lru_head, n->lru_next);
    if (n->lru_next) s.Put(At(n->lru_next)->lru_prev, n->lru_prev);
    else s.Put(t->lru_tail, n->lru_prev);
  }

  void LruPush(uint64_t off) {
    Node* n = At(off);
    s.Put(n->lru_prev, uint64_t{0});
    s.Put(n->lru_next, t->lru_head);
    if (t->lru_head) s.Put(At(t->lru_head)->lru_prev, off);
    else s.Put(t->lru_tail, off);
    s.Put(t->lru_head, off);
  }

  // Most recently used first.
  void Touch(uint64_t off) {
    if (t->lru_head == off) return;
    LruRemove(off);
    LruPush(off);
  }

  // Makes the bucket array of about one bucket per 256 bytes of the zone; false when the
  // zone has no room for it.
  bool MakeBuckets() {
    uint64_t n = 64;
    while (n < s.header()->pool_size / 256 && n < (uint64_t{1} << 20)) n <<= 1;
    const uint64_t buckets = SlabAlloc(s, n * sizeof(uint64_t));
    if (!buckets) return false;
    memset(s.at<uint8_t>(buckets), 0, n * sizeof(uint64_t));
    s.Put(t->buckets, n);
    s.Put(t->buckets_off, buckets);
    return true;
  }

  // "" when the chains, the LRU list and the count agree; `limit` bounds every walk.
  std::string Check(uint64_t limit) const {
    uint64_t nodes = 0;
    for (uint64_t b = 0; b < t->buckets; b++)
      for (uint64_t off = s.at<uint64_t>(t->buckets_off)[b]; off; off = At(off)->hash_next) {
        if (++nodes > limit) return "a hash chain loops";
        if ((At(off)->hash & (t->buckets - 1)) != b) return "a node is in the wrong bucket";
      }
    if (nodes != t->nodes) return "the node count is " + std::to_string(t->nodes) + " but " + std::to_string(nodes) + " are linked";
    uint64_t listed = 0;
    for (uint64_t off = t->lru_head, prev = 0; off; prev = off, off = At(off)->lru_next) {
      if (++listed > limit) return "the LRU list loops";
      if (At(off)->lru_prev != prev) return "an LRU back link is wrong";
      if (!At(off)->lru_next && t->lru_tail != off) return "the LRU tail is wrong";
    }
    if (listed != nodes) return "the LRU list has " + std::to_string(listed) + " nodes of " + std::to_string(nodes);
    return "";
  }
};

}  // namespace zonal
