// What lives in a zone's slab: a key directory through which processes find the blocks
// others allocated, seqlocked records, and the worker slot claims.
#pragma once

#include <functional>
#include <string>

#include "segment.h"

namespace zonal {

struct Entry {
  uint64_t offset = 0;  // of the value; 0 when there was no room
  uint64_t size = 0;
  uint32_t kind = 0;
  bool created = false;
};

// Finds `key`, or allocates a zeroed value of `size` bytes under it. Throws when the key
// exists with another kind or size. offset 0: the zone is full (counted in slab fails).
Entry DirEnsure(Segment& s, const std::string& key, uint32_t kind, uint64_t size);
bool DirFind(Segment& s, const std::string& key, Entry* out);
bool DirRemove(Segment& s, const std::string& key);
void DirList(Segment& s, const std::function<void(const std::string&, const Entry&)>& visit);

// Publishes a new content of the record at `record` (a RecordHeader); false when the
// zone has no room for it, in which case the old content stays.
// Publishes new content. With `expected` >= 0, only if the record's generation (writes so
// far) is still `expected`: a compare-and-swap for read-modify-write updates.
enum class RecordWriteResult { Written, NoRoom, Conflict };
RecordWriteResult RecordWrite(Segment& s, uint64_t record, const uint8_t* data, uint64_t length, int64_t expected = -1);
// A consistent copy of the record's content: never a mix of two writes.
std::string RecordRead(Segment& s, uint64_t record);

// Claims a worker slot for the calling thread (a process's main thread is the process):
// `slot` itself, or any free one when slot < 0. A slot whose owner died (a process, or a
// thread that ended) is free again, its shard keeping its counts; one a live owner holds
// is refused with an error that names the slot and its holder.
int32_t ClaimSlot(Segment& s, int32_t slot);
// Gives the calling thread's claim on `slot` up; false when it held none there.
bool ReleaseSlot(Segment& s, int32_t slot);

}  // namespace zonal
