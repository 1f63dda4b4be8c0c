// A backup's encoding: exact round trips, determinism, and refusal of corrupted
// backups and of other jobs' backups.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "backup/backup.h"
#include "backup_test_util.h"
#include "checkpoint/safetensors.h"

namespace ringtrain::backup {
namespace {

using json = nlohmann::json;
using testing::ExpectSameState;
using testing::MakeIdentity;
using testing::MakeState;

EncodedBackup Encode(const BackupIdentity& id, const TrainState& s) {
  auto e = EncodeBackup(id, s);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : EncodedBackup{};
}

// Byte offset of the safetensors data section.
size_t DataStart(const std::string& weights) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(weights[i]);
  return 8 + n;
}

TEST(BackupFormatTest, RoundTripIsBitExact) {
  const BackupIdentity id = MakeIdentity();
  const TrainState s = MakeState(id, 23);
  auto decoded = DecodeBackup(id, Encode(id, s));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ExpectSameState(s, *decoded);
  uint32_t bits;
  std::memcpy(&bits, &decoded->params[3], sizeof(bits));
  EXPECT_EQ(bits, 0x7f7fffffu);
  EXPECT_TRUE(std::signbit(decoded->params[1]));
  EXPECT_EQ(decoded->params[2], std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(decoded->history.size(), 2u);
}

TEST(BackupFormatTest, RoundTripWithoutOptimizerSlotsOrHistory) {
  const BackupIdentity id = MakeIdentity();
  TrainState s = MakeState(id, 0);
  s.optimizer_slots.clear();
  s.history = json::array();
  auto decoded = DecodeBackup(id, Encode(id, s));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ExpectSameState(s, *decoded);
  EXPECT_TRUE(decoded->optimizer_slots.empty());
}

TEST(BackupFormatTest, MetricsRoundTripExactly) {
  const BackupIdentity id = MakeIdentity();
  std::mt19937_64 rng(7);
  std::vector<double> values = {0.1,  1.0 / 3.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                                -0.0, 1e23,      9007199254740993.0};
  for (int i = 0; i < 200; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    if (std::isfinite(d)) values.push_back(d);
  }
  // Counts are integers, exact beyond 2^53 (where doubles skip odd numbers).
  const std::vector<int64_t> counts = {0, 1, (int64_t{1} << 24) + 1, (int64_t{1} << 53) + 1,
                                       std::numeric_limits<int64_t>::max()};
  for (size_t i = 0; i < values.size(); ++i) {
    TrainState s = MakeState(id, 5);
    s.epoch_loss_sum = values[i];
    s.epoch_correct = counts[i % counts.size()];
    s.epoch_examples = counts[(i + 1) % counts.size()];
    auto decoded = DecodeBackup(id, Encode(id, s));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    ExpectSameState(s, *decoded);
  }
}

// Builds before typed collectives wrote the counts as floats ("correct": 12.0): their
// backups still load; a count that is not a whole non-negative number is DATA_LOSS.
TEST(BackupFormatTest, CountsWrittenAsFloatsByOlderBuildsStillLoad) {
  const BackupIdentity id = MakeIdentity();
  const EncodedBackup good = Encode(id, MakeState(id, 23));
  json old = json::parse(good.metadata);
  old["metrics"]["correct"] = 16777217.0;
  old["metrics"]["examples"] = 33554432.0;
  ASSERT_TRUE(old["metrics"]["correct"].is_number_float());
  auto decoded = DecodeBackup(id, {good.weights, old.dump(2)});
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->epoch_correct, 16777217);
  EXPECT_EQ(decoded->epoch_examples, 33554432);

  for (const json& bad : {json(1.5), json(-1), json(-2.0), json(1e300), json("nan"), json("12")}) {
    json m = json::parse(good.metadata);
    m["metrics"]["examples"] = bad;
    auto r = DecodeBackup(id, {good.weights, m.dump(2)});
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_EQ(r.status().code(), Code::kDataLoss) << r.status().ToString();
    EXPECT_NE(r.status().message().find("metrics.examples"), std::string::npos) << r.status().message();
  }
}

TEST(BackupFormatTest, NonFiniteMetricsRoundTrip) {
  const BackupIdentity id = MakeIdentity();
  TrainState s = MakeState(id, 5);
  s.epoch_loss_sum = std::numeric_limits<double>::quiet_NaN();
  auto decoded = DecodeBackup(id, Encode(id, s));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(std::isnan(decoded->epoch_loss_sum));
  for (double loss : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    s.epoch_loss_sum = loss;
    decoded = DecodeBackup(id, Encode(id, s));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->epoch_loss_sum, loss);
  }
}

