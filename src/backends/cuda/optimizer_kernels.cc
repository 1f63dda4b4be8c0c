// GpuOptimizer and GpuRegularization (backends/cuda/optimizer_kernels.h): the host side.
// Create reads the host optimizer (type, hyperparameters, options, variables) or the
// model's regularizers into the tables of backends/cuda/optimizer_math.h and uploads them;
// each call computes the step's scalars on the host, as the CPU optimizers do, and
// enqueues the kernels of backends/cuda/optimizer_launch.h.
#include "backends/cuda/optimizer_kernels.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/optimizer_launch.h"
#include "common/logging.h"
#include "nn/optimizers/adagrad.h"
#include "nn/optimizers/adam.h"
#include "nn/optimizers/nadam.h"
#include "nn/optimizers/rmsprop.h"
#include "nn/optimizers/sgd.h"

namespace ringtrain::gpu {
namespace {

// nn::Rmsprop, nn::Adagrad and nn::Nadam keep their hyperparameters private. Where they
// have accessors, these are used; without them the optimizer is refused (UNIMPLEMENTED),
// naming the accessors it needs.
template <typename T, typename = void>
struct HasRmspropAccessors : std::false_type {};
template <typename T>
struct HasRmspropAccessors<T, std::void_t<decltype(std::declval<const T&>().rho()),
                                          decltype(std::declval<const T&>().momentum()),
                                          decltype(std::declval<const T&>().epsilon()),
                                          decltype(std::declval<const T&>().centered())>> : std::true_type {};
template <typename T, typename = void>
struct HasAdagradAccessors : std::false_type {};
template <typename T>
struct HasAdagradAccessors<T, std::void_t<decltype(std::declval<const T&>().initial_accumulator_value()),
                                          decltype(std::declval<const T&>().epsilon())>> : std::true_type {};
template <typename T, typename = void>
struct HasNadamAccessors : std::false_type {};
template <typename T>
struct HasNadamAccessors<T, std::void_t<decltype(std::declval<const T&>().beta_1()),
                                        decltype(std::declval<const T&>().beta_2()),
                                        decltype(std::declval<const T&>().epsilon())>> : std::true_type {};

Status NoAccessors(const std::string& name, const std::string& cls, const std::string& accessors) {
  return UnimplementedError("optimizer '" + name + "' has no GPU update in this build: nn::" + cls +
                            " exposes no hyperparameter accessors (" + accessors + "); use sgd or adam, or set " +
                            "the job's \"device\" to \"cpu\"");
}

// The hyperparameters of a host optimizer, as GpuOptimizer keeps them.
struct Hyper {
  double momentum = 0, epsilon = 0, rho = 0, beta_1 = 0, beta_2 = 0, initial = 0;
  bool centered = false;
};

template <typename T = nn::Rmsprop>
StatusOr<Hyper> ReadRmsprop(const T& o) {
  if constexpr (HasRmspropAccessors<T>::value) {
    Hyper h;
    h.rho = o.rho();
    h.momentum = o.momentum();
    h.epsilon = o.epsilon();
    h.centered = o.centered();
    return h;
  } else {
    return NoAccessors(o.name(), "Rmsprop", "rho(), momentum(), epsilon(), centered()");
  }
}

template <typename T = nn::Adagrad>
StatusOr<Hyper> ReadAdagrad(const T& o) {
  if constexpr (HasAdagradAccessors<T>::value) {
    Hyper h;
    h.initial = o.initial_accumulator_value();
    h.epsilon = o.epsilon();
    return h;
  } else {
    return NoAccessors(o.name(), "Adagrad", "initial_accumulator_value(), epsilon()");
  }
}

template <typename T = nn::Nadam>
StatusOr<Hyper> ReadNadam(const T& o) {
  if constexpr (HasNadamAccessors<T>::value) {
    Hyper h;
    h.beta_1 = o.beta_1();
    h.beta_2 = o.beta_2();
    h.epsilon = o.epsilon();
    return h;
  } else {
    return NoAccessors(o.name(), "Nadam", "beta_1(), beta_2(), epsilon()");
  }
}

// Copies `host` into `device` (allocated to its size) on the compute stream. The callers'
// host vectors are members that live as long as the device copies, so the copy may run
// whenever the stream gets to it.
template <typename T>
Status Upload(const std::vector<T>& host, DeviceBuffer<T>* device, const std::string& what, const GpuContext* gpu) {
  RT_RETURN_IF_ERROR(device->Allocate(host.size(), what, gpu->ordinal()));
  if (host.empty()) return Status::Ok();
  return CudaCheck(cudaMemcpyAsync(device->get(), host.data(), device->bytes(), cudaMemcpyHostToDevice, gpu->compute()),
                   "cudaMemcpyAsync(" + what + ")", gpu->ordinal());
}

// How many state slots the rule uses (for a check against the host's state()).
size_t ExpectedSlots(om::Rule rule, const Hyper& h) {
  switch (rule) {
    case om::Rule::kSgd: return 0;
    case om::Rule::kMomentum:
    case om::Rule::kNesterov:
    case om::Rule::kAdagrad: return 1;
    case om::Rule::kAdam:
    case om::Rule::kNadam: return 2;
    case om::Rule::kAmsgrad: return 3;
    case om::Rule::kRmsprop: return 1 + (h.momentum > 0 ? 1 : 0) + (h.centered ? 1 : 0);
  }
  return 0;
}

}  // namespace

// ---------------------------------------------------------------- GpuOptimizer

StatusOr<std::unique_ptr<GpuOptimizer>> GpuOptimizer::Create(nn::Optimizer* host, size_t num_trainable,
                                                             const std::vector<nn::ParamInfo>& params,
                                                             const GpuContext* gpu) {
  if (host == nullptr || gpu == nullptr) return InvalidArgumentError("GpuOptimizer needs an optimizer and a GPU");
  for (const nn::ParamInfo& p : params) {
    if (p.trainable && p.offset + p.count > num_trainable) {
      return InvalidArgumentError("GpuOptimizer: the trainable weight '" + p.name + "' lies outside the first " +
                                  std::to_string(num_trainable) + " parameters it updates");
    }
  }
  std::unique_ptr<GpuOptimizer> o(new GpuOptimizer());
  o->host_ = host;
  o->gpu_ = gpu;
  o->n_ = num_trainable;
  Hyper h;
  if (auto* sgd = dynamic_cast<nn::Sgd*>(host)) {
    h.momentum = sgd->momentum();
    o->rule_ = sgd->momentum() == 0.0 ? om::Rule::kSgd : (sgd->nesterov() ? om::Rule::kNesterov : om::Rule::kMomentum);
  } else if (auto* adam = dynamic_cast<nn::Adam*>(host)) {
    o->adam_ = adam;
    o->rule_ = adam->amsgrad() ? om::Rule::kAmsgrad : om::Rule::kAdam;
  } else if (auto* rmsprop = dynamic_cast<nn::Rmsprop*>(host)) {
    RT_ASSIGN_OR_RETURN(h, ReadRmsprop(*rmsprop));
    o->rule_ = om::Rule::kRmsprop;
  } else if (auto* adagrad = dynamic_cast<nn::Adagrad*>(host)) {
    RT_ASSIGN_OR_RETURN(h, ReadAdagrad(*adagrad));
    o->rule_ = om::Rule::kAdagrad;
  } else if (auto* nadam = dynamic_cast<nn::Nadam*>(host)) {
    RT_ASSIGN_OR_RETURN(h, ReadNadam(*nadam));
    o->nadam_ = nadam;
    o->rule_ = om::Rule::kNadam;
  } else {
    return UnimplementedError("optimizer '" + host->name() +
                              "' has no GPU update; set the job's \"device\" to \"cpu\"");
  }
  o->momentum_ = h.momentum;
  o->epsilon_ = h.epsilon;
  o->rho_ = h.rho;
  o->beta_1_ = h.beta_1;
  o->beta_2_ = h.beta_2;
  o->initial_ = h.initial;
  o->centered_ = h.centered;

  const int id = gpu->ordinal();
  RT_RETURN_IF_ERROR(gpu->MakeCurrent());
  // The slots: the host's names (its list depends only on the configuration).
  for (const auto& [name, unused] : host->state()) {
    o->slot_names_.push_back(name);
    o->slot_init_.push_back(o->rule_ == om::Rule::kAdagrad ? static_cast<float>(h.initial) : 0.0f);
    o->slots_.emplace_back();
    RT_RETURN_IF_ERROR(o->slots_.back().Allocate(num_trainable, "optimizer slot '" + name + "'", id));
  }
  const size_t expected_slots = ExpectedSlots(o->rule_, h);
  if (o->slots_.size() != expected_slots) {
    return InternalError("optimizer '" + host->name() + "' has " + std::to_string(o->slots_.size()) +
                         " state slots; its GPU update expects " + std::to_string(expected_slots));
  }

  // The variables' pieces, and the reductions' buffers when clipping by a norm.
  std::vector<om::Span> spans;
  const nn::GradientClip& clip = host->options().clip;
  if (clip.mode == nn::GradientClip::Mode::kNorm || clip.mode == nn::GradientClip::Mode::kGlobalNorm) {
    for (const nn::VariableSpan& v : host->variables()) {
      spans.push_back(om::Span{static_cast<int64_t>(v.offset), static_cast<int64_t>(v.count)});
    }
    if (!host->variables().empty() && !om::SpansTile(spans, static_cast<int64_t>(num_trainable))) {
      RT_LOG(WARNING) << "optimizer: the " << spans.size() << " variables do not tile the " << num_trainable
                      << " trainable parameters in order; clipping treats them as one variable (as on the CPU)";
    }
  }
  om::BuildVariableChunks(spans, static_cast<int64_t>(num_trainable), &o->host_chunks_, &o->host_var_first_);
  RT_RETURN_IF_ERROR(Upload(o->host_chunks_, &o->chunks_, "optimizer pieces", gpu));
  if (clip.mode == nn::GradientClip::Mode::kNorm || clip.mode == nn::GradientClip::Mode::kGlobalNorm) {
    const size_t num_vars = o->host_var_first_.size() - 1;
    RT_RETURN_IF_ERROR(Upload(o->host_var_first_, &o->var_first_, "optimizer variables", gpu));
    RT_RETURN_IF_ERROR(o->partial_.Allocate(o->host_chunks_.size(), "gradient norm partial sums", id));
    RT_RETURN_IF_ERROR(o->clip_factor_.Allocate(
        clip.mode == nn::GradientClip::Mode::kNorm ? num_vars : 1, "gradient clipping factors", id));
  }
  RT_RETURN_IF_ERROR(o->ResetSlots());
  return o;
}

std::vector<float*> GpuOptimizer::slots() {
  std::vector<float*> s;
  for (DeviceBuffer<float>& b : slots_) s.push_back(b.get());
  return s;
}

Status GpuOptimizer::ResetSlots() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    RT_RETURN_IF_ERROR(CudaCheck(FillArray(slots_[i].get(), n_, slot_init_[i], gpu_->compute()),
                                 "FillArray(optimizer slot '" + slot_names_[i] + "')", gpu_->ordinal()));
  }
  return Status::Ok();
}

