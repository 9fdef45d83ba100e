// A mapped zone: creation, attachment and removal of the shared-memory segment, its
// robust mutex and the undo log that keeps the zone consistent when a process dies
// holding that mutex.
#pragma once

#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "layout.h"

namespace zonal {

// Errors meant for the JS caller, with a message that says what was wrong.
struct ZoneError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Segment {
 public:
  static Segment* Create(const std::string& instance, const std::string& name, uint64_t size,
                         uint32_t worker_slots);
  static Segment* Attach(const std::string& instance, const std::string& name);
  static bool Remove(const std::string& instance, const std::string& name);
  // Removes zones whose creating process is gone; returns how many.
  static uint32_t RemoveStale(const std::string& instance);
  static void ValidateName(const char* what, const std::string& name);

  ~Segment();

  uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }
  Header* header() const { return reinterpret_cast<Header*>(base_); }
  bool detached() const { return base_ == nullptr; }
  // Unmaps now; later calls see detached() and refuse.
  void Unmap();

  template <class T>
  T* at(uint64_t offset) const {
    return reinterpret_cast<T*>(base_ + offset);
  }
  uint64_t offset_of(const void* p) const {
    return static_cast<uint64_t>(static_cast<const uint8_t*>(p) - base_);
  }

  // Every write to shared structures inside a critical section goes through Put, which
  // first records the old contents of the enclosing 64-bit word.
  template <class T>
  void Put(T& field, T value) {
    static_assert(sizeof(T) <= 8, "one word at a time");
    Log(offset_of(&field), false);
    field = value;
  }
  void PutSeq(std::atomic<uint32_t>& seq, uint32_t value);
  // Records the word at `p` so that a rollback restores it, for writes that follow
  // without Put (filling a freshly allocated block whose first word held allocator state).
  void Preserve(const void* p) { Log(offset_of(p), false); }

  void Lock();
  // commit=false undoes the critical section's writes (an exception left it half done).
  void Unlock(bool commit = true);

  // Test hook: the next critical section stops for good after this many logged writes,
  // holding the mutex, so a test can kill the process in the middle of an operation.
  void StallAfter(int32_t writes) { stall_after_ = writes; }

 private:
  Segment(uint8_t* base, uint64_t size) : base_(base), size_(size) {}
  void Log(uint64_t offset, bool seq);
  void Rollback();

  uint8_t* base_;
  uint64_t size_;
  int32_t stall_after_ = -1;
};

class Guard {
 public:
  explicit Guard(Segment& s) : s_(s), exceptions_(std::uncaught_exceptions()) { s_.Lock(); }
  ~Guard() { s_.Unlock(std::uncaught_exceptions() == exceptions_); }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  Segment& s_;
  int exceptions_;
};

// Owner words: start time << 22 | pid. A pid alone can be reused by a later process;
// with the start time (clock ticks since boot) the pair names one process for good.
uint64_t SelfOwner();
// The same word for the calling thread: its start time and thread id. A worker slot is
// claimed by a thread, so that two threads of one process never write one shard; for a
// process's main thread (its thread id is its pid) it is SelfOwner().
uint64_t SelfThreadOwner();
// Alive: the process or thread the word names still runs.
bool OwnerAlive(uint64_t owner);
inline uint32_t OwnerPid(uint64_t owner) { return static_cast<uint32_t>(owner & 0x3fffff); }
// The process an owner word's thread belongs to (its pid for a process); 0 if unknown.
uint32_t OwnerProcess(uint64_t owner);

}  // namespace zonal