TEST(BackupFormatTest, EncodingIsDeterministic) {
  const BackupIdentity id = MakeIdentity();
  const EncodedBackup a = Encode(id, MakeState(id, 42));
  const EncodedBackup b = Encode(id, MakeState(id, 42));
  EXPECT_EQ(a.weights, b.weights);
  EXPECT_EQ(a.metadata, b.metadata);
  // Re-encoding what was decoded gives the same bytes again.
  auto decoded = DecodeBackup(id, a);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const EncodedBackup c = Encode(id, *decoded);
  EXPECT_EQ(a.weights, c.weights);
  EXPECT_EQ(a.metadata, c.metadata);
  EXPECT_NE(a.weights, Encode(id, MakeState(id, 43)).weights);
}

TEST(BackupFormatTest, MetadataHoldsTheDocumentedFields) {
  const BackupIdentity id = MakeIdentity();
  const EncodedBackup e = Encode(id, MakeState(id, 23));
  const json m = json::parse(e.metadata);
  EXPECT_EQ(m.dump(2) + "\n", e.metadata) << "keys sorted, one canonical text";
  EXPECT_EQ(m["format"], "ringtrain-backup");
  EXPECT_EQ(m["version"], 1);
  EXPECT_EQ(m["job_fingerprint"], "fp-1234");
  EXPECT_EQ(m["num_workers"], 2);
  EXPECT_EQ(m["steps_per_epoch"], 10);
  EXPECT_TRUE(m["global_step"].is_number_integer());
  EXPECT_EQ(m["global_step"], 23);
  EXPECT_EQ(m["epoch"], 2);
  EXPECT_EQ(m["step_in_epoch"], 3);
  EXPECT_EQ(m["optimizer"]["name"], "adam");
  EXPECT_EQ(m["optimizer"]["iterations"], 23);
  EXPECT_EQ(m["optimizer"]["slots"], json({"m", "v"}));
  EXPECT_TRUE(m["metrics"]["loss_sum"].is_number_float());
  EXPECT_TRUE(m["metrics"]["correct"].is_number_integer());
  EXPECT_TRUE(m["metrics"]["examples"].is_number_integer());
  EXPECT_EQ(m["weights_file"], "ckpt-000000000023.safetensors");
  EXPECT_EQ(m["weights_bytes"], e.weights.size());
  EXPECT_EQ(m["checksums"].size(), 5u);
  EXPECT_TRUE(m["checksums"].contains("params/dense/kernel"));
  EXPECT_TRUE(m["checksums"].contains("optimizer/v"));
  EXPECT_EQ(m["checksums"]["optimizer/v"].get<std::string>().size(), 8u);

  std::map<std::string, checkpoint::Tensor> tensors;
  ASSERT_TRUE(checkpoint::DecodeSafetensors(e.weights, &tensors, nullptr).ok());
  EXPECT_EQ(tensors["params/dense/kernel"].shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(tensors["optimizer/m"].shape, (std::vector<int64_t>{24}));
}

TEST(BackupFormatTest, AnotherJobsBackupIsRefusedNamingTheField) {
  const BackupIdentity id = MakeIdentity();
  const EncodedBackup e = Encode(id, MakeState(id, 23));
  struct Case {
    const char* field;
    std::function<void(BackupIdentity*)> change;
    std::vector<std::string> mentions;
  };
  const std::vector<Case> cases = {
      {"job_fingerprint", [](BackupIdentity* i) { i->job_fingerprint = "fp-9999"; }, {"fp-1234", "fp-9999"}},
      {"num_workers", [](BackupIdentity* i) { i->num_workers = 3; }, {"2", "3"}},
      {"steps_per_epoch", [](BackupIdentity* i) { i->steps_per_epoch = 12; }, {"10", "12"}},
      {"optimizer_name", [](BackupIdentity* i) { i->optimizer_name = "sgd"; }, {"adam", "sgd"}},
      {"parameter", [](BackupIdentity* i) { i->params[2].shape = {2, 4}; }, {"out/kernel", "[4,2]", "[2,4]"}},
      {"parameter", [](BackupIdentity* i) { i->params[0].name = "conv/kernel"; }, {"dense/kernel", "conv/kernel"}},
      {"parameters", [](BackupIdentity* i) { i->params.pop_back(); }, {"3", "2"}},
  };
  for (const Case& c : cases) {
    BackupIdentity other = id;
    c.change(&other);
    auto r = DecodeBackup(other, e);
    ASSERT_FALSE(r.ok()) << c.field;
    EXPECT_EQ(r.status().code(), Code::kFailedPrecondition) << r.status().ToString();
    const std::string msg = r.status().message();
    EXPECT_NE(msg.find(c.field), std::string::npos) << msg;
    for (const std::string& m : c.mentions) EXPECT_NE(msg.find(m), std::string::npos) << m << " in " << msg;
    EXPECT_NE(msg.find("point backup_and_restore.backup_dir elsewhere"), std::string::npos) << msg;
  }
}

TEST(BackupFormatTest, AnotherJobsBackupIsRefusedEvenWhenItsWeightsAreTruncated) {
  const BackupIdentity id = MakeIdentity();
  EncodedBackup e = Encode(id, MakeState(id, 23));
  e.weights.resize(e.weights.size() / 2);
  BackupIdentity other = id;
  other.num_workers = 4;
  EXPECT_EQ(DecodeBackup(other, e).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(DecodeBackup(id, e).status().code(), Code::kDataLoss);
}

TEST(BackupFormatTest, FlippedByteFailsTheTensorsChecksum) {
  const BackupIdentity id = MakeIdentity();
  const EncodedBackup good = Encode(id, MakeState(id, 23));
  // Tensors lie in name order: optimizer/m first, params/out/kernel last.
  const std::vector<std::pair<size_t, std::string>> flips = {{DataStart(good.weights), "optimizer/m"},
                                                              {good.weights.size() - 1, "params/out/kernel"}};
  for (const auto& [offset, tensor] : flips) {
    EncodedBackup bad = good;
    bad.weights[offset] ^= 0x01;
    auto r = DecodeBackup(id, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kDataLoss) << r.status().ToString();
    EXPECT_NE(r.status().message().find("'" + tensor + "'"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("checksum"), std::string::npos) << r.status().message();
  }
}

TEST(BackupFormatTest, TruncatedWeightsAreDataLoss) {
  const BackupIdentity id = MakeIdentity();
  for (size_t keep : {size_t{0}, size_t{7}, size_t{100}}) {
    EncodedBackup e = Encode(id, MakeState(id, 23));
    e.weights.resize(std::min(keep, e.weights.size()));
    auto r = DecodeBackup(id, e);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kDataLoss);
    EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
  }
  EncodedBackup e = Encode(id, MakeState(id, 23));
  e.weights.erase(e.weights.size() - 4);  // keeps the header, loses the last float
  EXPECT_EQ(DecodeBackup(id, e).status().code(), Code::kDataLoss);
}

TEST(BackupFormatTest, WeightsOfAnotherStepAreDataLoss) {
  const BackupIdentity id = MakeIdentity();
  EncodedBackup e = Encode(id, MakeState(id, 23));
  e.weights = Encode(id, MakeState(id, 24)).weights;  // same size, other step
  auto r = DecodeBackup(id, e);
  EXPECT_EQ(r.status().code(), Code::kDataLoss) << r.status().ToString();
}

TEST(BackupFormatTest, GarbageMetadataIsDataLoss) {
  const BackupIdentity id = MakeIdentity();
  const EncodedBackup good = Encode(id, MakeState(id, 23));
  json m = json::parse(good.metadata);
  std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not a JSON object"},
      {"{\"format\": \"ringtrain-backup\", \"version\": 1, \"job_fing", "not a JSON object"},
      {"[1, 2, 3]", "not a JSON object"},
      {std::string("\x00\x13\xff garbage", 12), "not a JSON object"},
  };
  json other_format = m;
  other_format["format"] = "keras";
  cases.emplace_back(other_format.dump(), "format");
  json other_version = m;
  other_version["version"] = 2;
  cases.emplace_back(other_version.dump(), "version 2");
  json missing = m;
  missing["optimizer"].erase("iterations");
  cases.emplace_back(missing.dump(), "optimizer.iterations");
  json wrong_type = m;
  wrong_type["global_step"] = "23";
  cases.emplace_back(wrong_type.dump(), "global_step");
  json bad_checksum = m;
  bad_checksum["checksums"]["params/dense/bias"] = "00000000";
  cases.emplace_back(bad_checksum.dump(), "params/dense/bias");
  json bad_size = m;
  bad_size["weights_bytes"] = good.weights.size() + 1;
  cases.emplace_back(bad_size.dump(), "bytes");
  json missing_slot = m;
  missing_slot["optimizer"]["slots"] = json({"m"});
  missing_slot["checksums"].erase("optimizer/v");
  cases.emplace_back(missing_slot.dump(), "optimizer/v");
  for (const auto& [text, mention] : cases) {
    auto r = DecodeBackup(id, {good.weights, text});
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), Code::kDataLoss) << r.status().ToString();
    EXPECT_NE(r.status().message().find(mention), std::string::npos) << mention << " in " << r.status().message();
  }
}

