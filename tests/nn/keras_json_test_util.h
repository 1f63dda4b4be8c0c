// What the Keras model JSON tests share: reading a fixture of tests/nn/keras_json/, and
// translating a model that must translate (Translate) or must be refused (Refusal: its
// one-line INVALID_ARGUMENT message, checked to start with "model.keras_json: ").
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/keras/keras_json.h"
#include "testing/source_dir.h"

namespace ringtrain::nn::keras_json_testing {

inline nlohmann::json Fixture(const std::string& name) {
  const std::string text = ringtrain::testing::ReadSourceFile("tests/nn/keras_json/" + name);
  EXPECT_FALSE(text.empty()) << name;
  return nlohmann::json::parse(text);
}

inline nlohmann::json Translate(const nlohmann::json& keras) {
  auto compact = KerasJsonToCompact(keras);
  EXPECT_TRUE(compact.ok()) << compact.status().ToString();
  return compact.ok() ? *compact : nlohmann::json();
}

// The translation's error message; fails the test when it succeeded.
inline std::string Refusal(const nlohmann::json& keras) {
  auto compact = KerasJsonToCompact(keras);
  EXPECT_FALSE(compact.ok()) << compact->dump();
  if (compact.ok()) return "";
  EXPECT_EQ(compact.status().code(), Code::kInvalidArgument);
  const std::string m = compact.status().message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_EQ(m.rfind("model.keras_json: ", 0), 0u) << m;
  return m;
}

}  // namespace ringtrain::nn::keras_json_testing
