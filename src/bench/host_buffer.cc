#include "bench/op_buffer.h"

namespace ringtrain::bench {
namespace {

class HostBuffer : public OpBuffer {
 public:
  explicit HostBuffer(size_t count) : data_(count) {}
  float* data() override { return data_.data(); }
  size_t count() const override { return data_.size(); }
  float* host() override { return data_.data(); }
  Status CopyIn(size_t) override { return Status::Ok(); }
  Status CopyOut(size_t) override { return Status::Ok(); }

 private:
  std::vector<float> data_;
};

}  // namespace

std::unique_ptr<OpBuffer> AllocateHostBuffer(size_t count) { return std::make_unique<HostBuffer>(count); }

}  // namespace ringtrain::bench