TEST(BackupFormatTest, EncodeRefusesAStateThatDoesNotFitTheModel) {
  const BackupIdentity id = MakeIdentity();
  TrainState s = MakeState(id, 3);
  s.params.pop_back();
  EXPECT_EQ(EncodeBackup(id, s).status().code(), Code::kInvalidArgument);
  s = MakeState(id, 3);
  s.optimizer_slots[1].second.push_back(1.0f);
  EXPECT_EQ(EncodeBackup(id, s).status().code(), Code::kInvalidArgument);
  s = MakeState(id, 3);
  s.optimizer_slots[1].first = "m";
  EXPECT_EQ(EncodeBackup(id, s).status().code(), Code::kInvalidArgument);
  s = MakeState(id, 3);
  s.global_step = -1;
  EXPECT_EQ(EncodeBackup(id, s).status().code(), Code::kInvalidArgument);
  BackupIdentity gap = id;
  gap.params[1].offset = 13;
  EXPECT_EQ(EncodeBackup(gap, MakeState(id, 3)).status().code(), Code::kInvalidArgument);
}

TEST(BackupFormatTest, StemHasTwelveDigits) {
  EXPECT_EQ(BackupStem(0), "ckpt-000000000000");
  EXPECT_EQ(BackupStem(1234567), "ckpt-000001234567");
}

