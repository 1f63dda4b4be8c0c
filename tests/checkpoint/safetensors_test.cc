// The safetensors encoding: exact bytes, round trips, and corrupt files.
#include "checkpoint/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ringtrain::checkpoint {
namespace {

std::string LittleEndian64(uint64_t n) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return s;
}

// A file with the given header text (padded to 8 like the encoder) and data bytes.
std::string MakeFile(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return LittleEndian64(header.size()) + header + data;
}

std::string FloatBytes(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}

TEST(SafetensorsTest, ExactBytesForATinyCase) {
  const float a[] = {1.0f, 2.0f};
  const float b[] = {-0.5f};
  // Given out of order: the file lays tensors out by name.
  std::string bytes = EncodeSafetensors({{"b", {1, 1}, b}, {"a", {2}, a}}, {{"step", "3"}});

  const std::string header =
      R"({"__metadata__":{"step":"3"},"a":{"data_offsets":[0,8],"dtype":"F32","shape":[2]},)"
      R"("b":{"data_offsets":[8,12],"dtype":"F32","shape":[1,1]}})";
  ASSERT_EQ(header.size(), 138u);  // padded with 6 spaces to 144 = 0x90
  std::string expected("\x90\0\0\0\0\0\0\0", 8);
  expected += header + "      ";
  expected += std::string("\x00\x00\x80\x3f", 4);  // 1.0f little-endian
  expected += std::string("\x00\x00\x00\x40", 4);  // 2.0f
  expected += std::string("\x00\x00\x00\xbf", 4);  // -0.5f
  EXPECT_EQ(bytes, expected);
}

TEST(SafetensorsTest, NoMetadataKeyWhenMetadataIsEmpty) {
  const float a[] = {3.0f};
  std::string bytes = EncodeSafetensors({{"w", {1}, a}}, {});
  const std::string header = R"({"w":{"data_offsets":[0,4],"dtype":"F32","shape":[1]}})";
  EXPECT_EQ(bytes, MakeFile(header, FloatBytes({3.0f})));
  EXPECT_EQ(bytes.find("__metadata__"), std::string::npos);
  EXPECT_EQ((bytes.size() - 8 - 4) % 8, 0u);
}

