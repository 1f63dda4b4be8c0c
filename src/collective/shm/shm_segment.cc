#include "collective/shm/shm_segment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <new>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

namespace ringtrain::collective::shm {
namespace {

constexpr uint64_t kMagic = 0x316d6873676e6972;  // "ringshm1"
constexpr uint32_t kVersion = 2;  // 2: op descriptors carry the data type
constexpr char kNameKey[] = "shm/name";

size_t PageSize() {
  long p = ::sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<size_t>(p) : 4096;
}

size_t RoundUp(size_t x, size_t to) { return (x + to - 1) / to * to; }

struct Geometry {
  size_t header_bytes;
  size_t control_bytes;
  size_t slot_bytes;
  size_t total_bytes;
};

Geometry Layout(int size, size_t slot_bytes) {
  const size_t page = PageSize();
  Geometry g;
  g.header_bytes = RoundUp(sizeof(SegmentHeader), page);
  g.control_bytes = RoundUp(sizeof(RankControl) * static_cast<size_t>(size), page);
  g.slot_bytes = RoundUp(std::max<size_t>(slot_bytes, 1), page);
  g.total_bytes = g.header_bytes + g.control_bytes + g.slot_bytes * kBuffers * static_cast<size_t>(size);
  return g;
}

std::string RandomName() {
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(r));
  return "/ringtrain-" + std::to_string(::getpid()) + "-" + hex;
}

struct ProcStat {
  char state = '?';
  uint64_t start_time = 0;
};

// Fields 3 (state) and 22 (start time) of /proc/<pid>/stat. The command name (field 2)
// may hold spaces and parentheses, so parsing starts after the last ')'.
std::optional<ProcStat> ReadProcStat(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  ProcStat st;
  std::string skip;
  fields >> st.state;
  for (int field = 4; field < 22; ++field) fields >> skip;
  fields >> st.start_time;
  if (!fields) return std::nullopt;
  return st;
}

std::string RankList(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

const char* kShmAdvice =
    "; shared memory needs every rank on this host to see the same /dev/shm (one IPC namespace); "
    "set RINGTRAIN_TRANSPORT=tcp to use TCP instead";

}  // namespace

ProcessIdentity SelfIdentity() {
  ProcessIdentity id;
  id.pid = static_cast<int32_t>(::getpid());
  struct stat ns {};
  if (::stat("/proc/self/ns/pid", &ns) == 0) id.pid_namespace = ns.st_ino;
  auto st = ReadProcStat("/proc/self/stat");
  if (st) id.start_time = st->start_time;
  return id;
}

std::string ExitReason(const RankControl& control, const ProcessIdentity& self) {
  if (control.pid == self.pid || control.pid <= 0) return "";
  if (control.pid_namespace != self.pid_namespace) return "";  // its pid means nothing here
  if (::kill(control.pid, 0) != 0 && errno == ESRCH) return "exited";
  auto st = ReadProcStat("/proc/" + std::to_string(control.pid) + "/stat");
  if (!st) return "exited";
  if (st->state == 'Z' || st->state == 'X') return "exited";  // a zombie: dead, not yet reaped
  if (st->start_time != control.start_time) return "exited (its pid now belongs to another process)";
  return "";
}

Segment::Segment(void* base, size_t bytes, int size) : base_(base), bytes_(bytes), size_(size) {}

Segment::~Segment() {
  if (!name_to_unlink_.empty()) ::shm_unlink(name_to_unlink_.c_str());
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

void Segment::Locate() {
  Geometry g = Layout(size_, header()->slot_bytes);
  slot_bytes_ = g.slot_bytes;
  controls_ = reinterpret_cast<RankControl*>(static_cast<char*>(base_) + g.header_bytes);
  slots_ = static_cast<char*>(base_) + g.header_bytes + g.control_bytes;
}

StatusOr<std::unique_ptr<Segment>> Segment::Join(int rank, int size, size_t slot_bytes, store::Store* store,
                                                 Deadline deadline) {
  std::unique_ptr<Segment> seg;
  if (rank == 0) {
    const Geometry g = Layout(size, slot_bytes);
    const std::string name = RandomName();
    int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoError("creating shared-memory segment " + name + std::string(kShmAdvice), errno);
    int err = ::ftruncate(fd, static_cast<off_t>(g.total_bytes)) == 0 ? 0 : errno;
    // Reserve the pages now: a full /dev/shm then fails here, not with SIGBUS mid-collective.
    if (err == 0) err = ::posix_fallocate(fd, 0, static_cast<off_t>(g.total_bytes));
    void* base = MAP_FAILED;
    if (err == 0) {
      base = ::mmap(nullptr, g.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base == MAP_FAILED) err = errno;
    }
    ::close(fd);
    if (err != 0) {
      ::shm_unlink(name.c_str());
      std::string what = "sizing shared-memory segment " + name + " to " + std::to_string(g.total_bytes) + " bytes";
      if (err == ENOSPC || err == ENOMEM) what += " (/dev/shm is too small: enlarge it, e.g. docker --shm-size)";
      return ErrnoError(what + std::string(kShmAdvice), err);
    }
    seg.reset(new Segment(base, g.total_bytes, size));
    seg->name_to_unlink_ = name;
    auto* h = new (base) SegmentHeader();
    h->magic = kMagic;
    h->version = kVersion;
    h->size = size;
    h->slot_bytes = g.slot_bytes;
    h->total_bytes = g.total_bytes;
    seg->Locate();
    for (int r = 0; r < size; ++r) new (seg->control(r)) RankControl();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (size > 1) RT_RETURN_IF_ERROR(store->Set(kNameKey, name));
  } else {
    auto name = store->Get(kNameKey, deadline);
    if (!name.ok()) return name.status().WithContext("waiting for rank 0 to create the shared-memory segment");
    int fd = ::shm_open(name->c_str(), O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT) {
        return UnavailableError("rank 0's shared-memory segment " + *name +
                                " does not exist: rank 0 gave up waiting, or this process sees another /dev/shm" +
                                kShmAdvice);
      }
      return ErrnoError("opening rank 0's shared-memory segment " + *name, err);
    }
    struct stat st {};
    void* base = MAP_FAILED;
    int err = ::fstat(fd, &st) == 0 ? 0 : errno;
    if (err == 0 && static_cast<size_t>(st.st_size) < sizeof(SegmentHeader)) err = EINVAL;
    if (err == 0) {
      base = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base == MAP_FAILED) err = errno;
    }
    ::close(fd);
    if (err != 0) return ErrnoError("mapping rank 0's shared-memory segment " + *name, err);
    seg.reset(new Segment(base, static_cast<size_t>(st.st_size), size));
    const SegmentHeader* h = seg->header();
    if (h->magic != kMagic || h->version != kVersion || h->size != size ||
        h->total_bytes != static_cast<uint64_t>(st.st_size) ||
        Layout(size, h->slot_bytes).total_bytes != h->total_bytes) {
      return FailedPreconditionError("shared-memory segment " + *name + " is not a " + std::to_string(size) +
                                     "-rank segment of this ringtrain version (rank 0 runs a different build or "
                                     "job size); run the same ringtrain build with the same number of workers");
    }
    seg->Locate();
  }