// Weights or optimizer state holding NaN or infinity: the run had diverged. Such a
// backup is corrupted for resuming (DATA_LOSS, so LoadNewestBackup skips it with a
// warning), naming the tensor and the first bad index.
TEST(BackupFormatTest, NonFiniteWeightsOrStateAreRefused) {
  const BackupIdentity id = MakeIdentity();
  for (int where = 0; where < 3; ++where) {
    TrainState s = MakeState(id, 23);
    const float bad = where == 1 ? std::numeric_limits<float>::infinity() : std::nanf("");
    if (where < 2) s.params[13] = bad;
    else s.optimizer_slots[1].second[5] = bad;
    auto decoded = DecodeBackup(id, Encode(id, s));
    ASSERT_FALSE(decoded.ok()) << where;
    EXPECT_EQ(decoded.status().code(), Code::kDataLoss);
    const std::string want = where < 2 ? "tensor 'params/dense/bias' holds " + std::string(where == 1 ? "infinity" : "NaN") +
                                             " at index 1"
                                       : "tensor 'optimizer/v' holds NaN at index 5";
    EXPECT_NE(decoded.status().message().find(want), std::string::npos) << decoded.status().message();
  }
}

// Metadata whose numbers would overflow the step arithmetic is corrupt, not a crash.
TEST(BackupFormatTest, OverflowingStepFieldsAreDataLoss) {
  const BackupIdentity id = MakeIdentity();
  EncodedBackup e = Encode(id, MakeState(id, 23));
  auto meta = nlohmann::json::parse(e.metadata);
  meta["epoch"] = int64_t{4611686018427387904};
  e.metadata = meta.dump();
  auto decoded = DecodeBackup(id, e);
  EXPECT_EQ(decoded.status().code(), Code::kDataLoss);
  meta["epoch"] = 2;
  meta["step_in_epoch"] = -7;  // 2 * 10 - 7 != 23 anyway; and never negative
  e.metadata = meta.dump();
  EXPECT_EQ(DecodeBackup(id, e).status().code(), Code::kDataLoss);
  e.metadata = std::string(300, '[');
  EXPECT_EQ(DecodeBackup(id, e).status().code(), Code::kDataLoss);
}

}  // namespace
}  // namespace ringtrain::backup