StatusOr<om::StepArgs> GpuOptimizer::NextStep() {
  om::StepArgs a;
  a.rule = rule_;
  a.s0 = slots_.size() > 0 ? slots_[0].get() : nullptr;
  a.s1 = slots_.size() > 1 ? slots_[1].get() : nullptr;
  a.s2 = slots_.size() > 2 ? slots_[2].get() : nullptr;
  const double lr = host_->learning_rate();
  switch (rule_) {
    case om::Rule::kSgd:
    case om::Rule::kMomentum:
    case om::Rule::kNesterov:
      a.lr = static_cast<float>(lr);
      a.momentum = static_cast<float>(momentum_);
      break;
    case om::Rule::kAdam:
    case om::Rule::kAmsgrad: {
      const nn::Adam::StepScalars s = adam_->NextStepScalars();
      a.alpha = s.alpha;
      a.one_minus_b1 = s.one_minus_b1;
      a.one_minus_b2 = s.one_minus_b2;
      a.epsilon = s.epsilon;
      break;
    }
    case om::Rule::kRmsprop: {
      a.rmsprop = om::RmspropStepScalars(lr, rho_, momentum_, epsilon_);
      // The slots in state() order: velocity, [momentum], [average_gradient].
      float* velocity = slots_[0].get();
      float* mom = momentum_ > 0 ? slots_[1].get() : nullptr;
      float* avg = centered_ ? slots_[momentum_ > 0 ? 2 : 1].get() : nullptr;
      a.s0 = velocity;
      a.s1 = mom;
      a.s2 = avg;
      break;
    }
    case om::Rule::kAdagrad:
      a.lr = static_cast<float>(lr);
      a.epsilon = static_cast<float>(epsilon_);
      break;
    case om::Rule::kNadam: {
      const int64_t t = host_->iterations() + 1;
      a.nadam = om::NadamStepScalars(lr, beta_1_, beta_2_, epsilon_, t, nadam_->UProduct(t));
      break;
    }
  }
  const nn::OptimizerOptions& options = host_->options();
  a.clip_value = static_cast<float>(options.clip.value);
  switch (options.clip.mode) {
    case nn::GradientClip::Mode::kNone: a.clip = om::Clip::kNone; break;
    case nn::GradientClip::Mode::kValue: a.clip = om::Clip::kValue; break;
    case nn::GradientClip::Mode::kNorm:
      a.clip = om::Clip::kNorm;
      a.clip_div = clip_factor_.get();
      break;
    case nn::GradientClip::Mode::kGlobalNorm:
      a.clip = om::Clip::kGlobalNorm;
      a.clip_scale = clip_factor_.get();
      break;
  }
  if (options.weight_decay.has_value()) {
    a.decay = true;
    a.weight_decay = static_cast<float>(*options.weight_decay);
    a.decay_lr = static_cast<float>(lr);
  }
  return a;
}

