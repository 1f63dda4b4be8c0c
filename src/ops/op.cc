#include "ops/op.h"

namespace ringtrain::ops {

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kView: return "View";
    case OpKind::kDense: return "Dense";
    case OpKind::kConv2D: return "Conv2D";
    case OpKind::kDepthwiseConv2D: return "DepthwiseConv2D";
    case OpKind::kSeparableConv2D: return "SeparableConv2D";
    case OpKind::kMaxPool2D: return "MaxPool2D";
    case OpKind::kAvgPool2D: return "AvgPool2D";
    case OpKind::kGlobalMaxPool2D: return "GlobalMaxPool2D";
    case OpKind::kGlobalAvgPool2D: return "GlobalAvgPool2D";
    case OpKind::kBatchNorm: return "BatchNorm";
    case OpKind::kLayerNorm: return "LayerNorm";
    case OpKind::kActivation: return "Activation";
    case OpKind::kAdd: return "Add";
    case OpKind::kMultiply: return "Multiply";
    case OpKind::kConcatenate: return "Concatenate";
    case OpKind::kZeroPadding2D: return "ZeroPadding2D";
    case OpKind::kRescaling: return "Rescaling";
    case OpKind::kDropout: return "Dropout";
    case OpKind::kRandomFlip: return "RandomFlip";
    case OpKind::kRandomCrop: return "RandomCrop";
    case OpKind::kRandomRotation: return "RandomRotation";
    case OpKind::kRandomTranslation: return "RandomTranslation";
    case OpKind::kCropping2D: return "Cropping2D";
    case OpKind::kUpSampling2D: return "UpSampling2D";
    case OpKind::kConv2DTranspose: return "Conv2DTranspose";
    case OpKind::kPermute: return "Permute";
    case OpKind::kResizing: return "Resizing";
    case OpKind::kCenterCrop: return "CenterCrop";
    case OpKind::kSubtract: return "Subtract";
    case OpKind::kAverage: return "Average";
    case OpKind::kMaximum: return "Maximum";
    case OpKind::kMinimum: return "Minimum";
    case OpKind::kNormalization: return "Normalization";
    case OpKind::kSpatialDropout2D: return "SpatialDropout2D";
    case OpKind::kGaussianNoise: return "GaussianNoise";
    case OpKind::kRandomBrightness: return "RandomBrightness";
    case OpKind::kRandomContrast: return "RandomContrast";
    case OpKind::kRandomZoom: return "RandomZoom";
    case OpKind::kReduce: return "Reduce";
  }
  return "?";
}

const std::vector<OpKind>& AllOpKinds() {
  static const std::vector<OpKind> kinds = {
      OpKind::kView,           OpKind::kDense,           OpKind::kConv2D,         OpKind::kDepthwiseConv2D,
      OpKind::kSeparableConv2D, OpKind::kMaxPool2D,      OpKind::kAvgPool2D,      OpKind::kGlobalMaxPool2D,
      OpKind::kGlobalAvgPool2D, OpKind::kBatchNorm,      OpKind::kLayerNorm,      OpKind::kActivation,
      OpKind::kAdd,            OpKind::kMultiply,        OpKind::kConcatenate,    OpKind::kZeroPadding2D,
      OpKind::kRescaling,      OpKind::kDropout,         OpKind::kRandomFlip,     OpKind::kRandomCrop,
      OpKind::kRandomRotation, OpKind::kRandomTranslation,
      OpKind::kCropping2D,
      OpKind::kUpSampling2D,
      OpKind::kConv2DTranspose,
      OpKind::kPermute,
      OpKind::kResizing,
      OpKind::kCenterCrop,
      OpKind::kSubtract,
      OpKind::kAverage,
      OpKind::kMaximum,
      OpKind::kMinimum,
      OpKind::kNormalization,
      OpKind::kSpatialDropout2D,
      OpKind::kGaussianNoise,
      OpKind::kRandomBrightness,
      OpKind::kRandomContrast,
      OpKind::kRandomZoom,
      OpKind::kReduce,
  };
  return kinds;
}

const char* ActivationName(Activation act) {
  switch (act) {
    case Activation::kLinear: return "linear";
    case Activation::kRelu: return "relu";
    case Activation::kRelu6: return "relu6";
    case Activation::kSigmoid: return "sigmoid";
    case Activation::kTanh: return "tanh";
    case Activation::kSoftmax: return "softmax";
    case Activation::kGelu: return "gelu";
    case Activation::kGeluTanh: return "gelu_new";
    case Activation::kSwish: return "swish";
    case Activation::kElu: return "elu";
    case Activation::kSelu: return "selu";
    case Activation::kLeakyRelu: return "leaky_relu";
    case Activation::kSoftplus: return "softplus";
    case Activation::kSoftsign: return "softsign";
    case Activation::kMish: return "mish";
    case Activation::kExponential: return "exponential";
  }
  return "?";
}

std::string Describe(const Op& op) {
  std::string s = OpKindName(op.kind);
  std::string args;
  auto add = [&args](const std::string& a) { args += (args.empty() ? "" : ", ") + a; };
  const Window& g = op.window;
  switch (op.kind) {
    case OpKind::kConv2D:
    case OpKind::kDepthwiseConv2D:
    case OpKind::kSeparableConv2D:
    case OpKind::kMaxPool2D:
    case OpKind::kAvgPool2D:
      add(std::to_string(g.kh) + "x" + std::to_string(g.kw));
      if (g.stride_h != 1 || g.stride_w != 1) add("stride " + std::to_string(g.stride_h) + "x" + std::to_string(g.stride_w));
      if (g.dilation_h != 1 || g.dilation_w != 1) {
        add("dilation " + std::to_string(g.dilation_h) + "x" + std::to_string(g.dilation_w));
      }
      if (op.groups != 1) add("groups " + std::to_string(op.groups));
      break;
    case OpKind::kBatchNorm:
      add(op.training_mode ? "training" : "inference");
      if (op.synchronized) add("synchronized");
      break;
    case OpKind::kConcatenate:
      add("axis " + std::to_string(op.axis));
      [[fallthrough]];
    case OpKind::kAdd:
    case OpKind::kMultiply:
    case OpKind::kSubtract:
    case OpKind::kAverage:
    case OpKind::kMaximum:
    case OpKind::kMinimum:
      add(std::to_string(op.num_inputs) + " inputs");
      break;
    case OpKind::kReduce: {
      std::string axes;
      for (int a : op.reduce_axes) axes += (axes.empty() ? "" : ", ") + std::to_string(a);
      add(std::string(op.reduce_mean ? "mean" : "sum") + " over [" + axes + "]");
      break;
    }
    default:
      break;
  }
  if (op.kind == OpKind::kActivation || op.activation != Activation::kLinear) add(ActivationName(op.activation));
  if (!op.detail.empty()) add(op.detail);
  return args.empty() ? s : s + " (" + args + ")";
}

}  // namespace ringtrain::ops
