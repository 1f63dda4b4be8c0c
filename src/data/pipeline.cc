// The input pipeline (pipeline.h). Batch g after a Seek covers the stream positions
// base + g*B .. base + g*B + B-1; position p is example order(p / n)[p % n] of the shard.
// Decoding threads claim examples in that order, batch by batch, up to `prefetch` batches
// ahead of the one Next takes, and decode each into its fixed place in the batch's slot,
// so a batch's bits never depend on which thread decoded what or when.
#include "data/pipeline.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/fingerprint.h"
#include "common/logging.h"
#include "data/example_cache.h"
#include "data/memory_source.h"

namespace ringtrain::data {
namespace {

using Clock = std::chrono::steady_clock;

// How long Next waits without any example finishing before it gives up on the pipeline.
constexpr auto kStallTimeout = std::chrono::minutes(10);
constexpr int kAutotunePrefetch = 2;

int CpusAvailable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

uint64_t ShardFingerprint(const Shard& shard, const std::string& key) {
  std::string s = key;
  s.append("\n").append(shard.description).append("\n");
  for (const auto& f : shard.files) s.append(f).append("\n");
  for (int d : shard.spec().shape) s.append(std::to_string(d)).append(",");
  s.append(std::to_string(shard.spec().num_classes)).append(" ").append(std::to_string(shard.source->size()));
  const uint64_t keep = Fingerprint64(shard.keep.data(), shard.keep.size() * sizeof(int64_t));
  return Fingerprint64(s.data(), s.size()) ^ (keep * 0x9E3779B97F4A7C15ull);
}

}  // namespace

class Pipeline::Impl {
 public:
  Impl(const Shard* shard, int batch, uint64_t seed, bool shuffle, const PipelineOptions& o)
      : shard_(shard), batch_(batch), seed_(seed), shuffle_(shuffle) {
    n_ = shard && shard->source ? shard->keep.size() : 0;
    es_ = n_ > 0 ? shard->spec().size() : 0;
    ls_ = n_ > 0 ? shard->spec().label_size() : 1;
    if (n_ == 0 || batch_ <= 0) {
      broken_ = InvalidArgumentError("input pipeline over an empty shard or with batch size " + std::to_string(batch));
      return;
    }
    direct_ = shard->source->in_memory();
    if (direct_) {  // a copy from memory: no threads, no cache
      memory_ = dynamic_cast<const MemorySource*>(shard->source.get());
      if (memory_ && (memory_->dataset().example_size != es_ || memory_->dataset().size() < n_ || ls_ != 1)) {
        memory_ = nullptr;
      }
      identity_ = true;  // the in-memory shards keep 0..n-1: no index lookup per example
      for (size_t k = 0; k < n_ && identity_; ++k) identity_ = shard->keep[k] == static_cast<int64_t>(k);
      return;
    }
    threads_ = o.num_parallel_calls == kAutotune ? CpusAvailable() : std::max(1, o.num_parallel_calls);
    prefetch_ = o.prefetch == kAutotune ? kAutotunePrefetch : std::max(0, o.prefetch);
    if (o.cache == PipelineOptions::Cache::kMemory) {
      auto c = NewMemoryCache(static_cast<int64_t>(n_), es_, ls_);
      if (!c.ok()) {
        broken_ = c.status();
        return;
      }
      cache_ = std::move(c).value();
    } else if (o.cache == PipelineOptions::Cache::kFile) {
      auto c = OpenFileCache(o.cache_path, ShardFingerprint(*shard, o.cache_key), static_cast<int64_t>(n_), es_, ls_);
      if (!c.ok()) {
        broken_ = c.status();
        return;
      }
      cache_ = std::move(c).value();
    }
    try {
      slots_.resize(static_cast<size_t>(std::max(prefetch_, 1)));
      for (Slot& s : slots_) {
        s.x.resize(static_cast<size_t>(batch_) * es_);
        s.y.resize(static_cast<size_t>(batch_) * ls_);
      }
    } catch (const std::bad_alloc&) {
      broken_ = ResourceExhaustedError("input pipeline: no memory for " + std::to_string(slots_.size()) +
                                       " batches of " + std::to_string(batch_) + " examples")
                    .About(Subject::kConfig);
      return;
    }
    last_progress_ = Clock::now();
    for (int t = 0; t < threads_; ++t) workers_.emplace_back([this] { Work(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

  Status Next(float* images, int32_t* labels) {
    if (!broken_.ok()) return broken_;
    if (direct_) return NextDirect(images, labels);
    std::unique_lock<std::mutex> l(mu_);
    if (!broken_.ok()) return broken_;
    const uint64_t g = consumed_;
    Slot& s = slots_[g % slots_.size()];
    auto ready = [&] { return s.batch == g && (s.done == batch_ || (s.failed && s.inflight == 0)); };
    if (!ready()) {
      const auto t0 = Clock::now();
      waiting_ = true;
      work_cv_.notify_all();  // prefetch 0: the batch is claimed only now
      while (!ready()) {
        ready_cv_.wait_for(l, std::chrono::milliseconds(100));
        if (!ready() && Clock::now() - last_progress_ > kStallTimeout) {
          broken_ = DeadlineExceededError("input pipeline: no example decoded in " +
                                          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                             kStallTimeout).count()) +
                                          " s; is the data on a file system that stopped answering?")
                        .About(Subject::kData);
          break;
        }
      }
      waiting_ = false;
      wait_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
      if (!broken_.ok()) return Break(&l);
    }
    if (s.failed) {
      broken_ = s.error;
      return Break(&l);
    }
    l.unlock();  // slot g stays ours until consumed_ moves on
    std::memcpy(images, s.x.data(), sizeof(float) * s.x.size());
    std::memcpy(labels, s.y.data(), sizeof(int32_t) * s.y.size());
    l.lock();
    ++consumed_;
    l.unlock();
    work_cv_.notify_all();
    return Status::Ok();
  }

  uint64_t Position() const {
    if (direct_) return pos_;
    std::lock_guard<std::mutex> l(mu_);
    return base_ + consumed_ * static_cast<uint64_t>(batch_);
  }
  uint64_t pass() const { return n_ ? Position() / n_ : 0; }
  size_t offset() const { return n_ ? static_cast<size_t>(Position() % n_) : 0; }

  void Seek(uint64_t pass, size_t offset) {
    if (n_ == 0) return;
    const uint64_t pos = pass * n_ + offset;  // an offset past the pass counts on into later passes
    if (direct_) {
      pos_ = pos;
      return;
    }
    std::unique_lock<std::mutex> l(mu_);
    if (!broken_.ok()) return;
    if (pos == base_ + consumed_ * static_cast<uint64_t>(batch_)) return;  // already there: keep the work ahead
    paused_ = true;
    // Decodes under way write into the slots: let them finish (each is bounded) first.
    while (inflight_ > 0) ready_cv_.wait_for(l, std::chrono::milliseconds(100));
    base_ = pos;
    consumed_ = claim_batch_ = 0;
    claim_index_ = 0;
    claim_stopped_ = false;
    for (Slot& s : slots_) s.Reset(UINT64_MAX);
    orders_.clear();
    paused_ = false;
    last_progress_ = Clock::now();
    l.unlock();
    work_cv_.notify_all();
  }

  double wait_seconds() const {
    std::lock_guard<std::mutex> l(mu_);
    return wait_seconds_;
  }
  int threads() const { return threads_; }
  int prefetch_batches() const { return direct_ ? 0 : prefetch_; }

 private:
  struct Slot {
    std::vector<float> x;
    std::vector<int32_t> y;
    uint64_t batch = UINT64_MAX;  // the batch it holds (or is being decoded into it)
    int done = 0, inflight = 0;
    bool failed = false;
    int error_index = 0;  // the first failed example of the batch
    Status error;
    void Reset(uint64_t g) {
      batch = g;
      done = inflight = 0;
      failed = false;
      error = Status::Ok();
    }
  };

  Status Break(std::unique_lock<std::mutex>* l) {
    stop_claiming_ = true;
    Status b = broken_;
    l->unlock();
    work_cv_.notify_all();
    return b;
  }

  // In memory: BatchIterator's loop, copying rows straight from the Dataset when the
  // source is a MemorySource (no virtual call per example).
  Status NextDirect(float* images, int32_t* labels) {
    const Dataset* rows = memory_ ? &memory_->dataset() : nullptr;
    uint64_t pass = pos_ / n_;
    size_t offset = static_cast<size_t>(pos_ % n_);
    for (int b = 0; b < batch_; ++b) {
      if (offset == n_) {  // end of a pass: the next example comes from a fresh permutation
        ++pass;
        offset = 0;
      }
      if (pass != order_pass_) {
        PassOrder(seed_, pass, shuffle_, n_, &order_);
        order_pass_ = pass;
      }
      const size_t k = order_[offset++];
      const size_t i = identity_ ? k : static_cast<size_t>(shard_->keep[k]);
      float* x = images + static_cast<size_t>(b) * es_;
      if (rows) {
        std::memcpy(x, rows->images.data() + i * es_, sizeof(float) * es_);
        labels[b] = rows->labels[i];
        continue;
      }
      Status st = shard_->source->Read(static_cast<int64_t>(i), x, labels + static_cast<size_t>(b) * ls_);
      if (!st.ok()) {
        broken_ = st.About(Subject::kData);
        return broken_;
      }
    }
    pos_ += static_cast<uint64_t>(batch_);
    return Status::Ok();
  }

  bool CanClaim() const {
    if (paused_ || stop_claiming_ || claim_stopped_) return false;
    const uint64_t ahead = prefetch_ > 0 ? static_cast<uint64_t>(prefetch_) : (waiting_ ? 1 : 0);
    return claim_batch_ < consumed_ + ahead;
  }

  // The shard index at stream position p (mu_ held).
  int64_t ExampleAt(uint64_t p) {
    const uint64_t pass = p / n_;
    if (!shuffle_) return static_cast<int64_t>(p % n_);
    auto it = orders_.find(pass);
    if (it == orders_.end()) {
      const uint64_t current = (base_ + consumed_ * static_cast<uint64_t>(batch_)) / n_;
      orders_.erase(orders_.begin(), orders_.lower_bound(current));  // passes training has left
      std::vector<uint32_t> order;
      PassOrder(seed_, pass, true, n_, &order);
      it = orders_.emplace(pass, std::move(order)).first;
    }
    return it->second[p % n_];
  }

  Status Decode(int64_t k, float* x, int32_t* labels) {
    const int64_t i = shard_->keep[static_cast<size_t>(k)];
    const ExampleCache::Lookup lookup = cache_ ? cache_->Begin(k, x, labels) : ExampleCache::Lookup::kMiss;
    if (lookup == ExampleCache::Lookup::kHit) return Status::Ok();
    Status st = shard_->source->Read(i, x, labels);
    if (lookup == ExampleCache::Lookup::kFill) {
      if (st.ok()) {
        cache_->Fill(k, x, labels);
      } else {
        cache_->Abandon(k);
      }
    }
    return st.ok() ? st : st.About(Subject::kData);
  }

  void Work() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      work_cv_.wait(l, [&] { return stop_ || CanClaim(); });
      if (stop_) return;
      const uint64_t g = claim_batch_;
      const int b = claim_index_;
      Slot& s = slots_[g % slots_.size()];
      if (b == 0) s.Reset(g);
      if (++claim_index_ == batch_) {
        claim_index_ = 0;
        ++claim_batch_;
      }
      const int64_t k = ExampleAt(base_ + g * static_cast<uint64_t>(batch_) + static_cast<uint64_t>(b));
      ++inflight_;
      ++s.inflight;
      l.unlock();
      Status st = Decode(k, s.x.data() + static_cast<size_t>(b) * es_, s.y.data() + static_cast<size_t>(b) * ls_);
      l.lock();
      --inflight_;
      --s.inflight;
      last_progress_ = Clock::now();
      if (st.ok()) {
        ++s.done;
      } else {
        if (!s.failed || b < s.error_index) {
          s.error = st;
          s.error_index = b;
        }
        s.failed = true;
        claim_stopped_ = true;  // later examples are never needed: Next stops at this batch
      }
      // Wake Next only when its batch can be ready (complete, or failed with nothing of
      // it still in flight), and Seek when the last decode under way ended: a wake-up
      // per example costs two futex calls each, a tenth of a small PNG's decode.
      if (s.done == batch_ || (s.failed && s.inflight == 0) || (paused_ && inflight_ == 0)) {
        ready_cv_.notify_all();
      }
    }
  }