  const ProcessIdentity self = SelfIdentity();
  RankControl* me = seg->control(rank);
  me->pid = self.pid;
  me->pid_namespace = self.pid_namespace;
  me->start_time = self.start_time;
  uint32_t expected = 0;
  if (!me->attached.compare_exchange_strong(expected, 1)) {
    return FailedPreconditionError("two processes claim rank " + std::to_string(rank) +
                                   " of the shared-memory communicator; give every worker its own task index");
  }
  // Set-up is rare: poll with short sleeps rather than futexes.
  for (int polls = 0;; ++polls) {
    std::vector<int> missing;
    for (int r = 0; r < size; ++r) {
      if (seg->control(r)->attached.load(std::memory_order_acquire) == 0) missing.push_back(r);
    }
    if (missing.empty()) break;
    if (deadline.expired()) {
      return DeadlineExceededError(RankList(missing) + " did not attach to the shared-memory segment in time; " +
                                   "check that every worker started and uses the same job configuration");
    }
    if (seg->header()->failure.state.load() != 0) {
      return AbortedError("a rank failed while the shared-memory communicator was being set up");
    }
    if (polls < 100) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  if (rank == 0) {
    // Every rank has it mapped: the name is no longer needed.
    ::shm_unlink(seg->name_to_unlink_.c_str());
    seg->name_to_unlink_.clear();
  }
  return seg;
}

}  // namespace ringtrain::collective::shm