Status GpuOptimizer::Apply(float* params, const float* grads) {
  if (n_ == 0) return Status::Ok();
  RT_ASSIGN_OR_RETURN(const om::StepArgs a, NextStep());
  const int id = gpu_->ordinal();
  cudaStream_t stream = gpu_->compute();
  const int64_t num_chunks = static_cast<int64_t>(host_chunks_.size());
  const int64_t num_vars = static_cast<int64_t>(host_var_first_.size()) - 1;
  if (a.clip == om::Clip::kNorm || a.clip == om::Clip::kGlobalNorm) {
    RT_RETURN_IF_ERROR(CudaCheck(ChunkSumSquares(grads, chunks_.get(), num_chunks, partial_.get(), stream),
                                 "ChunkSumSquares(gradient norms)", id));
    if (a.clip == om::Clip::kNorm) {
      RT_RETURN_IF_ERROR(CudaCheck(ClipNormDivisors(partial_.get(), var_first_.get(), num_vars, a.clip_value,
                                                    clip_factor_.get(), stream),
                                   "ClipNormDivisors", id));
    } else {
      RT_RETURN_IF_ERROR(CudaCheck(GlobalClipScale(partial_.get(), var_first_.get(), num_vars, a.clip_value,
                                                   clip_factor_.get(), stream),
                                   "GlobalClipScale", id));
    }
  }
  return CudaCheck(OptimizerUpdate(a, params, grads, chunks_.get(), num_chunks, stream),
                   "OptimizerUpdate(" + host_->name() + ")", id);
}