  const Shard* shard_;
  const int batch_;
  const uint64_t seed_;
  const bool shuffle_;
  size_t n_ = 0, es_ = 0, ls_ = 1;  // examples, floats and labels per example
  bool direct_ = false;
  const MemorySource* memory_ = nullptr;  // the in-memory source's rows, when it is one
  bool identity_ = false;                 // keep[k] == k
  int threads_ = 0, prefetch_ = 0;
  std::unique_ptr<ExampleCache> cache_;
  Status broken_;  // set once; every later Next returns it

  // In-memory sources: the position and the current pass's order.
  uint64_t pos_ = 0;
  uint64_t order_pass_ = UINT64_MAX;
  std::vector<uint32_t> order_;

  // Threaded: everything below is guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  std::vector<std::thread> workers_;
  std::vector<Slot> slots_;
  std::map<uint64_t, std::vector<uint32_t>> orders_;  // pass -> order, for the passes being decoded
  uint64_t base_ = 0;          // stream position of batch 0 (set by Seek)
  uint64_t consumed_ = 0;      // batches Next has returned since
  uint64_t claim_batch_ = 0;   // the next example to claim: batch, index
  int claim_index_ = 0;
  int inflight_ = 0;
  bool stop_ = false, paused_ = false, waiting_ = false;
  bool claim_stopped_ = false;  // a decode failed: claim nothing after it
  bool stop_claiming_ = false;  // broken
  Clock::time_point last_progress_;
  double wait_seconds_ = 0;
};

Pipeline::Pipeline(const Shard* shard, int batch_size, uint64_t seed, bool shuffle, const PipelineOptions& options)
    : impl_(std::make_unique<Impl>(shard, batch_size, seed, shuffle, options)) {}
Pipeline::~Pipeline() = default;
Status Pipeline::Next(float* images, int32_t* labels) { return impl_->Next(images, labels); }
uint64_t Pipeline::pass() const { return impl_->pass(); }
size_t Pipeline::offset() const { return impl_->offset(); }
void Pipeline::Seek(uint64_t pass, size_t offset) { impl_->Seek(pass, offset); }
double Pipeline::wait_seconds() const { return impl_->wait_seconds(); }
int Pipeline::threads() const { return impl_->threads(); }
int Pipeline::prefetch_batches() const { return impl_->prefetch_batches(); }

}  // namespace ringtrain::data
