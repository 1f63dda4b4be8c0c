// Conv2D through cuDNN's legacy API: NHWC FP32 tensors, an NHWC (= OHWI) filter kept
// as a device copy of the model's HWIO kernel (refreshed by every Forward, since the
// optimizer updates the HWIO parameters in place), FMA math (no TF32: the parity tests
// ask for FP32 accuracy), and deterministic algorithms chosen once per batch size.
//
// Groups and dilation as Keras: the kernel is HWIO [kh, kw, c / groups, filters], and
// output filter f belongs to group f / (filters / groups), reading input channels
// [group * c / groups, (group + 1) * c / groups): cuDNN's grouped convolution (group
// count on the convolution descriptor, c / groups channels on the filter descriptor)
// orders its filters the same way. Dilation is the descriptor's.
//
// Padding: cuDNN pads both sides alike. When the model's (TensorFlow's) padding gives
// the same output size that way, cuDNN pads; otherwise ('same' with an odd total, the
// odd cell after) the input is copied into an explicitly zero-padded buffer and cuDNN
// runs unpadded on it, and the input gradient is cropped back. With dilation the
// window's extent is (k - 1) * dilation + 1.
//
// The bias and the output activation are the epilogue of backends/cuda/output_activation.h:
// relu and linear fused with the bias, any other activation after it on the kept
// pre-activation (the CPU layer's order).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/logging.h"
#include "backends/cuda/conv_family.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/cudnn_conv.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_kernels.h"
#include "backends/cuda/gpu_pad.h"
#include "backends/cuda/op_kernels.h"
#include "backends/cuda/output_activation.h"
#include "backends/kernel.h"

namespace ringtrain::gpu {
namespace {

using cudnn_conv::Algorithms;
using cudnn_conv::ConvDesc;
using cudnn_conv::FilterDesc;
using cudnn_conv::FirstAcceptable;
using cudnn_conv::TensorDesc;

// What the Conv2D kernel reads of its node.
struct ConvSpec {
  std::string name;
  ops::Window window;
  int filters = 0;
  int groups = 1;
  ops::Activation act = ops::Activation::kLinear;
  NodeWeight kernel, bias;  // bias.present: use_bias
  bool need_input_grad = false;
};

class GpuConv final : public backends::Kernel {
 public:
  GpuConv(const ConvSpec& s, const GpuContext* gpu)
      : s_(s), g_(s.window), f_(s.filters), cg_(s.window.c / s.groups), gpu_(gpu), epilogue_(s.act, s.name, gpu) {}

