#include "segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "slab.h"

namespace zonal {

namespace {

constexpr const char* kShmDir = "/dev/shm";
constexpr size_t kMaxNameLength = 100;

std::string ShmName(const std::string& instance, const std::string& name) {
  return "/zonal." + instance + "." + name;
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

std::string ErrnoText(int err) { return std::string(strerror(err)); }

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

// Field 22 of /proc/<pid>/stat: start time in clock ticks after boot. 0 if unknown.
uint64_t StartTime(uint32_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%u/stat", pid);
  FILE* f = fopen(path, "re");
  if (!f) return 0;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
  char* p = strrchr(buf, ')');
  if (!p) return 0;
  int field = 2;
  for (; *p && field < 22; p++)
    if (*p == ' ') field++;
  return strtoull(p, nullptr, 10);
}

uint32_t PageShift(uint64_t page) {
  uint32_t shift = 0;
  while ((uint64_t{1} << shift) < page) shift++;
  return shift;
}

uint32_t BucketsFor(uint64_t npages) {
  uint32_t b = 64;
  while (b < npages / 2 && b < 65536) b <<= 1;
  return b;
}

// Reads the header of an existing zone file without mapping it; false if it is no zone.
bool PeekHeader(int fd, Header* out) {
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(Header)) return false;
  return pread(fd, out, offsetof(Header, mutex), 0) == static_cast<ssize_t>(offsetof(Header, mutex));
}

// A zone file left behind by a creator that is gone (killed before it could clean up).
bool IsStale(int fd) {
  Header h;
  if (!PeekHeader(fd, &h) || h.owner == 0) return false;
  if (h.magic != 0 && h.magic != kMagic) return false;
  return !OwnerAlive(h.owner);
}

}  // namespace

uint64_t SelfOwner() {
  static uint64_t owner = 0;
  uint32_t pid = static_cast<uint32_t>(getpid());
  if (owner == 0 || OwnerPid(owner) != pid) owner = StartTime(pid) << 22 | pid;
  return owner;
}

uint64_t SelfThreadOwner() {
  thread_local uint64_t owner = 0;
  // After a fork the thread id is another: the word is made again.
  uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  if (owner == 0 || OwnerPid(owner) != tid) owner = StartTime(tid) << 22 | tid;
  return owner;
}

uint32_t OwnerProcess(uint64_t owner) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%u/status", OwnerPid(owner));
  FILE* f = fopen(path, "re");
  if (!f) return 0;
  char line[256];
  uint32_t tgid = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "Tgid:", 5) == 0) {
      tgid = static_cast<uint32_t>(strtoul(line + 5, nullptr, 10));
      break;
    }
  fclose(f);
  return tgid;
}

