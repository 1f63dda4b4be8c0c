#include "data/example_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "common/logging.h"

namespace ringtrain::data {
namespace {

constexpr uint8_t kEmpty = 0, kFilling = 1, kFull = 2;

// The per-example states and the wait for an example another thread is filling.
class States {
 public:
  explicit States(int64_t n) : s_(static_cast<size_t>(n)) {}
  // kFull, or kEmpty after this caller claimed the example (now kFilling). Waits while
  // another thread fills it.
  uint8_t Claim(int64_t k) {
    std::atomic<uint8_t>& s = s_[static_cast<size_t>(k)];
    for (;;) {
      uint8_t v = s.load(std::memory_order_acquire);
      if (v == kFull) return kFull;
      if (v == kEmpty) {
        if (s.compare_exchange_strong(v, kFilling, std::memory_order_acq_rel)) return kEmpty;
        continue;
      }
      std::unique_lock<std::mutex> l(mu_);  // kFilling: the filler notifies when it is done
      cv_.wait_for(l, std::chrono::milliseconds(20), [&] { return s.load(std::memory_order_acquire) != kFilling; });
    }
  }
  void Set(int64_t k, uint8_t v) {
    {
      std::lock_guard<std::mutex> l(mu_);
      s_[static_cast<size_t>(k)].store(v, std::memory_order_release);
    }
    cv_.notify_all();
  }
  void SetAllFull() {
    for (auto& s : s_) s.store(kFull, std::memory_order_release);
  }

 private:
  std::vector<std::atomic<uint8_t>> s_;
  std::mutex mu_;
  std::condition_variable cv_;
};

class MemoryCache : public ExampleCache {
 public:
  MemoryCache(int64_t n, size_t es, size_t ls)
      : es_(es), ls_(ls), n_(n), states_(n), x_(static_cast<size_t>(n) * es), y_(static_cast<size_t>(n) * ls) {}
  Lookup Begin(int64_t k, float* x, int32_t* labels) override {
    if (states_.Claim(k) == kEmpty) return Lookup::kFill;
    std::memcpy(x, x_.data() + static_cast<size_t>(k) * es_, sizeof(float) * es_);
    std::memcpy(labels, y_.data() + static_cast<size_t>(k) * ls_, sizeof(int32_t) * ls_);
    return Lookup::kHit;
  }
  void Fill(int64_t k, const float* x, const int32_t* labels) override {
    std::memcpy(x_.data() + static_cast<size_t>(k) * es_, x, sizeof(float) * es_);
    std::memcpy(y_.data() + static_cast<size_t>(k) * ls_, labels, sizeof(int32_t) * ls_);
    states_.Set(k, kFull);
    filled_.fetch_add(1, std::memory_order_acq_rel);
  }
  void Abandon(int64_t k) override { states_.Set(k, kEmpty); }
  bool complete() const override { return filled_.load(std::memory_order_acquire) == n_; }