  // Descriptors, and the padding decision.
  Status Init() {
    const int id = gpu_->ordinal();
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnCreateTensorDescriptor(x_desc_.out()), "cudnnCreateTensorDescriptor", id));
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnCreateTensorDescriptor(y_desc_.out()), "cudnnCreateTensorDescriptor", id));
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnCreateFilterDescriptor(w_desc_.out()), "cudnnCreateFilterDescriptor", id));
    RT_RETURN_IF_ERROR(
        CudnnCheck(cudnnCreateConvolutionDescriptor(conv_desc_.out()), "cudnnCreateConvolutionDescriptor", id));
    // Grouped: each filter sees c / groups input channels.
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnSetFilter4dDescriptor(w_desc_.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, f_, cg_, g_.kh, g_.kw),
        "cudnnSetFilter4dDescriptor(" + s_.name + ")", id));

    // cuDNN's own symmetric padding when it gives the model's output size.
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
        return InternalError(s_.name + ": cuDNN's output size disagrees with the model's " +
                             std::to_string(g_.out_h) + "x" + std::to_string(g_.out_w) +
                             " even on an explicitly padded input; set the job's \"device\" to \"cpu\"");
      }
      RT_LOG(DEBUG) << s_.name << ": asymmetric padding; padding explicitly to " << hin_ << "x" << win_;
    }
    return Status::Ok();
  }

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const size_t b = static_cast<size_t>(batch);
    const size_t filter = static_cast<size_t>(g_.kh) * g_.kw * cg_ * f_;
    RT_RETURN_IF_ERROR(w_ohwi_.Grow(filter, s_.name + " OHWI kernel", id));
    if (s_.kernel.trainable) RT_RETURN_IF_ERROR(dw_ohwi_.Grow(filter, s_.name + " OHWI kernel gradient", id));
    const size_t outputs = b * g_.out_h * g_.out_w * f_;
    RT_RETURN_IF_ERROR(y_.Grow(outputs, s_.name + (epilogue_.fused() ? " output" : " pre-activation"), id));
    RT_RETURN_IF_ERROR(epilogue_.Reserve(static_cast<int64_t>(b) * g_.out_h * g_.out_w, f_));
    const size_t padded_in = b * hin_ * win_ * g_.c;
    if (padded_) RT_RETURN_IF_ERROR(xp_.Grow(padded_in, s_.name + " padded input", id));
    if (s_.need_input_grad) {
      RT_RETURN_IF_ERROR(dx_.Grow(b * g_.in_size(), s_.name + " input gradient", id));
      if (padded_) RT_RETURN_IF_ERROR(dxp_.Grow(padded_in, s_.name + " padded input gradient", id));
    }
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
    const float* x = inputs[0];
    const int id = gpu_->ordinal();
    RT_ASSIGN_OR_RETURN(const Algorithms* a, Prepared(batch, args));
    RT_RETURN_IF_ERROR(SetBatch(batch));
    RT_RETURN_IF_ERROR(CudaCheck(
        HwioToOhwi(args.params + s_.kernel.offset, g_.kh, g_.kw, cg_, f_, w_ohwi_.get(), gpu_->compute()),
        "HwioToOhwi(" + s_.name + ")", id));
    const float* in = x;
    if (padded_) {
      RT_RETURN_IF_ERROR(CudaCheck(
          PadNhwc(x, batch, g_.h, g_.w, g_.c, g_.pad_top, g_.pad_left, hin_, win_, xp_.get(), gpu_->compute()),
          "PadNhwc(" + s_.name + ")", id));
      in = xp_.get();
    }
    const float one = 1.0f, zero = 0.0f;
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnConvolutionForward(gpu_->cudnn(), &one, x_desc_.get(), in, w_desc_.get(), w_ohwi_.get(),
                                conv_desc_.get(), a->fwd, args.workspace, args.workspace_bytes, &zero, y_desc_.get(),
                                y_.get()),
        "cudnnConvolutionForward(" + s_.name + ")", id));
    const int64_t rows = static_cast<int64_t>(batch) * g_.out_h * g_.out_w;
    const float* bias = s_.bias.present ? args.params + s_.bias.offset : nullptr;
    RT_ASSIGN_OR_RETURN(const float* out, epilogue_.Forward(y_.get(), bias, rows, f_));
    if (training) {
      x_ = in;
      batch_ = batch;
    }
    return out;
  }

  Status Backward(const backends::KernelArgs& args, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const bool need_din = need[0];
    const bool bias_grad = s_.bias.present && s_.bias.trainable;
    if (!need_din && !s_.kernel.trainable && !bias_grad) return Status::Ok();  // frozen, and nothing to pass back
    const int id = gpu_->ordinal();
    RT_ASSIGN_OR_RETURN(const Algorithms* a, Prepared(batch_, args));
    RT_RETURN_IF_ERROR(SetBatch(batch_));
    const int64_t rows = static_cast<int64_t>(batch_) * g_.out_h * g_.out_w;
    RT_ASSIGN_OR_RETURN(const float* dpre,
                        epilogue_.Backward(dy, y_.get(), rows, f_, bias_grad ? args.grads + s_.bias.offset : nullptr));
    const float one = 1.0f, zero = 0.0f;
    if (s_.kernel.trainable) {  // a frozen kernel gets no gradient
      RT_RETURN_IF_ERROR(CudnnCheck(
          cudnnConvolutionBackwardFilter(gpu_->cudnn(), &one, x_desc_.get(), x_, y_desc_.get(), dpre,
                                         conv_desc_.get(), a->bwd_filter, args.workspace, args.workspace_bytes, &zero,
                                         w_desc_.get(), dw_ohwi_.get()),
          "cudnnConvolutionBackwardFilter(" + s_.name + ")", id));
      RT_RETURN_IF_ERROR(CudaCheck(
          OhwiToHwio(dw_ohwi_.get(), g_.kh, g_.kw, cg_, f_, args.grads + s_.kernel.offset, gpu_->compute()),
          "OhwiToHwio(" + s_.name + ")", id));
    }
    if (!need_din) return Status::Ok();
    if (!s_.need_input_grad) {
      return InternalError(s_.name + ": input gradient asked for, but the layer was built without one");
    }
    float* target = padded_ ? dxp_.get() : dx_.get();
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnConvolutionBackwardData(gpu_->cudnn(), &one, w_desc_.get(), w_ohwi_.get(), y_desc_.get(), dpre,
                                     conv_desc_.get(), a->bwd_data, args.workspace, args.workspace_bytes, &zero,
                                     x_desc_.get(), target),
        "cudnnConvolutionBackwardData(" + s_.name + ")", id));
    if (padded_) {
      RT_RETURN_IF_ERROR(CudaCheck(CropNhwc(dxp_.get(), batch_, hin_, win_, g_.c, g_.pad_top, g_.pad_left, g_.h,
                                            g_.w, dx_.get(), gpu_->compute()),
                                   "CropNhwc(" + s_.name + ")", id));
    }
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  // Sets the convolution descriptor's padding (with the stride, dilation, group count
  // and math type) and asks cuDNN for the output size of one example of the (possibly
  // padded) input.
  StatusOr<bool> OutputMatches(int pad_h, int pad_w) {
    const int id = gpu_->ordinal();
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnSetConvolution2dDescriptor(conv_desc_.get(), pad_h, pad_w, g_.stride_h, g_.stride_w, g_.dilation_h,
                                        g_.dilation_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor(" + s_.name + ")", id));
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnSetConvolutionGroupCount(conv_desc_.get(), s_.groups),
                                  "cudnnSetConvolutionGroupCount(" + s_.name + ")", id));
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnSetConvolutionMathType(conv_desc_.get(), CUDNN_FMA_MATH),
                                  "cudnnSetConvolutionMathType(" + s_.name + ")", id));
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnSetTensor4dDescriptor(x_desc_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, g_.c, hin_, win_),
        "cudnnSetTensor4dDescriptor(" + s_.name + " input)", id));
    desc_batch_ = 0;  // x_desc_ now describes one example
    int n = 0, c = 0, h = 0, w = 0;
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnGetConvolution2dForwardOutputDim(conv_desc_.get(), x_desc_.get(), w_desc_.get(), &n, &c, &h, &w),
        "cudnnGetConvolution2dForwardOutputDim(" + s_.name + ")", id));
    return n == 1 && c == f_ && h == g_.out_h && w == g_.out_w;
  }

  Status SetBatch(int batch) {
    if (batch == desc_batch_) return Status::Ok();
    const int id = gpu_->ordinal();
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnSetTensor4dDescriptor(x_desc_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, g_.c, hin_, win_),
        "cudnnSetTensor4dDescriptor(" + s_.name + " input)", id));
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnSetTensor4dDescriptor(y_desc_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, f_, g_.out_h, g_.out_w),
        "cudnnSetTensor4dDescriptor(" + s_.name + " output)", id));
    desc_batch_ = batch;
    return Status::Ok();
  }

  StatusOr<const Algorithms*> Prepared(int batch, const backends::KernelArgs& args) const {
    auto it = algos_.find(batch);
    if (it == algos_.end() || it->second.workspace > args.workspace_bytes) {
      return InternalError(s_.name + ": batch of " + std::to_string(batch) +
                           " not prepared (PrepareBatch and a large enough workspace come first)");
    }
    return &it->second;
  }

  StatusOr<Algorithms> Choose(int batch) {
    const int id = gpu_->ordinal();
    const bool fp32_default = gpu_->default_math_is_fp32();
    const std::string where = s_.name + " at batch " + std::to_string(batch);
    Algorithms a;
    cudnnHandle_t h = gpu_->cudnn();
    size_t bytes = 0;

    std::vector<cudnnConvolutionFwdAlgoPerf_t> fwd(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    int found = 0;
    RT_RETURN_IF_ERROR(CudnnCheck(
        cudnnGetConvolutionForwardAlgorithm_v7(h, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(),
                                               static_cast<int>(fwd.size()), &found, fwd.data()),
        "cudnnGetConvolutionForwardAlgorithm_v7(" + where + ")", id));
    int pick = FirstAcceptable(fwd, found, fp32_default);
    if (pick < 0) return NoAlgorithm("forward", where);
    a.fwd = fwd[pick].algo;
    RT_RETURN_IF_ERROR(CudnnCheck(cudnnGetConvolutionForwardWorkspaceSize(h, x_desc_.get(), w_desc_.get(),
                                                                          conv_desc_.get(), y_desc_.get(), a.fwd,
                                                                          &bytes),
                                  "cudnnGetConvolutionForwardWorkspaceSize(" + where + ")", id));
    a.workspace = std::max(a.workspace, bytes);

    if (s_.kernel.trainable) {  // a frozen kernel's filter gradient never runs
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

    if (s_.need_input_grad) {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> bwd(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
      RT_RETURN_IF_ERROR(CudnnCheck(
          cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_desc_.get(), y_desc_.get(), conv_desc_.get(),
                                                      x_desc_.get(), static_cast<int>(bwd.size()), &found,
                                                      bwd.data()),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7(" + where + ")", id));
      pick = FirstAcceptable(bwd, found, fp32_default);
      if (pick < 0) return NoAlgorithm("input-gradient", where);
      a.bwd_data = bwd[pick].algo;
      RT_RETURN_IF_ERROR(CudnnCheck(
          cudnnGetConvolutionBackwardDataWorkspaceSize(h, w_desc_.get(), y_desc_.get(), conv_desc_.get(),
                                                       x_desc_.get(), a.bwd_data, &bytes),
          "cudnnGetConvolutionBackwardDataWorkspaceSize(" + where + ")", id));
      a.workspace = std::max(a.workspace, bytes);
    }
    RT_LOG(DEBUG) << "GPU " << id << " " << where << ": cuDNN algorithms forward " << a.fwd << ", filter "
                  << a.bwd_filter << ", data " << a.bwd_data << ", workspace " << a.workspace << " bytes";
    return a;
  }

  Status NoAlgorithm(const char* pass, const std::string& where) const {
    return FailedPreconditionError("cuDNN offers no deterministic FP32 " + std::string(pass) + " algorithm for " +
                                   where + " on GPU " + std::to_string(gpu_->ordinal()) +
                                   "; set the job's \"device\" to \"cpu\"");
  }

  const ConvSpec s_;
  const ops::Window g_;
  const int f_;
  const int cg_;  // input channels per group
  const GpuContext* gpu_;
  OutputActivation epilogue_;
  bool padded_ = false;
  int hin_ = 0, win_ = 0;  // the extent cuDNN sees (explicitly padded or not)
  TensorDesc x_desc_, y_desc_;
  FilterDesc w_desc_;
  ConvDesc conv_desc_;
  int desc_batch_ = 0;  // the batch x_desc_/y_desc_ describe now (0: not set for a batch)
  std::map<int, Algorithms> algos_;
  // y_: cuDNN's output plus the bias: the output when the activation is fused, else the
  // pre-activation (the epilogue holds the output).
  DeviceBuffer<float> w_ohwi_, dw_ohwi_, y_, xp_, dx_, dxp_;
  const float* x_ = nullptr;  // what cuDNN convolved in the last training Forward
  int batch_ = 0;
};

StatusOr<std::unique_ptr<backends::Kernel>> MakeConv(const ConvSpec& s, const GpuContext* gpu) {
  const ops::Window& g = s.window;
  if (g.h < 1 || g.w < 1 || g.c < 1 || g.kh < 1 || g.kw < 1 || g.out_h < 1 || g.out_w < 1 || s.filters < 1) {
    return InvalidArgumentError("conv2d layer '" + s.name + "' has an empty window, input or filter count");
  }
  if (g.stride_h < 1 || g.stride_w < 1 || g.dilation_h < 1 || g.dilation_w < 1) {
    return InvalidArgumentError("conv2d layer '" + s.name + "' has a stride or dilation below 1");
  }
  if (s.groups < 1 || g.c % s.groups != 0 || s.filters % s.groups != 0) {
    return InvalidArgumentError("conv2d layer '" + s.name + "': groups " + std::to_string(s.groups) +
                                " must divide both the input channels (" + std::to_string(g.c) + ") and the filters (" +
                                std::to_string(s.filters) + ")");
  }
  if (!s.kernel.present) return InvalidArgumentError("conv2d layer '" + s.name + "' has no kernel weight");
  std::unique_ptr<GpuConv> layer(new GpuConv(s, gpu));
  RT_RETURN_IF_ERROR(layer->Init());
  return std::unique_ptr<backends::Kernel>(std::move(layer));
}

}  // namespace

StatusOr<std::unique_ptr<backends::Kernel>> NewConv2DKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kConv2D) {
    return InvalidArgumentError(node.Label() + ": not a Conv2D op (" + ops::Describe(node.op) + ")");
  }
  ConvSpec s;
  s.name = node.name;
  s.window = node.op.window;
  s.filters = node.op.units;
  s.groups = node.op.groups;
  s.act = node.op.activation;
  s.kernel = WeightOf(node, 0);
  if (node.op.use_bias) {
    s.bias = WeightOf(node, 1);
    if (!s.bias.present) return InvalidArgumentError(node.Label() + ": use_bias, but no bias weight");
  }
  s.need_input_grad = !node.need_input_grad.empty() && node.need_input_grad[0];
  return MakeConv(s, gpu);
}

}  // namespace ringtrain::gpu