// A thread id is in the pid space: kill() finds a thread by it as it finds a process, and
// /proc/<tid>/stat gives the thread's own start time.
bool OwnerAlive(uint64_t owner) {
  uint32_t pid = OwnerPid(owner);
  if (pid == 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  uint64_t start = StartTime(pid);
  return start == 0 || start == (owner >> 22);
}

void Segment::ValidateName(const char* what, const std::string& name) {
  if (name.empty()) throw ZoneError(std::string(what) + " name must not be empty");
  if (name.size() > kMaxNameLength)
    throw ZoneError(std::string(what) + " name " + Quote(name.substr(0, 20) + "...") + " is longer than " +
                    std::to_string(kMaxNameLength) + " bytes");
  if (name.find('\0') != std::string::npos)
    throw ZoneError(std::string(what) + " name must not contain a NUL byte");
  if (name.find('/') != std::string::npos)
    throw ZoneError(std::string(what) + " name " + Quote(name) + " must not contain \"/\"");
  if (name.find("..") != std::string::npos)
    throw ZoneError(std::string(what) + " name " + Quote(name) + " must not contain \"..\"");
}

Segment* Segment::Create(const std::string& instance, const std::string& name, uint64_t size,
                         uint32_t worker_slots) {
  ValidateName("instance", instance);
  ValidateName("zone", name);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint32_t page_shift = PageShift(page);
  if (size < page)
    throw ZoneError("zone " + Quote(name) + " size " + std::to_string(size) + " is below one page (" +
                    std::to_string(page) + " bytes)");
  if (worker_slots < 1 || worker_slots > kMaxWorkerSlots)
    throw ZoneError("zone " + Quote(name) + " needs 1 to " + std::to_string(kMaxWorkerSlots) +
                    " worker slots, not " + std::to_string(worker_slots));
  if (page_shift - kMinSlotShift > kMaxSlotKinds) throw ZoneError("page size " + std::to_string(page) + " is not supported");

  // Limits first, before anything is created: a zone can never be larger than physical
  // memory, nor than what /dev/shm has left (tmpfs would SIGBUS on first touch).
  const uint64_t npages = AlignUp(size, page) / page;
  const uint64_t phys = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * page;
  struct statvfs vfs;
  const uint64_t shm_free = statvfs(kShmDir, &vfs) == 0 ? uint64_t{vfs.f_bavail} * vfs.f_frsize : phys;
  const uint64_t limit = std::min(phys, shm_free);
  if (size > limit || npages >= kNone)
    throw ZoneError("zone " + Quote(name) + " size " + std::to_string(size) + " exceeds the machine's limit of " +
                    std::to_string(limit) + " bytes of shared memory");

  const uint32_t buckets = BucketsFor(npages);
  const uint64_t dir_off = AlignUp(sizeof(Header), 64);
  const uint64_t descs_off = dir_off + uint64_t{buckets} * 8;
  const uint64_t data_off = AlignUp(descs_off + npages * sizeof(PageDesc), page);
  const uint64_t total = data_off + npages * page;
  if (total > limit)
    throw ZoneError("zone " + Quote(name) + " needs " + std::to_string(total) +
                    " bytes with its header, over the machine's limit of " + std::to_string(limit) + " bytes");

  const std::string shm = ShmName(instance, name);
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
    fd = shm_open(shm.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) break;
    int old = shm_open(shm.c_str(), O_RDONLY | O_CLOEXEC, 0);
    bool stale = old >= 0 && IsStale(old);
    Header h{};
    bool known = old >= 0 && PeekHeader(old, &h);
    if (old >= 0) close(old);
    if (!stale)
      throw ZoneError("zone " + Quote(name) + " of instance " + Quote(instance) + " already exists" +
                      (known && h.owner ? " (created by live process " + std::to_string(OwnerPid(h.owner)) + ")"
                                        : ""));
    shm_unlink(shm.c_str());
  }
  if (fd < 0) throw ZoneError("cannot create zone " + Quote(name) + ": " + ErrnoText(errno));

  int err = posix_fallocate(fd, 0, static_cast<off_t>(total));
  if (err != 0) {
    close(fd);
    shm_unlink(shm.c_str());
    throw ZoneError("cannot reserve " + std::to_string(total) + " bytes for zone " + Quote(name) + ": " +
                    ErrnoText(err));
  }
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(shm.c_str());
    throw ZoneError("cannot map zone " + Quote(name) + ": " + ErrnoText(err));
  }

  Segment* s = new Segment(static_cast<uint8_t*>(p), total);
  Header* h = s->header();
  h->owner = SelfOwner();  // first, so that a creator dying from here on leaves a stale file
  h->layout_version = kLayoutVersion;
  h->size = total;
  h->pool_size = size;
  h->page_size = page;
  h->worker_slots = worker_slots;
  h->dir_buckets = buckets;
  h->dir_off = dir_off;
  h->created_ms = NowMs();
  // Slot 0 is the first a writer claims (claims go low-first): reading it from the start
  // costs nothing in a zone that workers write, and a shard 0 written with no claim (the
  // tests stage a dead writer's half-done move there by hand) is still read.
  h->written_slots[0].store(1, std::memory_order_relaxed);
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&h->mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  SlabInit(*s, static_cast<uint32_t>(npages), page_shift, descs_off, data_off);
  std::atomic_thread_fence(std::memory_order_release);
  reinterpret_cast<std::atomic<uint32_t>*>(&h->magic)->store(kMagic, std::memory_order_release);
  return s;
}

Segment* Segment::Attach(const std::string& instance, const std::string& name) {
  ValidateName("instance", instance);
  ValidateName("zone", name);
  const std::string shm = ShmName(instance, name);
  int fd = shm_open(shm.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    if (errno == ENOENT)
      throw ZoneError("zone " + Quote(name) + " of instance " + Quote(instance) + " does not exist");
    throw ZoneError("cannot open zone " + Quote(name) + ": " + ErrnoText(errno));
  }
  Header h{};
  struct stat st;
  if (!PeekHeader(fd, &h) || fstat(fd, &st) != 0) {
    close(fd);
    throw ZoneError("zone " + Quote(name) + " is not a zonal zone (too small for a header)");
  }
  if (h.magic == 0) {
    close(fd);
    throw ZoneError("zone " + Quote(name) + " is still being created");
  }
  if (h.magic != kMagic) {
    close(fd);
    throw ZoneError("zone " + Quote(name) + " is not a zonal zone (bad magic)");
  }
  if (h.layout_version != kLayoutVersion) {
    close(fd);
    throw ZoneError("zone " + Quote(name) + " has layout version " + std::to_string(h.layout_version) +
                    ", this build reads version " + std::to_string(kLayoutVersion));
  }
  if (h.size != static_cast<uint64_t>(st.st_size)) {
    close(fd);
    throw ZoneError("zone " + Quote(name) + " is truncated: header says " + std::to_string(h.size) +
                    " bytes, file has " + std::to_string(st.st_size));
  }
  void* p = mmap(nullptr, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED) throw ZoneError("cannot map zone " + Quote(name) + ": " + ErrnoText(err));
  return new Segment(static_cast<uint8_t*>(p), h.size);
}

