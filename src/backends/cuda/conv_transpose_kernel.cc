// Conv2DTranspose through cuDNN's legacy API (backends/cuda/conv_transpose_kernel.h).
// Names below are the convolution's: its input is the layer's output [Ho, Wo, F] (F the
// layer's filters), its output the layer's input [H, W, C]; its NHWC (= OHWI) filter
// [C, kh, kw, F] is a device copy of the model's [kh, kw, F, C] kernel, refreshed by
// every Forward (the optimizer updates the parameters in place).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "backends/cuda/conv_transpose_kernel.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/cudnn_conv.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_kernels.h"
#include "backends/cuda/gpu_pad.h"
#include "backends/cuda/output_activation.h"
#include "common/logging.h"

namespace ringtrain::gpu {
// A namespace of its own: the conv kernel's file has helpers of the same names.
namespace conv_transpose {
namespace {

// The convolution's names: Algorithms::fwd is the layer's input gradient, bwd_data its forward.
using cudnn_conv::Algorithms;
using cudnn_conv::ConvDesc;
using cudnn_conv::FilterDesc;
using cudnn_conv::FirstAcceptable;
using cudnn_conv::TensorDesc;

class GpuConvTranspose final : public backends::Kernel {
 public:
  GpuConvTranspose(const ops::Node& node, const GpuContext* gpu)
      : name_(node.name),
        g_(node.op.window),
        f_(node.op.window.c),
        c_(node.input_shapes[0][2]),
        kernel_(WeightOf(node, 0)),
        bias_(node.op.use_bias ? WeightOf(node, 1) : NodeWeight{}),
        need_input_grad_(!node.need_input_grad.empty() && node.need_input_grad[0]),
        gpu_(gpu),
        epilogue_(node.op.activation, node.name, gpu) {}

