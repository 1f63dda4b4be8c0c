// Device-neutral ops: what one node of a model computes, with every argument a device's
// kernel needs, and nothing about where or how it runs. A layer (nn/layer.h) keeps its
// Keras arguments, shapes and weights and emits one Op; a backend (backends/backend.h)
// answers whether it runs an Op and makes the kernel that does.
//
// Layouts are the model's: NHWC activations; weights in the model's flat parameter
// buffer, each in its Keras layout (HWIO conv kernels, [in, units] dense kernels).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/window.h"
#include "ops/activation.h"

namespace ringtrain::ops {

// One entry per kind of computation. Keep kAllKinds (op.cc) and the names in step.
enum class OpKind {
  kView,              // Reshape, Flatten: the same bytes under another shape
  kDense,             // y = act(x W + b); W [in, units]
  kConv2D,            // y = act(conv(x, W) + b); W HWIO [kh, kw, c / groups, filters]; groups, dilation
  kDepthwiseConv2D,   // one filter set per input channel; W [kh, kw, c, multiplier]
  kSeparableConv2D,   // depthwise, then a 1x1 Conv2D; W [kh, kw, c, multiplier] and [1, 1, c * multiplier, filters]
  kMaxPool2D,         // ties go to the first cell in row-major window order; padding cells never win
  kAvgPool2D,         // padding cells are not counted
  kGlobalMaxPool2D,   // over height and width, per channel
  kGlobalAvgPool2D,
  kBatchNorm,         // per channel over batch, height and width; training, inference (frozen), synchronized
  kLayerNorm,         // per example over the trailing axes
  kActivation,        // an activation function on its own (Activation, ReLU, LeakyReLU, Softmax layers)
  kAdd,               // element-wise over any number of inputs of one shape
  kMultiply,
  kConcatenate,       // along `axis` (per-example axis)
  kZeroPadding2D,
  kRescaling,         // y = x * scale + offset, per channel
  kDropout,           // the CPU's counter-based draws from (seed, step, replica)
  kRandomFlip,        // augmentation layers: the same counter-based draws
  kRandomCrop,
  kRandomRotation,
  kRandomTranslation,
  kCropping2D,        // [H, W, C] -> the box at (window.pad_top, pad_left) of the output's height and width
  kUpSampling2D,      // [H, W, C] -> [H * size_h, W * size_w, C]; interpolation nearest or bilinear
  kConv2DTranspose,   // Keras Conv2DTranspose: the input gradient of the convolution `window` describes
  kPermute,           // the per-example axes reordered: output axis i is input axis permutation[i]
  kResizing,          // the box (window.pad_top, pad_left, crop_height x crop_width) resized to the output
  kCenterCrop,        // as kResizing: a centred crop, or (input smaller) the aspect crop resized bilinearly
  kSubtract,          // y = x0 - x1 (two inputs of one shape)
  kAverage,           // y = (x0 + x1 + ...) / num_inputs, summed left to right
  kMaximum,           // element-wise over any number of inputs; the gradient goes to the first input holding
  kMinimum,           //   the extreme (TensorFlow's x >= y / x <= y rule, applied left to right)
  kNormalization,     // Keras' Normalization: (x - mean) / max(sqrt(variance), 1e-7), or its inverse
  kSpatialDropout2D,  // Dropout of whole channels per example (Dropout's draws, one per example and channel)
  kGaussianNoise,     // training: y = x + stddev * N(0, 1), normal draws from the counter-based stream
  kRandomBrightness,  // training: y = clip(x + U(factor) * (hi - lo), lo, hi), one draw per example
  kRandomContrast,    // training: y = clip((x - mean) * U(factor) + mean, lo, hi), mean per example and channel
  kRandomZoom,        // training: the projective sampling of RandomTranslation through Keras' zoom matrix
  kReduce,            // the sum or mean over some per-example axes (tf.math.reduce_sum / reduce_mean), summed in
                      //   row-major order of the reduced axes; a mean divides the sum by their count
};

struct Op {
  OpKind kind = OpKind::kView;
  Window window;        // Conv2D, DepthwiseConv2D, SeparableConv2D, pooling
  int units = 0;        // Dense units; Conv2D and SeparableConv2D filters
  int groups = 1;       // Conv2D
  int depth_multiplier = 1;  // DepthwiseConv2D, SeparableConv2D
  // The output activation the op applies (Dense, convolutions, BatchNorm or Add with a
  // fused relu), or the function of an Activation op.
  Activation activation = Activation::kLinear;
  bool use_bias = false;     // Dense, convolutions
  int num_inputs = 1;        // Add, Multiply, Concatenate: how many inputs they merge
  int axis = -1;             // Concatenate: the per-example axis
  bool training_mode = true; // BatchNorm: false runs on the moving statistics (a frozen layer)
  bool synchronized = false; // BatchNorm: statistics summed over the replicas
  // Activation op, the ReLU and LeakyReLU layers' arguments (generic false: the plain
  // function of `activation`).
  struct Relu {
    bool generic = false;
    bool has_max = false;
    float max_value = 0.0f, negative_slope = 0.0f, threshold = 0.0f;
  } relu;
  float epsilon = 0.0f;          // BatchNorm, LayerNorm
  float momentum = 0.0f;         // BatchNorm: the moving statistics' momentum
  bool center = true, scale = true;  // BatchNorm, LayerNorm: beta, gamma
  int64_t row_size = 0;          // LayerNorm: elements per normalized row (its trailing axes)
  // Dropout and the augmentation layers: what their counter-based random draws need
  // besides the step (backends::StepContext), and the layers' own arguments.
  float rate = 0.0f;             // Dropout
  uint64_t name_hash = 0;        // the layer's name hashed (nn/layers/norm_fields.h HashName)
  uint64_t layer_seed = 0;       // the layer's own "seed" argument, mixed (0: none)
  uint64_t key = 0;              // RandomFlip, RandomCrop, RandomRotation, RandomTranslation: the layer's stream key
  float dropout_scale = 1.0f;    // Dropout: a kept element's factor, 1 / (1 - rate) as the layer rounds it
  bool flip_horizontal = false;  // RandomFlip: the directions its mode names
  bool flip_vertical = false;
  int crop_height = 0, crop_width = 0;  // RandomCrop: the target size (the output's height and width)
  // RandomTranslation: the ranges [lo, hi] of the shifts, fractions of the image's height
  // and width; RandomRotation: of the angle, fractions of 2*pi. As the layer holds them.
  double height_factor_lo = 0, height_factor_hi = 0;
  double width_factor_lo = 0, width_factor_hi = 0;
  double angle_factor_lo = 0, angle_factor_hi = 0;
  // RandomTranslation, RandomRotation: how points outside the image are mapped, and how
  // the input is sampled (backends/cpu/image_transform.h); fill_value: what the constant
  // mode's (and any outside tap's) pixels read.
  enum class FillMode { kReflect, kWrap, kConstant, kNearest };
  enum class Interpolation { kBilinear, kNearest };
  FillMode fill_mode = FillMode::kReflect;
  Interpolation interpolation = Interpolation::kBilinear;
  float fill_value = 0.0f;
  std::vector<float> scale_values, offset_values;  // Rescaling: per channel
  // Anything else a kernel needs that the fields above do not hold, as readable text
  // (an Activation op's relu variant: "max_value=6").
  std::string detail;
  // Permute: output axis i (0-based, per example) is input axis permutation[i].
  std::vector<int> permutation;
  // Normalization: element j of an example reads mean and variance element
  // norm_index[j], or j % norm_size when norm_index is empty (the kept axes are the
  // trailing ones, or none); the values from the op (mean_values, variance_values, each
  // norm_size long) or, when those are empty, from the layer's weights "mean" and
  // "variance" (params 0 and 1). invert: y = mean + x * max(sqrt(variance), epsilon).
  bool invert = false;
  int64_t norm_size = 1;
  std::vector<int32_t> norm_index;
  std::vector<float> mean_values, variance_values;
  float stddev = 0.0f;  // GaussianNoise
  // RandomBrightness: the range of U (Keras' factor, lower and upper); RandomContrast: the
  // range of the contrast factor, [1 - lower, 1 + upper]. Both clip to [value_lo, value_hi].
  double adjust_lo = 0, adjust_hi = 0;
  float value_lo = 0.0f, value_hi = 255.0f;
  // RandomZoom: the zoom ranges are 1 + height_factor_lo/hi and 1 + width_factor_lo/hi;
  // without Keras' width_factor the width's zoom is the height's (zoom_same_aspect).
  bool zoom_same_aspect = false;
  // Reduce: the per-example axes (0-based, ascending) summed over, and whether it is their
  // mean. The output keeps the other axes (or holds one value when none is kept).
  std::vector<int> reduce_axes;
  bool reduce_mean = false;
};

// "Conv2D", "BatchNorm": the op's name in messages and docs/reference/devices.md.
const char* OpKindName(OpKind kind);
// Every kind, in declaration order.
const std::vector<OpKind>& AllOpKinds();
// One line for messages: "Conv2D (3x3, stride 1, dilation 2, groups 4, relu)".
std::string Describe(const Op& op);
// Keras' name of an activation: "relu", "gelu".
const char* ActivationName(Activation act);

}  // namespace ringtrain::ops
