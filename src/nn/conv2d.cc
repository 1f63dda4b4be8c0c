#include "nn/conv2d.h"

#include <cblas.h>

#include "nn/activation.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> Conv2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "name", "filters", "kernel_size", "strides", "padding", "activation", "use_bias"}, ctx));
  if (in.size() != 3) {
    std::string hint;
    if (in.size() == 2) {
      hint = "; add {\"type\": \"reshape\", \"target_shape\": [" + std::to_string(in[0]) + ", " +
             std::to_string(in[1]) + ", 1]} before it";
    }
    return InvalidArgumentError(ctx + ": conv2d needs a 3-D input per example (height, width, channels), got " +
                                ShapeToString(in) + hint);
  }
  RT_ASSIGN_OR_RETURN(int filters, GetPositiveInt(j, "filters", 0, ctx));
  RT_ASSIGN_OR_RETURN(auto kernel, GetIntPair(j, "kernel_size", {0, 0}, ctx));
  RT_ASSIGN_OR_RETURN(auto strides, GetIntPair(j, "strides", {1, 1}, ctx));
  RT_ASSIGN_OR_RETURN(Padding padding, GetPadding(j, ctx));
  RT_ASSIGN_OR_RETURN(Activation act, GetActivation(j, ctx));
  RT_ASSIGN_OR_RETURN(bool use_bias, GetBool(j, "use_bias", true, ctx));
  Window2D g;
  g.channels = in[2];
  RT_ASSIGN_OR_RETURN(g.h, MakeWindow(in[0], kernel.first, strides.first, padding, "kernel", "height", ctx));
  RT_ASSIGN_OR_RETURN(g.w, MakeWindow(in[1], kernel.second, strides.second, padding, "kernel", "width", ctx));
  return std::unique_ptr<Layer>(new Conv2D(std::move(name), in, g, filters, act, use_bias));
}

Conv2D::Conv2D(std::string name, const Shape& in, const Window2D& g, int filters, Activation act, bool use_bias)
    : Layer(std::move(name), in, Shape{g.h.out, g.w.out, filters}),
      g_(g),
      filters_(filters),
      act_(act),
      use_bias_(use_bias),
      direct_(g.h.k == 1 && g.w.k == 1 && g.h.stride == 1 && g.w.stride == 1) {}

std::vector<ParamSpec> Conv2D::ParamSpecs() const {
  const int64_t area = static_cast<int64_t>(g_.h.k) * g_.w.k;
  std::vector<ParamSpec> specs;
  specs.push_back({"kernel", {g_.h.k, g_.w.k, g_.channels, filters_}, ParamSpec::Init::kGlorotUniform,
                   area * g_.channels, area * filters_});
  if (use_bias_) specs.push_back({"bias", {filters_}, ParamSpec::Init::kZeros, 0, 0});
  return specs;
}

void Conv2D::BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) {
  kernel_ = params[0];
  dkernel_ = grads[0];
  if (use_bias_) {
    bias_ = params[1];
    dbias_ = grads[1];
  }
}

const float* Conv2D::Forward(const float* in, int batch, bool training) {
  const int M = batch * g_.out_pixels(), K = g_.col_width(), F = filters_;
  const float* cols = in;
  if (!direct_) {
    float* c = EnsureSize(cols_, static_cast<size_t>(M) * K);
    Im2Col(g_, in, batch, c);
    cols = c;
  }
  float* out = EnsureSize(out_, static_cast<size_t>(M) * F);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, F, K, 1.0f, cols, K, kernel_, F, 0.0f, out, F);
  BiasActivation(out, M, F, use_bias_ ? bias_ : nullptr, act_);
  if (training) {
    cols_in_ = cols;
    batch_ = batch;
  }
  return out;
}

const float* Conv2D::Backward(const float* dout, bool need_din) {
  const int M = batch_ * g_.out_pixels(), K = g_.col_width(), F = filters_;
  const size_t mf = static_cast<size_t>(M) * F;
  float* scratch = act_ == Activation::kLinear ? nullptr : EnsureSize(dpre_, mf);
  const float* d = ActivationBiasBackward(dout, out_.data(), M, F, act_, scratch, use_bias_ ? dbias_ : nullptr);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, F, M, 1.0f, cols_in_, K, d, F, 0.0f, dkernel_, F);
  if (!need_din) return nullptr;
  const size_t in_floats = static_cast<size_t>(batch_) * input_size();
  float* din = EnsureSize(din_, in_floats);
  float* dcols = direct_ ? din : EnsureSize(dcols_, static_cast<size_t>(M) * K);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, F, 1.0f, d, F, kernel_, F, 0.0f, dcols, K);
  if (!direct_) Col2Im(g_, dcols, batch_, din);
  return din;
}

}  // namespace ringtrain::nn