  Status Init() {
    const int id = gpu_->ordinal();
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnCreateTensorDescriptor(x_desc_.out()), "cudnnCreateTensorDescriptor", id));
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnCreateTensorDescriptor(y_desc_.out()), "cudnnCreateTensorDescriptor", id));
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnCreateFilterDescriptor(w_desc_.out()), "cudnnCreateFilterDescriptor", id));
    RT_RETURN_IF_ERROR(
        CudnnCheck(cudnnCreateConvolutionDescriptor(conv_desc_.out()), "cudnnCreateConvolutionDescriptor", id));
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnSetFilter4dDescriptor(w_desc_.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, c_, f_, g_.kh, g_.kw),
        "cudnnSetFilter4dDescriptor(" + name_ + ")", id));
    hin_ = g_.h;
    win_ = g_.w;
    RT_ASSIGN_OR_RETURN(bool fits, OutputMatches(g_.pad_top, g_.pad_left));
    if (!fits) {
      padded_ = true;
      const int extent_h = (g_.kh - 1) * g_.dilation_h + 1, extent_w = (g_.kw - 1) * g_.dilation_w + 1;
      const int pad_bottom = std::max(0, (g_.out_h - 1) * g_.stride_h + extent_h - g_.h - g_.pad_top);
      const int pad_right = std::max(0, (g_.out_w - 1) * g_.stride_w + extent_w - g_.w - g_.pad_left);
      hin_ = g_.h + g_.pad_top + pad_bottom;
      win_ = g_.w + g_.pad_left + pad_right;
      RT_ASSIGN_OR_RETURN(fits, OutputMatches(0, 0));
      if (!fits) {
        return InternalError(name_ + ": cuDNN's sizes disagree with the model's " + std::to_string(g_.out_h) + "x" +
                             std::to_string(g_.out_w) + " even explicitly padded; set the job's \"device\" to \"cpu\"");
      }
    }
    return Status::Ok();
  }

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const size_t b = static_cast<size_t>(batch);
    const size_t filter = static_cast<size_t>(g_.kh) * g_.kw * f_ * c_;
    RT_RETURN_IF_ERROR(w_ohwi_.Grow(filter, name_ + " OHWI kernel", id));
    if (kernel_.trainable) RT_RETURN_IF_ERROR(dw_ohwi_.Grow(filter, name_ + " OHWI kernel gradient", id));
    const size_t outputs = b * g_.h * g_.w * f_;
    RT_RETURN_IF_ERROR(y_.Grow(outputs, name_ + (epilogue_.fused() ? " output" : " pre-activation"), id));
    RT_RETURN_IF_ERROR(epilogue_.Reserve(static_cast<int64_t>(b) * g_.h * g_.w, f_));
    if (padded_) RT_RETURN_IF_ERROR(yp_.Grow(b * hin_ * win_ * f_, name_ + " padded output", id));
    if (need_input_grad_) RT_RETURN_IF_ERROR(dx_.Grow(b * g_.out_h * g_.out_w * c_, name_ + " input gradient", id));
    return Status::Ok();
  }

  StatusOr<size_t> PrepareBatch(int batch) override {
    auto it = algos_.find(batch);
    if (it != algos_.end()) return it->second.workspace;
    RT_RETURN_IF_ERROR(SetBatch(batch));
    RT_ASSIGN_OR_RETURN(Algorithms a, Choose(batch));
    algos_[batch] = a;
    return a.workspace;
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& inputs, int batch,
                                 bool training) override {
    const int id = gpu_->ordinal();
    RT_ASSIGN_OR_RETURN(const Algorithms* a, Prepared(batch, args));
    RT_RETURN_IF_ERROR(SetBatch(batch));
    // [kh, kw, F, C] is HWIO with "I" = F, "O" = C.
    RT_RETURN_IF_ERROR(CudaCheck(
        HwioToOhwi(args.params + kernel_.offset, g_.kh, g_.kw, f_, c_, w_ohwi_.get(), gpu_->compute()),
        "HwioToOhwi(" + name_ + ")", id));
    const float one = 1.0f, zero = 0.0f;
    float* target = padded_ ? yp_.get() : y_.get();
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnConvolutionBackwardData(gpu_->cudnn(), &one, w_desc_.get(), w_ohwi_.get(), y_desc_.get(), inputs[0],
                                     conv_desc_.get(), a->bwd_data, args.workspace, args.workspace_bytes, &zero,
                                     x_desc_.get(), target),
        "cudnnConvolutionBackwardData(" + name_ + ")", id));
    if (padded_) {
      RT_RETURN_IF_ERROR(CudaCheck(CropNhwc(yp_.get(), batch, hin_, win_, f_, g_.pad_top, g_.pad_left, g_.h, g_.w,
                                            y_.get(), gpu_->compute()),
                                   "CropNhwc(" + name_ + ")", id));
    }
    const int64_t rows = static_cast<int64_t>(batch) * g_.h * g_.w;
    const float* bias = bias_.present ? args.params + bias_.offset : nullptr;
    RT_ASSIGN_OR_RETURN(const float* out, epilogue_.Forward(y_.get(), bias, rows, f_));
    if (training) {
      x_ = inputs[0];
      batch_ = batch;
    }
    return out;
  }

  Status Backward(const backends::KernelArgs& args, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const bool need_din = need[0];
    const bool bias_grad = bias_.present && bias_.trainable;
    if (!need_din && !kernel_.trainable && !bias_grad) return Status::Ok();
    if (batch_ <= 0) return FailedPreconditionError(name_ + ": Backward without a training Forward");
    const int id = gpu_->ordinal();
    RT_ASSIGN_OR_RETURN(const Algorithms* a, Prepared(batch_, args));
    RT_RETURN_IF_ERROR(SetBatch(batch_));
    const int64_t rows = static_cast<int64_t>(batch_) * g_.h * g_.w;
    RT_ASSIGN_OR_RETURN(const float* d,
                        epilogue_.Backward(dy, y_.get(), rows, f_, bias_grad ? args.grads + bias_.offset : nullptr));
    if (padded_) {  // the convolution's input, zero-padded
      RT_RETURN_IF_ERROR(CudaCheck(
          PadNhwc(d, batch_, g_.h, g_.w, f_, g_.pad_top, g_.pad_left, hin_, win_, yp_.get(), gpu_->compute()),
          "PadNhwc(" + name_ + ")", id));
      d = yp_.get();
    }
    const float one = 1.0f, zero = 0.0f;
    if (kernel_.trainable) {
      RT_RETURN_IF_ERROR(CudnnCheck(
          cudnnConvolutionBackwardFilter(gpu_->cudnn(), &one, x_desc_.get(), d, y_desc_.get(), x_, conv_desc_.get(),
                                         a->bwd_filter, args.workspace, args.workspace_bytes, &zero, w_desc_.get(),
                                         dw_ohwi_.get()),
          "cudnnConvolutionBackwardFilter(" + name_ + ")", id));
      RT_RETURN_IF_ERROR(CudaCheck(
          OhwiToHwio(dw_ohwi_.get(), g_.kh, g_.kw, f_, c_, args.grads + kernel_.offset, gpu_->compute()),
          "OhwiToHwio(" + name_ + ")", id));
    }
    if (!need_din) return Status::Ok();
    if (!need_input_grad_) {
      return InternalError(name_ + ": input gradient asked for, but the layer was built without one");
    }
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnConvolutionForward(gpu_->cudnn(), &one, x_desc_.get(), d, w_desc_.get(), w_ohwi_.get(), conv_desc_.get(),
                                a->fwd, args.workspace, args.workspace_bytes, &zero, y_desc_.get(), dx_.get()),
        "cudnnConvolutionForward(" + name_ + ")", id));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  StatusOr<bool> OutputMatches(int pad_h, int pad_w) {
    const int id = gpu_->ordinal();
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnSetConvolution2dDescriptor(conv_desc_.get(), pad_h, pad_w, g_.stride_h, g_.stride_w, g_.dilation_h,
                                        g_.dilation_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor(" + name_ + ")", id));
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnSetConvolutionMathType(conv_desc_.get(), CUDNN_FMA_MATH),
                                  "cudnnSetConvolutionMathType(" + name_ + ")", id));
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnSetTensor4dDescriptor(x_desc_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, f_, hin_, win_),
        "cudnnSetTensor4dDescriptor(" + name_ + " output)", id));
    desc_batch_ = 0;
    int n = 0, c = 0, h = 0, w = 0;
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnGetConvolution2dForwardOutputDim(conv_desc_.get(), x_desc_.get(), w_desc_.get(), &n, &c, &h, &w),
        "cudnnGetConvolution2dForwardOutputDim(" + name_ + ")", id));
    return n == 1 && c == c_ && h == g_.out_h && w == g_.out_w;
  }

  Status SetBatch(int batch) {
    if (batch == desc_batch_) return Status::Ok();
    const int id = gpu_->ordinal();
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnSetTensor4dDescriptor(x_desc_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, f_, hin_, win_),
        "cudnnSetTensor4dDescriptor(" + name_ + " output)", id));
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnSetTensor4dDescriptor(y_desc_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, c_, g_.out_h, g_.out_w),
        "cudnnSetTensor4dDescriptor(" + name_ + " input)", id));
    desc_batch_ = batch;
    return Status::Ok();
  }

  StatusOr<const Algorithms*> Prepared(int batch, const backends::KernelArgs& args) const {
    auto it = algos_.find(batch);
    if (it == algos_.end() || it->second.workspace > args.workspace_bytes) {
      return InternalError(name_ + ": batch of " + std::to_string(batch) +
                           " not prepared (PrepareBatch and a large enough workspace come first)");
    }
    return &it->second;
  }

  Status NoAlgorithm(const char* pass, const std::string& where) const {
    return FailedPreconditionError("cuDNN offers no deterministic FP32 " + std::string(pass) + " algorithm for " +
                                   where + " on GPU " + std::to_string(gpu_->ordinal()) +
                                   "; set the job's \"device\" to \"cpu\"");
  }

  StatusOr<Algorithms> Choose(int batch) {
    const int id = gpu_->ordinal();
    const bool fp32_default = gpu_->default_math_is_fp32();
    const std::string where = name_ + " at batch " + std::to_string(batch);
    cudnnHandle_t h = gpu_->cudnn();
    Algorithms a;
    size_t bytes = 0;
    int found = 0;
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> bwd(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_desc_.get(), y_desc_.get(), conv_desc_.get(), x_desc_.get(),
                                                    static_cast<int>(bwd.size()), &found, bwd.data()),
        "cudnnGetConvolutionBackwardDataAlgorithm_v7(" + where + ")", id));
    int pick = FirstAcceptable(bwd, found, fp32_default);
    if (pick < 0) return NoAlgorithm("forward (backward-data)", where);
    a.bwd_data = bwd[pick].algo;
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnGetConvolutionBackwardDataWorkspaceSize(h, w_desc_.get(), y_desc_.get(),
                                                                               conv_desc_.get(), x_desc_.get(),
                                                                               a.bwd_data, &bytes),
                                  "cudnnGetConvolutionBackwardDataWorkspaceSize(" + where + ")", id));
    a.workspace = std::max(a.workspace, bytes);
    if (kernel_.trainable) {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> bwf(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
      RT_RETURN_IF_ERROR(CudnnCheck(
          cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_desc_.get(), y_desc_.get(), conv_desc_.get(),
                                                        w_desc_.get(), static_cast<int>(bwf.size()), &found,
                                                        bwf.data()),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7(" + where + ")", id));
      pick = FirstAcceptable(bwf, found, fp32_default);
      if (pick < 0) return NoAlgorithm("filter-gradient", where);
      a.bwd_filter = bwf[pick].algo;
      RT_RETURN_IF_ERROR(CudnnCheck(
          cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x_desc_.get(), y_desc_.get(), conv_desc_.get(),
                                                         w_desc_.get(), a.bwd_filter, &bytes),
          "cudnnGetConvolutionBackwardFilterWorkspaceSize(" + where + ")", id));
      a.workspace = std::max(a.workspace, bytes);
    }
    if (need_input_grad_) {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> fwd(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
      RT_RETURN_IF_ERROR(CudnnCheck(
          cudnnGetConvolutionForwardAlgorithm_v7(h, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(),
                                                 static_cast<int>(fwd.size()), &found, fwd.data()),
          "cudnnGetConvolutionForwardAlgorithm_v7(" + where + ")", id));
      pick = FirstAcceptable(fwd, found, fp32_default);
      if (pick < 0) return NoAlgorithm("input-gradient (forward)", where);
      a.fwd = fwd[pick].algo;
      RT_RETURN_IF_ERROR(CudnnCheck(cudnnGetConvolutionForwardWorkspaceSize(h, x_desc_.get(), w_desc_.get(),
                                                                            conv_desc_.get(), y_desc_.get(), a.fwd,
                                                                            &bytes),
                                    "cudnnGetConvolutionForwardWorkspaceSize(" + where + ")", id));
      a.workspace = std::max(a.workspace, bytes);
    }
    RT_LOG(DEBUG) << "GPU " << id << " " << where << ": cuDNN algorithms data " << a.bwd_data << ", filter "
                  << a.bwd_filter << ", forward " << a.fwd << ", workspace " << a.workspace << " bytes";
    return a;
  }

  const std::string name_;
  const ops::Window g_;  // the convolution: h, w, c = Ho, Wo, F; out_h, out_w = H, W
  const int f_;          // the layer's filters: the convolution's input channels
  const int c_;          // the layer's input channels: the convolution's filters
  const NodeWeight kernel_, bias_;
  const bool need_input_grad_;
  const GpuContext* gpu_;
  OutputActivation epilogue_;
  bool padded_ = false;
  int hin_ = 0, win_ = 0;  // the convolution's input extent cuDNN sees
  TensorDesc x_desc_, y_desc_;  // the convolution's input (the layer's output) and output
  FilterDesc w_desc_;
  ConvDesc conv_desc_;
  int desc_batch_ = 0;
  std::map<int, Algorithms> algos_;
  // y_: the layer's output plus the bias (the output when the activation is fused, else
  // the pre-activation); yp_: its padded form (forward), then the padded gradient (backward).
  DeviceBuffer<float> w_ohwi_, dw_ohwi_, y_, yp_, dx_;
  const float* x_ = nullptr;  // the layer's input in the last training Forward
  int batch_ = 0;
};

}  // namespace
}  // namespace conv_transpose

