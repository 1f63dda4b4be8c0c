#include "nn/layers/random_flip.h"

#include "nn/layers/augment_common.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> RandomFlip::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                    const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "mode", "seed"}, ctx));
  RT_RETURN_IF_ERROR(augment::CheckImageInput(in, "RandomFlip", ctx));
  bool horizontal = true, vertical = true;
  if (auto it = j.find("mode"); it != j.end()) {
    if (*it == "horizontal") {
      vertical = false;
    } else if (*it == "vertical") {
      horizontal = false;
    } else if (*it != "horizontal_and_vertical") {
      return InvalidArgumentError(ctx + ": 'mode' must be \"horizontal_and_vertical\" (the default), \"horizontal\" "
                                  "or \"vertical\", got " + BriefDump(*it));
    }
  }
  RT_ASSIGN_OR_RETURN(uint64_t key, augment::LayerKey(j, name, ctx));
  return std::unique_ptr<Layer>(new RandomFlip(std::move(name), in, horizontal, vertical, key));
}

RandomFlip::RandomFlip(std::string name, const Shape& in, bool horizontal, bool vertical, uint64_t key)
    : Layer(std::move(name), in, in), horizontal_(horizontal), vertical_(vertical), key_(key) {}

ops::Op RandomFlip::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kRandomFlip;
  op.key = key_;
  op.flip_horizontal = horizontal_;
  op.flip_vertical = vertical_;
  op.detail = std::string(horizontal_ ? "horizontal" : "") + (horizontal_ && vertical_ ? "_and_" : "") +
              (vertical_ ? "vertical" : "");
  return op;
}

}  // namespace ringtrain::nn
