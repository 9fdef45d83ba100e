// The JS face of the native core: one wrapped object per mapped zone. Hot-path writes do
// not come through here: JS writes counters through typed views over `buffer`.
#include <napi.h>

#include <unistd.h>

#include <cstring>
#include <vector>

#include "limit.h"
#include "segment.h"
#include "slab.h"
#include "store.h"
#include "cache.h"

namespace zonal {

namespace {

// The mapping outlives whichever of its two users goes last: the wrapper object and the
// external ArrayBuffer that JS views read and write through.
struct Mapping {
  Segment* segment;
  int refs;
  void Release() {
    if (--refs == 0) {
      delete segment;
      delete this;
    }
  }
};

// The slots this thread claimed, each with a hold on its mapping: given up when the
// thread's Node environment ends (a worker thread exiting), so that the next thread finds
// them free at once. (A slot whose thread ended is free anyway once that is seen; this
// makes it so at the thread's end, and does not depend on it.)
struct Claimed {
  Mapping* mapping;
  int32_t slot;
};
thread_local std::vector<Claimed> claimed;

void ReleaseClaimed() {
  for (const Claimed& c : claimed) {
    if (!c.mapping->segment->detached()) ReleaseSlot(*c.mapping->segment, c.slot);
    c.mapping->Release();
  }
  claimed.clear();
}

template <class F>
auto Guarded(Napi::Env env, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ZoneError& e) {
    throw Napi::Error::New(env, e.what());
  } catch (const std::bad_alloc&) {
    throw Napi::Error::New(env, "out of process memory");
  }
}

std::string StringArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info.Length() <= i || !info[i].IsString())
    throw Napi::TypeError::New(info.Env(), std::string(what) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

// Whole numbers only: sizes and offsets are never fractional, negative or past 2^53.
uint64_t NumberArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info.Length() <= i || !info[i].IsNumber())
    throw Napi::TypeError::New(info.Env(), std::string(what) + " must be a number");
  double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v >= 0) || v > 9007199254740991.0 || v != static_cast<double>(static_cast<uint64_t>(v)))
    throw Napi::RangeError::New(info.Env(), std::string(what) + " must be a whole number from 0 to 2^53-1");
  return static_cast<uint64_t>(v);
}

// NumberArg for the per-decision calls: the type check is the read's own status, one
// N-API call per argument instead of two.
uint64_t WholeArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  double v;
  if (info.Length() <= i || napi_get_value_double(info.Env(), info[i], &v) != napi_ok)
    throw Napi::TypeError::New(info.Env(), std::string(what) + " must be a number");
  if (!(v >= 0) || v > 9007199254740991.0 || v != static_cast<double>(static_cast<uint64_t>(v)))
    throw Napi::RangeError::New(info.Env(), std::string(what) + " must be a whole number from 0 to 2^53-1");
  return static_cast<uint64_t>(v);
}