 private:
  size_t es_, ls_;
  int64_t n_;
  States states_;
  std::vector<float> x_;
  std::vector<int32_t> y_;
  std::atomic<int64_t> filled_{0};
};

// The file: a header, the labels (int32, padded to 8 bytes), the examples (float32).
struct Header {
  char magic[8];
  uint64_t fingerprint, n, example_size;
};
constexpr char kMagic[8] = {'R', 'T', 'C', 'A', 'C', 'H', 'E', '1'};

Status PWriteAll(int fd, const void* data, size_t bytes, uint64_t offset) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t w = ::pwrite(fd, p, bytes, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return ErrnoError("writing", errno);
    p += w;
    bytes -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

bool PReadAll(int fd, void* data, size_t bytes, uint64_t offset) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t r = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    bytes -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

class FileCache : public ExampleCache {
 public:
  FileCache(std::string path, uint64_t fingerprint, int64_t n, size_t es, size_t ls)
      : path_(std::move(path)), fingerprint_(fingerprint), n_(n), es_(es), ls_(ls), states_(n) {
    labels_at_ = sizeof(Header);
    data_at_ = labels_at_ + (static_cast<uint64_t>(n) * ls * sizeof(int32_t) + 7) / 8 * 8;
    bytes_ = data_at_ + static_cast<uint64_t>(n) * es * sizeof(float);
    tmp_path_ = path_ + ".tmp." + std::to_string(::getpid());
  }
  ~FileCache() override {
    if (map_) ::munmap(const_cast<char*>(map_.load()), bytes_);
    if (fd_ >= 0) ::close(fd_);
    if (building_ && !finished_) ::unlink(tmp_path_.c_str());  // unfinished: never left as debris
  }

  // Maps the existing file when it is complete and matches; else starts the temporary one.
  Status Init() {
    if (MapIfValid(path_)) {
      states_.SetAllFull();
      RT_LOG(INFO) << "input cache: reading " << path_;
      return Status::Ok();
    }
    struct stat st;
    if (::stat(path_.c_str(), &st) == 0) {
      RT_LOG(WARNING) << "input cache: " << path_ << " is incomplete or from another source; rebuilding it";
    }
    fd_ = ::open(tmp_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      return InvalidArgumentError("data.pipeline.cache: cannot create " + tmp_path_ + " (" + std::strerror(errno) +
                                  "); give a writable path")
          .About(Subject::kConfig);
    }
    building_ = true;
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof(kMagic));
    h.fingerprint = fingerprint_;
    h.n = static_cast<uint64_t>(n_);
    h.example_size = es_;
    Status s = ::ftruncate(fd_, static_cast<off_t>(bytes_)) == 0 ? PWriteAll(fd_, &h, sizeof(h), 0)
                                                                   : ErrnoError("sizing", errno);
    if (!s.ok()) Disable(s);
    RT_LOG(INFO) << "input cache: writing " << path_ << " during the first pass";
    return Status::Ok();
  }

  Lookup Begin(int64_t k, float* x, int32_t* labels) override {
    if (states_.Claim(k) == kEmpty) return disabled_.load() ? (states_.Set(k, kEmpty), Lookup::kMiss) : Lookup::kFill;
    const size_t bytes = sizeof(float) * es_, label_bytes = sizeof(int32_t) * ls_;
    if (const char* m = map_.load(std::memory_order_acquire)) {
      std::memcpy(x, m + data_at_ + static_cast<uint64_t>(k) * bytes, bytes);
      std::memcpy(labels, m + labels_at_ + static_cast<uint64_t>(k) * label_bytes, label_bytes);
      return Lookup::kHit;
    }
    // Written to the temporary file by an earlier Fill.
    if (PReadAll(fd_, x, bytes, data_at_ + static_cast<uint64_t>(k) * bytes) &&
        PReadAll(fd_, labels, label_bytes, labels_at_ + static_cast<uint64_t>(k) * label_bytes)) {
      return Lookup::kHit;
    }
    return Lookup::kMiss;
  }

  void Fill(int64_t k, const float* x, const int32_t* labels) override {
    if (disabled_.load()) return states_.Set(k, kEmpty);
    const size_t bytes = sizeof(float) * es_, label_bytes = sizeof(int32_t) * ls_;
    Status s = PWriteAll(fd_, x, bytes, data_at_ + static_cast<uint64_t>(k) * bytes);
    if (s.ok()) s = PWriteAll(fd_, labels, label_bytes, labels_at_ + static_cast<uint64_t>(k) * label_bytes);
    if (!s.ok()) {
      Disable(s);
      return states_.Set(k, kEmpty);
    }
    states_.Set(k, kFull);
    if (filled_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) Finish();
  }
  void Abandon(int64_t k) override { states_.Set(k, kEmpty); }
  bool complete() const override { return map_.load(std::memory_order_acquire) != nullptr; }

 private:
  bool MapIfValid(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    Header h{};
    const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == bytes_ &&
                    PReadAll(fd, &h, sizeof(h), 0) && std::memcmp(h.magic, kMagic, sizeof(kMagic)) == 0 &&
                    h.fingerprint == fingerprint_ && h.n == static_cast<uint64_t>(n_) && h.example_size == es_;
    void* m = ok ? ::mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    ::close(fd);
    if (m == MAP_FAILED) return false;
    map_.store(static_cast<const char*>(m), std::memory_order_release);
    return true;
  }
  // The last example arrived: make the file durable and put it in place.
  void Finish() {
    if (::fsync(fd_) != 0) return Disable(ErrnoError("fsync", errno));
    if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) return Disable(ErrnoError("renaming", errno));
    finished_ = true;
    MapIfValid(path_);  // from now on a hit is a copy from the mapping
    RT_LOG(INFO) << "input cache: " << path_ << " complete (" << n_ << " examples)";
  }
  void Disable(const Status& why) {
    if (!disabled_.exchange(true)) {
      RT_LOG(WARNING) << "input cache: " << why.message() << " " << tmp_path_ << "; continuing without the cache";
    }
  }

  std::string path_, tmp_path_;
  uint64_t fingerprint_;
  int64_t n_;
  size_t es_, ls_;
  uint64_t labels_at_ = 0, data_at_ = 0, bytes_ = 0;
  States states_;
  int fd_ = -1;
  bool building_ = false;
  std::atomic<bool> finished_{false}, disabled_{false};
  std::atomic<int64_t> filled_{0};
  std::atomic<const char*> map_{nullptr};
};

}  // namespace

StatusOr<std::unique_ptr<ExampleCache>> NewMemoryCache(int64_t n, size_t example_size, size_t labels_per_example) {
  try {
    return std::unique_ptr<ExampleCache>(new MemoryCache(n, example_size, labels_per_example));
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("data.pipeline.cache: no memory for " + std::to_string(n) + " examples of " +
                                  std::to_string(example_size) + " values; use a file cache or none")
        .About(Subject::kConfig);
  }
}

StatusOr<std::unique_ptr<ExampleCache>> OpenFileCache(const std::string& path, uint64_t fingerprint, int64_t n,
                                                      size_t example_size, size_t labels_per_example) {
  auto cache = std::make_unique<FileCache>(path, fingerprint, n, example_size, labels_per_example);
  RT_RETURN_IF_ERROR(cache->Init());
  return std::unique_ptr<ExampleCache>(std::move(cache));
}

}  // namespace ringtrain::data