std::string GpuOptimizer::Describe() const {
  std::string d = host_->name();
  switch (rule_) {
    case om::Rule::kMomentum: d += " (momentum)"; break;
    case om::Rule::kNesterov: d += " (nesterov)"; break;
    case om::Rule::kAmsgrad: d += " (amsgrad)"; break;
    case om::Rule::kRmsprop:
      if (momentum_ > 0 && centered_) d += " (momentum, centered)";
      else if (momentum_ > 0) d += " (momentum)";
      else if (centered_) d += " (centered)";
      break;
    default: break;
  }
  const nn::OptimizerOptions& options = host_->options();
  if (options.clip.active()) d += ", " + options.clip.Describe();
  if (options.weight_decay.has_value()) d += ", weight_decay " + nlohmann::json(*options.weight_decay).dump();
  return d;
}

// ---------------------------------------------------------------- GpuRegularization

StatusOr<std::unique_ptr<GpuRegularization>> GpuRegularization::Create(const std::vector<nn::ParamInfo>& params,
                                                                       const GpuContext* gpu) {
  if (gpu == nullptr) return InvalidArgumentError("GpuRegularization needs a GPU");
  std::unique_ptr<GpuRegularization> r(new GpuRegularization());
  r->gpu_ = gpu;
  for (const nn::ParamInfo& p : params) {
    if (!p.regularizer.active()) continue;
    const auto offset = static_cast<int64_t>(p.offset), count = static_cast<int64_t>(p.count);
    om::RegSegment s{static_cast<int64_t>(r->host_penalty_chunks_.size()), 0, p.regularizer.l1(), p.regularizer.l2()};
    om::AppendChunks(offset, count, static_cast<int32_t>(r->host_penalty_segments_.size()), &r->host_penalty_chunks_);
    s.end_chunk = static_cast<int64_t>(r->host_penalty_chunks_.size());
    r->host_penalty_segments_.push_back(s);
    if (!p.trainable) continue;
    om::RegSegment g{static_cast<int64_t>(r->host_grad_chunks_.size()), 0, p.regularizer.l1(), p.regularizer.l2()};
    om::AppendChunks(offset, count, static_cast<int32_t>(r->host_grad_segments_.size()), &r->host_grad_chunks_);
    g.end_chunk = static_cast<int64_t>(r->host_grad_chunks_.size());
    r->host_grad_segments_.push_back(g);
  }
  if (!r->active()) return r;
  RT_RETURN_IF_ERROR(gpu->MakeCurrent());
  const int id = gpu->ordinal();
  RT_RETURN_IF_ERROR(Upload(r->host_penalty_chunks_, &r->penalty_chunks_, "regularization pieces", gpu));
  RT_RETURN_IF_ERROR(Upload(r->host_penalty_segments_, &r->penalty_segments_, "regularized weights", gpu));
  RT_RETURN_IF_ERROR(Upload(r->host_grad_chunks_, &r->grad_chunks_, "regularization gradient pieces", gpu));
  RT_RETURN_IF_ERROR(Upload(r->host_grad_segments_, &r->grad_segments_, "regularized trainable weights", gpu));
  RT_RETURN_IF_ERROR(r->abs_partial_.Allocate(r->host_penalty_chunks_.size(), "regularization partial sums", id));
  RT_RETURN_IF_ERROR(r->square_partial_.Allocate(r->host_penalty_chunks_.size(), "regularization partial sums", id));
  return r;
}

