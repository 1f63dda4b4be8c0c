// TensorFlow.js (tests/oracle/tfjs_oracle.js under Node.js) as the Keras reference in
// tests: send it a request (a layer, a model, a build or a training run; the schema is
// documented at the top of tfjs_oracle.js), get its answer back as JSON.
//
// Threading: any thread may call; RunTfjs forks (bench::RunProgram), so call it before
// starting threads that hold locks. TfjsAvailable caches its answer for the process.
// Blocking: RunTfjs waits for node, at most `timeout_s` (60 s by default), then kills it.
// Errors: RunTfjs returns UNAVAILABLE when node or the installed tfjs is missing,
// DEADLINE_EXCEEDED on the deadline, INTERNAL with the tail of node's output when the
// oracle fails or answers {"ok": false, "error": ...}.
//
// Where things are: node is $RINGTRAIN_NODE or the first `node` on $PATH; the oracle is
// $RINGTRAIN_TFJS_ORACLE_DIR or the source tree's tests/oracle, installed there by
// tests/oracle/install.sh (deploy/ringtrain.sh test runs it before ctest).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::testing {

// True when node runs, tests/oracle/node_modules holds @tensorflow/tfjs and a smoke
// request answers; otherwise false with the reason (what to run) in *why.
bool TfjsAvailable(std::string* why);

StatusOr<nlohmann::json> RunTfjs(const nlohmann::json& request, double timeout_s = 60);

// {"shape": shape, "values": values}, the oracle's tensor form (floats travel exactly).
nlohmann::json TfjsTensor(const std::vector<int64_t>& shape, const std::vector<float>& values);
// The values of an oracle tensor; fails the current test (empty result) if the shape
// differs from `shape` or a value is not a number.
std::vector<float> TfjsValues(const nlohmann::json& tensor, const std::vector<int64_t>& shape);

// The fidelity tolerance: every |got[i] - want[i]| <= rtol * max(1, |want[i]|) (relative
// for large values, absolute below 1, so values near zero do not demand exact bits). The
// failure names the first and the worst offending index.
::testing::AssertionResult AllClose(const std::vector<float>& got, const std::vector<float>& want,
                                    double rtol = 1e-4);

}  // namespace ringtrain::testing

// Skips the current test, with the reason, when the oracle is not installed.
#define RT_REQUIRE_TFJS()                                                  \
  do {                                                                     \
    std::string rt_tfjs_why_;                                              \
    if (!::ringtrain::testing::TfjsAvailable(&rt_tfjs_why_)) {             \
      GTEST_SKIP() << "TensorFlow.js oracle unavailable: " << rt_tfjs_why_; \
    }                                                                      \
  } while (0)