TEST(SafetensorsTest, RoundTrip) {
  std::vector<float> kernel(3 * 4), bias(4);
  for (size_t i = 0; i < kernel.size(); ++i) kernel[i] = 0.1f * i - 0.7f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = -1e-8f * i;
  const float scalar = 42.f;
  std::vector<TensorView> views = {{"dense/kernel", {3, 4}, kernel.data()},
                                   {"dense/bias", {4}, bias.data()},
                                   {"step", {}, &scalar},
                                   {"empty", {0, 5}, nullptr}};
  std::map<std::string, std::string> meta = {{"format", "pt"}, {"epoch", "2"}};
  std::string bytes = EncodeSafetensors(views, meta);

  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> got_meta;
  Status s = DecodeSafetensors(bytes, &tensors, &got_meta);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(got_meta, meta);
  ASSERT_EQ(tensors.size(), 4u);
  EXPECT_EQ(tensors["dense/kernel"].shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(tensors["dense/kernel"].data, kernel);
  EXPECT_EQ(tensors["dense/bias"].data, bias);
  EXPECT_EQ(tensors["step"].shape, std::vector<int64_t>{});
  EXPECT_EQ(tensors["step"].data, std::vector<float>{42.f});
  EXPECT_EQ(tensors["empty"].shape, (std::vector<int64_t>{0, 5}));
  EXPECT_TRUE(tensors["empty"].data.empty());
  EXPECT_TRUE(DecodeSafetensors(bytes, &tensors, nullptr).ok());  // metadata not wanted
}

TEST(SafetensorsTest, EncodingIsDeterministic) {
  std::vector<float> x = {1, 2, 3}, y = {4};
  std::string a = EncodeSafetensors({{"x", {3}, x.data()}, {"y", {1}, y.data()}}, {{"k", "v"}});
  std::string b = EncodeSafetensors({{"x", {3}, x.data()}, {"y", {1}, y.data()}}, {{"k", "v"}});
  std::string c = EncodeSafetensors({{"y", {1}, y.data()}, {"x", {3}, x.data()}}, {{"k", "v"}});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
}

Status Decode(const std::string& bytes) {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> meta;
  Status s = DecodeSafetensors(bytes, &tensors, &meta);
  if (!s.ok()) {
    EXPECT_TRUE(tensors.empty());
    EXPECT_TRUE(meta.empty());
  }
  return s;
}

void ExpectDataLoss(const std::string& bytes, const std::string& mentions) {
  Status s = Decode(bytes);
  EXPECT_EQ(s.code(), Code::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find(mentions), std::string::npos) << s.message();
}

TEST(SafetensorsTest, CorruptFilesAreDataLoss) {
  const float v[] = {1, 2, 3};
  const std::string good = EncodeSafetensors({{"t", {3}, v}}, {});
  ASSERT_TRUE(Decode(good).ok());

  ExpectDataLoss("", "too short");
  ExpectDataLoss(good.substr(0, 5), "too short");
  ExpectDataLoss(good.substr(0, good.size() - 1), "tensor 't'");  // truncated data
  ExpectDataLoss(good + "xyz", "data section has");               // trailing bytes

  std::string huge = good;
  huge.replace(0, 8, LittleEndian64(uint64_t{1} << 62));
  ExpectDataLoss(huge, "header length");
  std::string past = good;
  past.replace(0, 8, LittleEndian64(good.size()));
  ExpectDataLoss(past, "header length");

  ExpectDataLoss(MakeFile("{not json", ""), "not a JSON object");
  ExpectDataLoss(MakeFile("[1,2]", ""), "not a JSON object");
  // A zero dimension made any other size pass, and a size beyond int64 read back negative.
  ExpectDataLoss(MakeFile(R"({"z":{"dtype":"F32","shape":[0,18446744073709551615],"data_offsets":[0,0]}})", ""),
                 "beyond 2^63 - 1");
  ExpectDataLoss(MakeFile(R"({"z":{"dtype":"F32","shape":[1e400],"data_offsets":[0,0]}})", ""), "out of range");
  const std::string d12 = FloatBytes({1, 2, 3});
  ExpectDataLoss(MakeFile(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", d12), "tensor 't'");
  ExpectDataLoss(MakeFile(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}})", d12), "tensor 't'");
  ExpectDataLoss(MakeFile(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[12,0]}})", d12), "tensor 't'");
  ExpectDataLoss(MakeFile(R"({"t":{"dtype":"F32","shape":[-3],"data_offsets":[0,12]}})", d12), "tensor 't'");
  ExpectDataLoss(MakeFile(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0]}})", d12), "tensor 't'");
  ExpectDataLoss(MakeFile(R"({"t":{"shape":[3],"data_offsets":[0,12]}})", d12), "tensor 't'");
  ExpectDataLoss(MakeFile(R"({"t":{"dtype":"Q7","shape":[3],"data_offsets":[0,12]}})", d12), "Q7");
  ExpectDataLoss(MakeFile(R"({"t":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,12]}})", d12),
                 "tensor 't'");
  // Overlapping and gapped layouts.
  ExpectDataLoss(MakeFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                          d12),
                 "tensor 'b'");
  ExpectDataLoss(MakeFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                          d12),
                 "tensor 'b'");
  ExpectDataLoss(MakeFile(R"({"__metadata__":{"k":1},"t":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})", d12),
                 "__metadata__");
}

TEST(SafetensorsTest, OtherDtypesAreUnimplemented) {
  Status s = Decode(MakeFile(R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", std::string(4, '\0')));
  EXPECT_EQ(s.code(), Code::kUnimplemented) << s.ToString();
  EXPECT_NE(s.message().find("F16"), std::string::npos);
  EXPECT_NE(s.message().find("tensor 'h'"), std::string::npos);
}

TEST(SafetensorsTest, AcceptsHeadersWrittenByOthers) {
  // Python's safetensors orders keys its own way and may pad differently.
  const std::string d = FloatBytes({5, 6});
  std::string header = R"({"b":{"shape":[1],"dtype":"F32","data_offsets":[4,8]},"a":{"data_offsets":[0,4],)"
                       R"("shape":[1],"dtype":"F32"},"__metadata__":{"format":"pt"}})";
  std::string bytes = LittleEndian64(header.size()) + header + d;  // unpadded
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> meta;
  ASSERT_TRUE(DecodeSafetensors(bytes, &tensors, &meta).ok());
  EXPECT_EQ(tensors["a"].data, std::vector<float>{5});
  EXPECT_EQ(tensors["b"].data, std::vector<float>{6});
  EXPECT_EQ(meta.at("format"), "pt");
}

}  // namespace
}  // namespace ringtrain::checkpoint