class Zone : public Napi::ObjectWrap<Zone> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeZone",
                       {
                           StaticMethod<&Zone::Create>("create"),
                           StaticMethod<&Zone::Attach>("attach"),
                           StaticMethod<&Zone::Remove>("remove"),
                           StaticMethod<&Zone::RemoveStale>("removeStale"),
                           InstanceAccessor<&Zone::Buffer>("buffer"),
                           InstanceMethod<&Zone::Info>("info"),
                           InstanceMethod<&Zone::Alloc>("alloc"),
                           InstanceMethod<&Zone::Free>("free"),
                           InstanceMethod<&Zone::SlabStatsPacked>("slabStatsPacked"),
                           InstanceMethod<&Zone::Check>("check"),
                           InstanceMethod<&Zone::Ensure>("ensure"),
                           InstanceMethod<&Zone::Find>("find"),
                           InstanceMethod<&Zone::Drop>("drop"),
                           InstanceMethod<&Zone::Entries>("entries"),
                           InstanceMethod<&Zone::WriteRecord>("writeRecord"),
                           InstanceMethod<&Zone::ReadRecord>("readRecord"),
                           InstanceMethod<&Zone::Claim>("claim"),
                           InstanceMethod<&Zone::Release>("release"),
                           InstanceMethod<&Zone::Detach>("detach"),
                           InstanceMethod<&Zone::StallAfter>("stallAfter"),
                           InstanceMethod<&Zone::CacheTableOf>("cacheTable"),
                           InstanceMethod<&Zone::CacheLookupOf>("cacheLookup"),
                           InstanceMethod<&Zone::CacheStoreOf>("cacheStore"),
                           InstanceMethod<&Zone::CacheReleaseOf>("cacheRelease"),
                           InstanceMethod<&Zone::CacheRefreshOf>("cacheRefresh"),
                           InstanceMethod<&Zone::CacheForgetOf>("cacheForget"),
                           InstanceMethod<&Zone::CacheLoadOf>("cacheLoad"),
                           InstanceMethod<&Zone::CacheExpireOf>("cacheExpire"),
                           InstanceMethod<&Zone::CacheSizesOf>("cacheSizes"),
                           InstanceMethod<&Zone::CacheCheckOf>("cacheCheck"),
                           InstanceMethod<&Zone::LimitTableMethod>("limitTable"),
                           InstanceMethod<&Zone::LimitReqMethod>("limitReq"),
                           InstanceMethod<&Zone::LimitConnAcquireMethod>("limitConnAcquire"),
                           InstanceMethod<&Zone::LimitConnReleaseMethod>("limitConnRelease"),
                           InstanceMethod<&Zone::LimitConnRepairMethod>("limitConnRepair"),
                           InstanceMethod<&Zone::LimitPeekMethod>("limitPeek"),
                           InstanceMethod<&Zone::LimitNodesMethod>("limitNodes"),
                           InstanceMethod<&Zone::LimitCheckMethod>("limitCheck"),
                       });
  }

  Zone(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Zone>(info) {
    if (info.Length() != 1 || !info[0].IsExternal())
      throw Napi::TypeError::New(info.Env(), "use NativeZone.create() or NativeZone.attach()");
    mapping_ = new Mapping{info[0].As<Napi::External<Segment>>().Data(), 1};
  }
  ~Zone() override { mapping_->Release(); }

 private:
  static Napi::Value Wrap(Napi::Env env, Segment* s) {
    auto ctor = env.GetInstanceData<Napi::FunctionReference>();
    return ctor->New({Napi::External<Segment>::New(env, s)});
  }

  static Napi::Value Create(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::string instance = StringArg(info, 0, "instance");
    std::string name = StringArg(info, 1, "zone name");
    uint64_t size = NumberArg(info, 2, "zone size");
    uint64_t slots = NumberArg(info, 3, "worker slots");
    if (slots > kMaxWorkerSlots) slots = kMaxWorkerSlots + 1;  // let Create word the error
    return Wrap(env, Guarded(env, [&] { return Segment::Create(instance, name, size, static_cast<uint32_t>(slots)); }));
  }

  static Napi::Value Attach(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::string instance = StringArg(info, 0, "instance");
    std::string name = StringArg(info, 1, "zone name");
    return Wrap(env, Guarded(env, [&] { return Segment::Attach(instance, name); }));
  }

  static Napi::Value Remove(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::string instance = StringArg(info, 0, "instance");
    std::string name = StringArg(info, 1, "zone name");
    return Napi::Boolean::New(env, Guarded(env, [&] { return Segment::Remove(instance, name); }));
  }

  static Napi::Value RemoveStale(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::string instance = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
    return Napi::Number::New(env, Guarded(env, [&] { return Segment::RemoveStale(instance); }));
  }

  Segment& seg(Napi::Env env) {
    Segment* s = mapping_->segment;
    if (s->detached()) throw Napi::Error::New(env, "zone is detached");
    return *s;
  }

  Napi::Value Buffer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!buffer_.IsEmpty()) return buffer_.Value();
    Segment& s = seg(env);
    mapping_->refs++;
    auto ab = Napi::ArrayBuffer::New(env, s.base(), s.size(), [](Napi::Env, void*, Mapping* m) { m->Release(); },
                                     mapping_);
    buffer_ = Napi::Reference<Napi::ArrayBuffer>::New(ab, 1);
    return ab;
  }

  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const Header* h = seg(env).header();
    Napi::Object o = Napi::Object::New(env);
    o.Set("size", Napi::Number::New(env, static_cast<double>(h->size)));
    o.Set("poolSize", Napi::Number::New(env, static_cast<double>(h->pool_size)));
    o.Set("pageSize", Napi::Number::New(env, static_cast<double>(h->page_size)));
    o.Set("workerSlots", Napi::Number::New(env, h->worker_slots));
    o.Set("creatorPid", Napi::Number::New(env, OwnerPid(h->owner)));
    o.Set("createdMs", Napi::Number::New(env, static_cast<double>(h->created_ms)));
    o.Set("entries", Napi::Number::New(env, static_cast<double>(h->dir_count)));
    o.Set("recoveries", Napi::Number::New(env, static_cast<double>(h->recoveries)));
    o.Set("layoutVersion", Napi::Number::New(env, h->layout_version));
    return o;
  }

  Napi::Value Alloc(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    uint64_t size = NumberArg(info, 0, "size");
    return Napi::Number::New(env, static_cast<double>(Guarded(env, [&] {
                               Guard lock(s);
                               return SlabAlloc(s, size);
                             })));
  }

  Napi::Value Free(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    uint64_t off = NumberArg(info, 0, "offset");
    return Napi::Boolean::New(env, Guarded(env, [&] {
                                Guard lock(s);
                                return SlabFree(s, off);
                              }));
  }

  // The slab statistics in one Float64Array: pages used, pages free, then used, free,
  // reqs and fails for each slot size from 8 up. One array rather than objects of
  // objects: /status/slabs reads a thousand zones per request.
  Napi::Value SlabStatsPacked(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    // Only the figures shown are copied under the lock, not the whole pool.
    uint32_t npages = 0, free_pages = 0, nslots = 0;
    SlotStats stats[kMaxSlotKinds];
    Guarded(env, [&] {
      Guard lock(s);
      const SlabPool& pool = s.header()->pool;
      npages = pool.npages;
      free_pages = pool.free_pages;
      nslots = pool.nslots < kMaxSlotKinds ? pool.nslots : kMaxSlotKinds;
      std::memcpy(stats, pool.stats, nslots * sizeof(SlotStats));
      return 0;
    });
    // Into the caller's array when it passes one large enough (a render reuses one, once
    // per zone per answer): one query of the array, where each of Napi's checks is one.
    const size_t length = 2 + 4 * nslots;
    napi_value result = info.Length() > 0 ? static_cast<napi_value>(info[0]) : nullptr;
    napi_typedarray_type type;
    size_t elements = 0;
    void* data = nullptr;
    if (result == nullptr || napi_get_typedarray_info(env, result, &type, &elements, &data, nullptr, nullptr) != napi_ok ||
        type != napi_float64_array || elements < length) {
      Napi::Float64Array fresh = Napi::Float64Array::New(env, length);
      data = fresh.Data();
      result = fresh;
    }
    double* out = static_cast<double*>(data);
    out[0] = npages - free_pages;
    out[1] = free_pages;
    for (uint32_t k = 0; k < nslots; k++) {
      const SlotStats& st = stats[k];
      out[2 + 4 * k] = static_cast<double>(st.used);
      out[3 + 4 * k] = static_cast<double>(st.total - st.used);
      out[4 + 4 * k] = static_cast<double>(st.reqs);
      out[5 + 4 * k] = static_cast<double>(st.fails);
    }
    return Napi::Value(env, result);
  }

  Napi::Value Check(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    return Napi::String::New(env, Guarded(env, [&] {
                               Guard lock(s);
                               return SlabCheck(s);
                             }));
  }

  static Napi::Value EntryValue(Napi::Env env, const Entry& e) {
    Napi::Array a = Napi::Array::New(env, 3);
    a.Set(0u, Napi::Number::New(env, static_cast<double>(e.offset)));
    a.Set(1u, Napi::Number::New(env, static_cast<double>(e.size)));
    a.Set(2u, Napi::Number::New(env, e.created ? 1 : 0));
    return a;
  }

  // ensure(key, kind, size) -> [offset, size, created] or null when the zone is full.
  Napi::Value Ensure(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    std::string key = StringArg(info, 0, "key");
    uint64_t kind = NumberArg(info, 1, "kind");
    uint64_t size = NumberArg(info, 2, "size");
    if (kind < kEntryBlock || kind > kEntryRecord) throw Napi::RangeError::New(env, "unknown entry kind");
    if (kind == kEntryRecord) size = sizeof(RecordHeader);
    Entry e = Guarded(env, [&] { return DirEnsure(s, key, static_cast<uint32_t>(kind), size); });
    return e.offset ? EntryValue(env, e) : env.Null();
  }

  Napi::Value Find(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    std::string key = StringArg(info, 0, "key");
    Entry e;
    bool found = Guarded(env, [&] { return DirFind(s, key, &e); });
    if (!found) return env.Null();
    Napi::Array a = Napi::Array::New(env, 3);
    a.Set(0u, Napi::Number::New(env, static_cast<double>(e.offset)));
    a.Set(1u, Napi::Number::New(env, static_cast<double>(e.size)));
    a.Set(2u, Napi::Number::New(env, e.kind));
    return a;
  }

  Napi::Value Drop(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    std::string key = StringArg(info, 0, "key");
    return Napi::Boolean::New(env, Guarded(env, [&] { return DirRemove(s, key); }));
  }

  // entries() -> [[key, kind, offset, size], ...]
  Napi::Value Entries(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    Napi::Array out = Napi::Array::New(env);
    uint32_t i = 0;
    Guarded(env, [&] {
      DirList(s, [&](const std::string& key, const Entry& e) {
        Napi::Array a = Napi::Array::New(env, 4);
        a.Set(0u, Napi::String::New(env, key));
        a.Set(1u, Napi::Number::New(env, e.kind));
        a.Set(2u, Napi::Number::New(env, static_cast<double>(e.offset)));
        a.Set(3u, Napi::Number::New(env, static_cast<double>(e.size)));
        out.Set(i++, a);
      });
      return 0;
    });
    return out;
  }

  // Records are named by the offset ensure() returned; check it is one before touching it.
  uint64_t RecordArg(const Napi::CallbackInfo& info, Segment& s) {
    uint64_t off = NumberArg(info, 0, "record offset");
    const SlabPool& p = s.header()->pool;
    if (off < p.data_off || off + sizeof(RecordHeader) > s.size() || off % alignof(RecordHeader) != 0)
      throw Napi::RangeError::New(info.Env(), "not a record offset");
    return off;
  }

  Napi::Value WriteRecord(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    uint64_t off = RecordArg(info, s);
    if (info.Length() < 2 || !info[1].IsTypedArray()) throw Napi::TypeError::New(env, "record content must be a Uint8Array");
    auto data = info[1].As<Napi::Uint8Array>();
    int64_t expected = -1;
    if (info.Length() > 2 && !info[2].IsUndefined()) {
      if (!info[2].IsNumber()) throw Napi::TypeError::New(env, "the expected generation must be a number");
      const double g = info[2].As<Napi::Number>().DoubleValue();
      if (!(g >= 0 && g <= 2147483647.0 && g == static_cast<double>(static_cast<int64_t>(g))))
        throw Napi::RangeError::New(env, "the expected generation must be a whole number from 0 to 2^31 - 1");
      expected = static_cast<int64_t>(g);
    }
    // 1 written, 0 no room, -1 the generation moved on (only with an expected generation).
    const RecordWriteResult result = Guarded(env, [&] { return RecordWrite(s, off, data.Data(), data.ByteLength(), expected); });
    return Napi::Number::New(env, result == RecordWriteResult::Written ? 1 : result == RecordWriteResult::NoRoom ? 0 : -1);
  }

  Napi::Value ReadRecord(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    uint64_t off = RecordArg(info, s);
    std::string content = Guarded(env, [&] { return RecordRead(s, off); });
    return Napi::Buffer<char>::Copy(env, content.data(), content.size());
  }

  Napi::Value Claim(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    int32_t slot = -1;
    if (info.Length() > 0 && !info[0].IsUndefined()) slot = static_cast<int32_t>(NumberArg(info, 0, "worker slot"));
    const int32_t got = Guarded(env, [&] { return ClaimSlot(s, slot); });
    bool known = false;
    for (const Claimed& c : claimed) known = known || (c.mapping == mapping_ && c.slot == got);
    if (!known) {
      mapping_->refs++;
      claimed.push_back({mapping_, got});
    }
    return Napi::Number::New(env, got);
  }

  Napi::Value Release(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    ReleaseSlot(seg(env), static_cast<int32_t>(NumberArg(info, 0, "worker slot")));
    return env.Undefined();
  }

  // Detaching the ArrayBuffer first turns every JS view over it to length 0, so no JS
  // code can reach the memory once it is unmapped.
  Napi::Value Detach(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!buffer_.IsEmpty()) {
      Napi::ArrayBuffer ab = buffer_.Value();
      if (!ab.IsEmpty() && !ab.IsDetached()) ab.Detach();
      buffer_.Reset();
    }
    mapping_->segment->Unmap();
    return env.Undefined();
  }

  Napi::Value StallAfter(const Napi::CallbackInfo& info) {
    seg(info.Env()).StallAfter(static_cast<int32_t>(NumberArg(info, 0, "writes")));
    return info.Env().Undefined();
  }

  // The proxy cache's keys (cache.h). Keys are 16-byte MD5s; times are ms since the epoch.
  static const uint8_t* CacheKeyArg(const Napi::CallbackInfo& info, size_t i) {
    if (info.Length() <= i || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array ||
        info[i].As<Napi::Uint8Array>().ByteLength() != 16)
      throw Napi::TypeError::New(info.Env(), "a cache key must be a Uint8Array of 16 bytes");
    return info[i].As<Napi::Uint8Array>().Data();
  }

  static int64_t TimeArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
    return static_cast<int64_t>(NumberArg(info, i, what));
  }

  static Napi::Value EvictedArray(Napi::Env env, const std::vector<CacheEvicted>& evicted) {
    Napi::Array out = Napi::Array::New(env, evicted.size());
    for (uint32_t i = 0; i < evicted.size(); i++) {
      Napi::Array e = Napi::Array::New(env, 4);
      e.Set(0u, Napi::Buffer<uint8_t>::Copy(env, evicted[i].key, 16));
      e.Set(1u, Napi::Number::New(env, static_cast<double>(evicted[i].size)));
      e.Set(2u, Napi::Number::New(env, evicted[i].shard));
      e.Set(3u, Napi::Boolean::New(env, evicted[i].exists));
      out.Set(i, e);
    }
    return out;
  }

  uint64_t CacheTableArg(const Napi::CallbackInfo& info, Segment& s) {
    const uint64_t off = NumberArg(info, 0, "cache table offset");
    Guarded(info.Env(), [&] { return CacheTableAt(s, off); });
    return off;
  }

  // (table, key, now, valid until, size, shard): what a store and a load of an entry
  // (a response written, a file the loader found) both say of it.
  struct CacheEntryArgs {
    uint64_t table;
    const uint8_t* key;
    int64_t now;
    int64_t valid;
    uint64_t size;
    uint32_t shard;
  };
  CacheEntryArgs CacheEntryArgsOf(const Napi::CallbackInfo& info, Segment& s) {
    return {CacheTableArg(info, s), CacheKeyArg(info, 1), TimeArg(info, 2, "now"), TimeArg(info, 3, "valid until"), NumberArg(info, 4, "size"),
            static_cast<uint32_t>(NumberArg(info, 5, "shard"))};
  }

  Napi::Value CacheTableOf(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const std::string key = StringArg(info, 0, "key");
    return Napi::Number::New(env, static_cast<double>(Guarded(env, [&] { return CacheTableEnsure(s, key); })));
  }

  // (table, key, now, min uses, lock ms, lock misses, out) -> evicted | null; `out`, a
  // Float64Array of 5: state, store (1|0), version, size, valid until. Written into the
  // caller's array rather than a new one: it is every cached request's call, and the
  // array's five Sets cost as much as the lookup under the mutex.
  Napi::Value CacheLookupOf(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = CacheTableArg(info, s);
    const uint8_t* key = CacheKeyArg(info, 1);
    const int64_t now = TimeArg(info, 2, "now");
    const uint32_t min_uses = static_cast<uint32_t>(NumberArg(info, 3, "min uses"));
    const int64_t lock_ms = TimeArg(info, 4, "lock time");
    if (info.Length() < 7 || !info[5].IsBoolean() || !info[6].IsTypedArray() ||
        info[6].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array || info[6].As<Napi::Float64Array>().ElementLength() < 5)
      throw Napi::TypeError::New(env, "cacheLookup needs lock misses (a boolean) and a Float64Array of 5");
    const bool lock_misses = info[5].As<Napi::Boolean>().Value();
    double* out = info[6].As<Napi::Float64Array>().Data();
    std::vector<CacheEvicted> evicted;
    const CacheLookupResult r = Guarded(env, [&] { return CacheLookup(s, table, key, now, min_uses, lock_ms, lock_misses, &evicted); });
    out[0] = static_cast<double>(r.state);
    out[1] = r.store ? 1 : 0;
    out[2] = static_cast<double>(r.version);
    out[3] = static_cast<double>(r.size);
    out[4] = static_cast<double>(r.valid_until);
    return evicted.empty() ? env.Null() : EvictedArray(env, evicted);
  }

  // [size delta, version, evicted]
  Napi::Value CacheStoreOf(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const CacheEntryArgs a = CacheEntryArgsOf(info, s);
    std::vector<CacheEvicted> evicted;
    uint64_t version = 0;
    const int64_t delta = Guarded(env, [&] { return CacheStore(s, a.table, a.key, a.now, a.valid, a.size, a.shard, &evicted, &version); });
    Napi::Array out = Napi::Array::New(env, 3);
    out.Set(0u, Napi::Number::New(env, static_cast<double>(delta)));
    out.Set(1u, Napi::Number::New(env, static_cast<double>(version)));
    out.Set(2u, evicted.empty() ? env.Null() : EvictedArray(env, evicted));
    return out;
  }

  Napi::Value CacheReleaseOf(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = CacheTableArg(info, s);
    const uint8_t* key = CacheKeyArg(info, 1);
    Guarded(env, [&] { CacheRelease(s, table, key); return 0; });
    return env.Undefined();
  }

  Napi::Value CacheRefreshOf(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = CacheTableArg(info, s);
    const uint8_t* key = CacheKeyArg(info, 1);
    const int64_t valid = TimeArg(info, 2, "valid until");
    return Napi::Boolean::New(env, Guarded(env, [&] { return CacheRefresh(s, table, key, valid); }));
  }

  Napi::Value CacheForgetOf(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = CacheTableArg(info, s);
    const uint8_t* key = CacheKeyArg(info, 1);
    return Napi::Number::New(env, static_cast<double>(Guarded(env, [&] { return CacheForget(s, table, key); })));
  }

  // [size delta, evicted]
  Napi::Value CacheLoadOf(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const CacheEntryArgs a = CacheEntryArgsOf(info, s);
    std::vector<CacheEvicted> evicted;
    const int64_t delta = Guarded(env, [&] { return CacheLoad(s, a.table, a.key, a.now, a.valid, a.size, a.shard, &evicted); });
    Napi::Array out = Napi::Array::New(env, 2);
    out.Set(0u, Napi::Number::New(env, static_cast<double>(delta)));
    out.Set(1u, evicted.empty() ? env.Null() : EvictedArray(env, evicted));
    return out;
  }

  // (table, now, inactive ms, max size, shard max sizes (Float64Array), max) -> evicted
  Napi::Value CacheExpireOf(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = CacheTableArg(info, s);
    const int64_t now = TimeArg(info, 1, "now");
    const int64_t inactive = TimeArg(info, 2, "inactive");
    const uint64_t max_size = NumberArg(info, 3, "max size");
    uint64_t shard_max[kCacheMaxShards] = {0};
    uint32_t shards = 0;
    if (info.Length() > 4 && info[4].IsTypedArray()) {
      auto a = info[4].As<Napi::Float64Array>();
      shards = static_cast<uint32_t>(a.ElementLength() < kCacheMaxShards ? a.ElementLength() : kCacheMaxShards);
      for (uint32_t i = 0; i < shards; i++) shard_max[i] = a[i] > 0 ? static_cast<uint64_t>(a[i]) : 0;
    }
    const uint32_t max = static_cast<uint32_t>(NumberArg(info, 5, "max"));
    std::vector<CacheEvicted> evicted;
    Guarded(env, [&] { CacheExpire(s, table, now, inactive, max_size, shard_max, shards, max, &evicted); return 0; });
    return EvictedArray(env, evicted);
  }

  Napi::Value CacheSizesOf(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = CacheTableArg(info, s);
    const std::vector<uint64_t> sizes = Guarded(env, [&] { return CacheSizes(s, table); });
    Napi::Array out = Napi::Array::New(env, sizes.size());
    for (uint32_t i = 0; i < sizes.size(); i++) out.Set(i, Napi::Number::New(env, static_cast<double>(sizes[i])));
    return out;
  }

  Napi::Value CacheCheckOf(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = CacheTableArg(info, s);
    return Napi::String::New(env, Guarded(env, [&] { return CacheCheck(s, table); }));
  }
  // limitTable(key, kind) -> offset of the table, or null when the zone has no room.
  Napi::Value LimitTableMethod(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    std::string key = StringArg(info, 0, "key");
    const uint64_t kind = NumberArg(info, 1, "kind");
    if (kind != kLimitReq && kind != kLimitConn) throw Napi::RangeError::New(env, "unknown limit kind");
    const uint64_t off = Guarded(env, [&] { return LimitTableEnsure(s, key, static_cast<uint32_t>(kind)); });
    return off ? Napi::Number::New(env, static_cast<double>(off)) : env.Null();
  }

  // limitReq(table, key, rate, burst, mode[, nowMs]) -> excess in milli-requests, -1 over
  // the burst, -2 no room for the key. Rates and bursts in milli-requests.
  Napi::Value LimitReqMethod(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = WholeArg(info, 0, "table");
    Key key(info, 1);
    const uint64_t rate = WholeArg(info, 2, "rate");
    const uint64_t burst = WholeArg(info, 3, "burst");
    const uint64_t mode = WholeArg(info, 4, "mode");
    if (mode > 2) throw Napi::RangeError::New(env, "unknown limit_req mode");
    if (rate == 0 || rate > 1000000000000ull) throw Napi::RangeError::New(env, "rate must be from 1 to 10^12 milli-requests per second");
    const uint64_t now = info.Length() > 5 && !info[5].IsUndefined() ? WholeArg(info, 5, "time") : 0;
    return Napi::Number::New(env, static_cast<double>(Guarded(env, [&] {
                               return LimitReqTake(s, table, key.data, key.len, rate, burst, static_cast<LimitReqMode>(mode), now);
                             })));
  }

  // limitConnAcquire(table, key, limit, slot) -> 1 passed, 0 rejected, -1 no room.
  Napi::Value LimitConnAcquireMethod(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = WholeArg(info, 0, "table");
    Key key(info, 1);
    const uint64_t limit = WholeArg(info, 2, "limit");
    const uint32_t slot = SlotArg(info, 3);
    return Napi::Number::New(env, Guarded(env, [&] { return LimitConnAcquire(s, table, key.data, key.len, limit, slot); }));
  }

  Napi::Value LimitConnReleaseMethod(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = WholeArg(info, 0, "table");
    Key key(info, 1);
    const uint32_t slot = SlotArg(info, 2);
    return Napi::Boolean::New(env, Guarded(env, [&] { return LimitConnRelease(s, table, key.data, key.len, slot); }));
  }

  // limitConnRepair(table, slot) -> holds of the slot ended by this call (a few at most:
  // call again until 0).
  Napi::Value LimitConnRepairMethod(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = WholeArg(info, 0, "table");
    const uint32_t slot = SlotArg(info, 1);
    return Napi::Number::New(env, Guarded(env, [&] { return LimitConnRepair(s, table, slot, 4); }));
  }

  Napi::Value LimitPeekMethod(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = NumberArg(info, 0, "table");
    Key key(info, 1);
    return Napi::Number::New(env, static_cast<double>(Guarded(env, [&] { return LimitPeek(s, table, key.data, key.len); })));
  }

  Napi::Value LimitNodesMethod(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = NumberArg(info, 0, "table");
    return Napi::Number::New(env, static_cast<double>(Guarded(env, [&] { return LimitNodes(s, table); })));
  }

  Napi::Value LimitCheckMethod(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Segment& s = seg(env);
    const uint64_t table = NumberArg(info, 0, "table");
    return Napi::String::New(env, Guarded(env, [&] { return LimitCheck(s, table); }));
  }

  static uint32_t SlotArg(const Napi::CallbackInfo& info, size_t i) {
    const uint64_t slot = WholeArg(info, i, "worker slot");
    if (slot >= kMaxWorkerSlots) throw Napi::RangeError::New(info.Env(), "worker slot is out of range");
    return static_cast<uint32_t>(slot);
  }

  // A limit key: a string (its UTF-8 bytes) or a Uint8Array (its bytes, not copied). Short
  // strings are read into the stack: a decision must not allocate.
  struct Key {
    const uint8_t* data = nullptr;
    uint32_t len = 0;
    char small[256];
    std::string large;

    Key(const Napi::CallbackInfo& info, size_t i) {
      Napi::Env env = info.Env();
      if (info.Length() <= i) throw Napi::TypeError::New(env, "key must be a string or a Uint8Array");
      napi_value v = info[i];
      size_t n = 0;
      // A string, else (string_expected) a Uint8Array: one N-API call for the usual key.
      if (napi_get_value_string_utf8(env, v, small, sizeof small, &n) == napi_ok) {
        // A string may end short of the buffer when its last character did not fit.
        if (n + 4 >= sizeof small) {
          size_t full = 0;
          napi_get_value_string_utf8(env, v, nullptr, 0, &full);
          large.resize(full + 1);
          napi_get_value_string_utf8(env, v, &large[0], full + 1, &n);
          data = reinterpret_cast<const uint8_t*>(large.data());
        } else {
          data = reinterpret_cast<const uint8_t*>(small);
        }
        len = static_cast<uint32_t>(n);
      } else if (info[i].IsTypedArray() && info[i].As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array) {
        auto a = info[i].As<Napi::Uint8Array>();
        if (a.ByteLength() > 65535) throw Napi::RangeError::New(env, "a limit key has at most 65535 bytes");
        data = a.Data();
        len = static_cast<uint32_t>(a.ByteLength());
      } else {
        throw Napi::TypeError::New(env, "key must be a string or a Uint8Array");
      }
      if (len > 65535) throw Napi::RangeError::New(env, "a limit key has at most 65535 bytes");
    }
  };

  Mapping* mapping_;
  Napi::Reference<Napi::ArrayBuffer> buffer_;
};

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  Napi::Function ctor = Zone::Define(env);
  env.SetInstanceData(new Napi::FunctionReference(Napi::Persistent(ctor)));
  env.AddCleanupHook(ReleaseClaimed);
  exports.Set("NativeZone", ctor);
  exports.Set("pageSize", Napi::Number::New(env, static_cast<double>(sysconf(_SC_PAGESIZE))));
  exports.Set("layoutVersion", Napi::Number::New(env, kLayoutVersion));
  exports.Set("maxWorkerSlots", Napi::Number::New(env, kMaxWorkerSlots));
  exports.Set("writtenSlotsOffset", Napi::Number::New(env, static_cast<double>(offsetof(Header, written_slots))));
  return exports;
}

}  // namespace zonal

static Napi::Object InitZonal(Napi::Env env, Napi::Object exports) { return zonal::Init(env, exports); }
NODE_API_MODULE(zonal, InitZonal)