bool Segment::Remove(const std::string& instance, const std::string& name) {
  ValidateName("instance", instance);
  ValidateName("zone", name);
  return shm_unlink(ShmName(instance, name).c_str()) == 0;
}

uint32_t Segment::RemoveStale(const std::string& instance) {
  if (!instance.empty()) ValidateName("instance", instance);
  const std::string prefix = instance.empty() ? "zonal." : "zonal." + instance + ".";
  DIR* dir = opendir(kShmDir);
  if (!dir) return 0;
  uint32_t removed = 0;
  while (dirent* e = readdir(dir)) {
    if (strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    const std::string shm = std::string("/") + e->d_name;
    int fd = shm_open(shm.c_str(), O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) continue;
    bool stale = IsStale(fd);
    close(fd);
    if (stale && shm_unlink(shm.c_str()) == 0) removed++;
  }
  closedir(dir);
  return removed;
}

Segment::~Segment() { Unmap(); }

void Segment::Unmap() {
  if (base_) munmap(base_, size_);
  base_ = nullptr;
}

void Segment::Log(uint64_t offset, bool seq) {
  UndoLog& undo = header()->undo;
  uint32_t n = undo.count.load(std::memory_order_relaxed);
  if (n >= kUndoCapacity) {
    // Every operation has a fixed bound on its writes far below the capacity: reaching
    // it is a bug in this file, and going on would make the zone unrecoverable.
    fprintf(stderr, "zonal: undo log overflow\n");
    abort();
  }
  UndoEntry& e = undo.entries[n];
  if (seq) {
    e.offset = offset | kSeqFlag;
    e.old = 0;
  } else {
    e.offset = offset & ~uint64_t{7};
    e.old = *at<uint64_t>(e.offset);
  }
  // The entry must be complete before it counts, and counted before the write it guards:
  // a process killed between any two instructions leaves a log that undoes exactly what
  // it did. (Signal fences stop the compiler; stores retire in order on one thread.)
  std::atomic_signal_fence(std::memory_order_seq_cst);
  undo.count.store(n + 1, std::memory_order_release);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (stall_after_ >= 0 && n + 1 >= static_cast<uint32_t>(stall_after_)) {
    static const char msg[] = "zonal: stalled holding the zone mutex\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    for (;;) pause();
  }
}

void Segment::PutSeq(std::atomic<uint32_t>& seq, uint32_t value) {
  Log(offset_of(&seq), true);
  seq.store(value, std::memory_order_release);
}

void Segment::Rollback() {
  UndoLog& undo = header()->undo;
  uint32_t n = undo.count.load(std::memory_order_acquire);
  if (n > kUndoCapacity) n = kUndoCapacity;
  for (uint32_t i = n; i-- > 0;) {
    const UndoEntry& e = undo.entries[i];
    if (e.offset & kSeqFlag) {
      auto* seq = at<std::atomic<uint32_t>>(e.offset & ~kSeqFlag);
      seq->store((seq->load(std::memory_order_relaxed) | 1) + 1, std::memory_order_release);
    } else {
      *at<uint64_t>(e.offset) = e.old;
    }
  }
  undo.count.store(0, std::memory_order_release);
}

void Segment::Lock() {
  if (!base_) throw ZoneError("zone is detached");
  Header* h = header();
  int r = pthread_mutex_lock(&h->mutex);
  if (r == EOWNERDEAD) {
    // The previous owner died inside a critical section: undo what it had done.
    Rollback();
    h->recoveries++;
    pthread_mutex_consistent(&h->mutex);
  } else if (r != 0) {
    throw ZoneError("cannot lock zone mutex: " + ErrnoText(r));
  }
}

void Segment::Unlock(bool commit) {
  if (!commit) Rollback();
  header()->undo.count.store(0, std::memory_order_release);
  pthread_mutex_unlock(&header()->mutex);
}

}  // namespace zonal