StatusOr<std::unique_ptr<backends::Kernel>> NewConvTransposeKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kConv2DTranspose) {
    return InvalidArgumentError(node.Label() + ": not a Conv2DTranspose op (" + ops::Describe(node.op) + ")");
  }
  const ops::Window& g = node.op.window;
  if (node.input_shapes.size() != 1 || node.input_shapes[0].size() != 3 || g.h < 1 || g.w < 1 || g.c < 1 ||
      g.kh < 1 || g.kw < 1 || g.stride_h < 1 || g.stride_w < 1 || g.dilation_h < 1 || g.dilation_w < 1 ||
      g.out_h != node.input_shapes[0][0] || g.out_w != node.input_shapes[0][1] ||
      node.output_shape != ops::Shape{g.h, g.w, g.c}) {
    return InvalidArgumentError(node.Label() + ": the transposed convolution's window does not fit the node's shapes");
  }
  if (node.params.empty() || (node.op.use_bias && node.params.size() < 2)) {
    return InvalidArgumentError(node.Label() + ": Conv2DTranspose without its kernel or bias weight");
  }
  std::unique_ptr<conv_transpose::GpuConvTranspose> k(new conv_transpose::GpuConvTranspose(node, gpu));
  RT_RETURN_IF_ERROR(k->Init());
  return std::unique_ptr<backends::Kernel>(std::move(k));
}

}  // namespace ringtrain::gpu