Status GpuRegularization::AddGradients(const float* params, float* grads, size_t begin, size_t end, float scale) {
  if (host_grad_chunks_.empty() || begin >= end) return Status::Ok();
  return CudaCheck(RegularizerGradients(params, grads, grad_chunks_.get(),
                                        static_cast<int64_t>(host_grad_chunks_.size()), grad_segments_.get(),
                                        static_cast<int64_t>(begin), static_cast<int64_t>(end), scale,
                                        gpu_->compute()),
                   "RegularizerGradients", gpu_->ordinal());
}

Status GpuRegularization::Run(const float* params, double* penalty, double* loss_sum, double batch) {
  const int id = gpu_->ordinal();
  cudaStream_t stream = gpu_->compute();
  const auto num_chunks = static_cast<int64_t>(host_penalty_chunks_.size());
  RT_RETURN_IF_ERROR(CudaCheck(PenaltyPartials(params, penalty_chunks_.get(), num_chunks, abs_partial_.get(),
                                               square_partial_.get(), stream),
                               "PenaltyPartials", id));
  return CudaCheck(PenaltyTotal(penalty_segments_.get(), static_cast<int64_t>(host_penalty_segments_.size()),
                                abs_partial_.get(), square_partial_.get(), penalty, loss_sum, batch, stream),
                   "PenaltyTotal", id);
}

Status GpuRegularization::Penalty(const float* params, double* penalty) {
  if (!active()) {
    return CudaCheck(cudaMemsetAsync(penalty, 0, sizeof(double), gpu_->compute()), "cudaMemsetAsync(penalty)",
                     gpu_->ordinal());
  }
  return Run(params, penalty, nullptr, 0);
}

Status GpuRegularization::AddPenaltyToLoss(const float* params, int batch, double* loss_sum) {
  if (!active()) return Status::Ok();
  return Run(params, nullptr, loss_sum, static_cast<double>(batch));
}

}  // namespace ringtrain::gpu
