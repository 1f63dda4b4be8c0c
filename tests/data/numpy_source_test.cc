// The npz/npy sources: values, shapes and labels as NumPy holds them, the exactness
// check against mnist_idx, and every dtype/shape/label error.
#include <cstring>

#include <gtest/gtest.h>

#include "common/exit_policy.h"
#include "data/dataset.h"
#include "data/source.h"
#include "numpy/numpy_test_util.h"
#include "testing/temp_dir.h"

namespace ringtrain::data {
namespace {

using ::ringtrain::testing::MnistDir;
using ::ringtrain::testing::RunPython;
using ::ringtrain::testing::TempDir;
using json = nlohmann::json;

StatusOr<std::unique_ptr<Source>> OpenEntry(const json& entry, const std::string& base) {
  RT_ASSIGN_OR_RETURN(std::unique_ptr<SourceFormat> f, ParseNumpy(entry, base, "data.train"));
  if (f->num_files() != 1) return InternalError("expected one file");
  return f->Open({0});
}

// The npz of MNIST's test split in IDX order, read through the source, gives exactly the
// floats (bits) and labels the mnist_idx source gives.
TEST(NumpySourceTest, MnistNpzIsBitIdenticalToMnistIdx) {
  const std::string mnist = MnistDir();
  if (mnist.empty()) GTEST_SKIP() << "MNIST not found beside the source tree";
  TempDir dir;
  ASSERT_TRUE(RunPython(dir.path(), "m = '" + mnist + R"('
with gzip.open(m + '/t10k-images-idx3-ubyte.gz') as f: x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
with gzip.open(m + '/t10k-labels-idx1-ubyte.gz') as f: y = np.frombuffer(f.read(), np.uint8, offset=8)
np.savez('mnist.npz', x_test=x, y_test=y)
np.savez_compressed('mnistc.npz', x_test=x, y_test=y)
np.save('x.npy', x); np.save('y.npy', y)
)"));
  const json idx = {{"format", "mnist_idx"},
                    {"images", mnist + "/t10k-images-idx3-ubyte.gz"},
                    {"labels", mnist + "/t10k-labels-idx1-ubyte.gz"}};
  StatusOr<ShardResult> want = LoadShard(idx, "", ShardPolicy::kOff, 0, 1);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  const Dataset& d = want->data;
  for (const json& entry : {json{{"format", "npz"}, {"path", "mnist.npz"}, {"x", "x_test"}, {"y", "y_test"}},
                            json{{"format", "npz"}, {"path", "mnistc.npz"}, {"x", "x_test"}, {"y", "y_test"}},
                            json{{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}}}) {
    StatusOr<std::unique_ptr<Source>> src = OpenEntry(entry, dir.path());
    ASSERT_TRUE(src.ok()) << entry.dump() << ": " << src.status().ToString();
    const Source& s = **src;
    ASSERT_EQ(s.size(), static_cast<int64_t>(d.labels.size()));
    EXPECT_EQ(s.spec().shape, (std::vector<int>{28, 28}));
    EXPECT_EQ(s.spec().num_classes, 10);
    EXPECT_EQ(s.spec().size(), d.example_size);
    std::vector<float> x(s.spec().size());
    for (int64_t i = 0; i < s.size(); ++i) {
      int32_t label = -1;
      ASSERT_TRUE(s.Read(i, x.data(), &label).ok());
      ASSERT_EQ(label, d.labels[i]) << i;
      ASSERT_EQ(std::memcmp(x.data(), d.images.data() + i * d.example_size, x.size() * sizeof(float)), 0) << i;
      ASSERT_EQ(*s.Label(i), d.labels[i]);
    }
  }
}

TEST(NumpySourceTest, FloatArraysAsTheyAreAndOptions) {
  TempDir dir;
  ASSERT_TRUE(RunPython(dir.path(), R"(
x = np.linspace(-3, 3, 6 * 4 * 4 * 3).astype(np.float32).reshape(6, 4, 4, 3)
np.save('x.npy', x)
np.save('y.npy', np.array([0, 2, 1, 2, 0, 1], np.int64))
np.save('y32.npy', np.array([0, 2, 1, 2, 0, 1], np.int32))
np.save('xu8.npy', np.arange(6 * 5, dtype=np.uint8).reshape(6, 5))
np.save('xi64.npy', np.arange(6 * 2, dtype=np.int64).reshape(6, 2) - 3)
)"));
  StatusOr<std::unique_ptr<Source>> s =
      OpenEntry({{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}, {"label_mode", "categorical"}}, dir.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->spec().shape, (std::vector<int>{4, 4, 3}));
  EXPECT_EQ((*s)->spec().num_classes, 3);  // max label + 1
  EXPECT_TRUE((*s)->spec().categorical);
  EXPECT_EQ((*s)->Where(5), "x.npy[5]");
  std::vector<float> x(48);
  int32_t label;
  ASSERT_TRUE((*s)->Read(1, x.data(), &label).ok());
  EXPECT_EQ(label, 2);
  EXPECT_EQ(x[47], static_cast<float>(-3.0 + 6.0 * 95 / 287));
  EXPECT_FALSE((*s)->Read(6, x.data(), &label).ok());

  // rescale multiplies every value (uint8: instead of / 255), num_classes overrides.
  s = OpenEntry({{"format", "npy"}, {"x", "xu8.npy"}, {"y", "y32.npy"}, {"rescale", 0.5}, {"num_classes", 7}},
                dir.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->spec().num_classes, 7);
  EXPECT_EQ((*s)->spec().shape, std::vector<int>{5});
  ASSERT_TRUE((*s)->Read(3, x.data(), &label).ok());
  EXPECT_EQ(x[4], 19 * 0.5f);
  s = OpenEntry({{"format", "npy"}, {"x", "xu8.npy"}, {"y", "y32.npy"}}, dir.path());
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Read(3, x.data(), &label).ok());
  EXPECT_EQ(x[4], 19 / 255.f);
  s = OpenEntry({{"format", "npy"}, {"x", "xi64.npy"}, {"y", "y.npy"}}, dir.path());
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Read(0, x.data(), &label).ok());
  EXPECT_EQ(x[0], -3.f);
}

// Each wrong array gives one line about the data (exit 3) saying what is wrong.
// y of shape (N, ...): several labels per example (multi-hot, per-pixel classes).
TEST(NumpySourceTest, SeveralLabelsPerExample) {
  TempDir dir;
  ASSERT_TRUE(RunPython(dir.path(), R"(
np.savez('d.npz', x=np.zeros((3, 2), np.float32), y=np.array([[0, 1, 1], [1, 0, 0], [0, 0, 1]], np.int64))
)"));
  auto s = OpenEntry(json{{"format", "npz"}, {"path", "d.npz"}, {"x", "x"}, {"y", "y"}}, dir.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->size(), 3);
  EXPECT_EQ((*s)->spec().label_shape, (std::vector<int>{3}));
  EXPECT_EQ((*s)->spec().num_classes, 2);
  std::vector<float> x(2);
  std::vector<int32_t> labels(3, -1);
  ASSERT_TRUE((*s)->Read(1, x.data(), labels.data()).ok());
  EXPECT_EQ(labels, (std::vector<int32_t>{1, 0, 0}));
  ASSERT_TRUE((*s)->Read(2, x.data(), labels.data()).ok());
  EXPECT_EQ(labels, (std::vector<int32_t>{0, 0, 1}));
}

// A float y holds float targets: the label words are the float32 bits, and there are no classes.
TEST(NumpySourceTest, AFloatYHoldsFloatTargets) {
  TempDir dir;
  ASSERT_TRUE(RunPython(dir.path(), R"(
np.savez('d.npz', x=np.zeros((3, 2), np.uint8), y=np.array([[0.5, -2], [1.25, 3], [0, 1e6]], np.float64))
)"));
  auto s = OpenEntry(json{{"format", "npz"}, {"path", "d.npz"}, {"x", "x"}, {"y", "y"}}, dir.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE((*s)->spec().float_targets);
  EXPECT_EQ((*s)->spec().num_classes, 0);
  EXPECT_EQ((*s)->spec().label_shape, std::vector<int>{2});
  std::vector<float> x(2);
  std::vector<int32_t> labels(2);
  ASSERT_TRUE((*s)->Read(1, x.data(), labels.data()).ok());
  float t[2];
  std::memcpy(t, labels.data(), sizeof(t));
  EXPECT_EQ(t[0], 1.25f);
  EXPECT_EQ(t[1], 3.0f);
}

TEST(NumpySourceTest, DtypeShapeAndLabelErrors) {
  TempDir dir;
  ASSERT_TRUE(RunPython(dir.path(), R"(
x = np.zeros((4, 3), np.uint8)
np.savez('d.npz', x=x, y=np.array([0, 1, 2, 3], np.uint8), yf=np.array([0, 1, np.nan, 3], np.float32), y2=np.zeros((4, 1), np.int64),
         yshort=np.zeros(3, np.int64), yneg=np.array([0, 1, -5, 2], np.int64), x1=np.zeros(4, np.uint8),
         x0=np.zeros((0, 3), np.uint8), y0=np.zeros(0, np.int64), xz=np.zeros((4, 0), np.uint8),
         xbig=np.zeros((4, 3), '>f4'), yb=np.zeros(4, bool), ys=np.array(5, np.int64))
np.save('fortran.npy', np.asfortranarray(np.zeros((4, 3), np.float32)))
np.save('y.npy', np.array([0, 1, 2, 3], np.uint8))
)"));
  struct Case {
    json entry;
    std::string want;
  };
  auto Npz = [](const std::string& x, const std::string& y) {
    return json{{"format", "npz"}, {"path", "d.npz"}, {"x", x}, {"y", y}};
  };
  const std::vector<Case> cases = {
      {Npz("x", "yf"), "array 'yf'[2] is nan; float targets must be finite float32 values"},
      {Npz("x", "yb"), "has dtype bool; labels must be integers (uint8, int32 or int64: class indices) or floats"},
      {Npz("x", "yb"), "has dtype bool; labels must be integers"},
      {Npz("x", "ys"), "array 'ys' is a scalar; y must hold the N examples' labels"},
      {Npz("x", "yshort"), "array 'yshort' holds 3 labels; they must be the same length"},
      {Npz("x", "yneg"), "array 'yneg'[2] is -5; labels must be class indices >= 0"},
      {Npz("x1", "y"), "has shape (4,); x must be an array of examples of shape (N, ...)"},
      {Npz("x0", "y0"), "holds no examples"},
      {Npz("xz", "y"), "every example dimension must be >= 1"},
      {Npz("xbig", "y"), "big-endian"},
      {Npz("x_train", "y"), "has no array 'x_train'; it holds 'x', 'y', 'yf'"},
      {json{{"format", "npz"}, {"path", "d.npz"}, {"x", "x"}, {"y", "y"}, {"num_classes", 3}},
       "array 'y'[3] is 3, not below num_classes (3)"},
      {json{{"format", "npy"}, {"x", "fortran.npy"}, {"y", "y.npy"}}, "np.ascontiguousarray"},
      {json{{"format", "npz"}, {"path", "absent.npz"}, {"x", "x"}, {"y", "y"}}, "absent.npz"},
  };
  for (const Case& c : cases) {
    StatusOr<std::unique_ptr<Source>> s = OpenEntry(c.entry, dir.path());
    ASSERT_FALSE(s.ok()) << c.entry.dump();
    EXPECT_EQ(s.status().subject(), Subject::kData) << s.status().ToString();
    EXPECT_EQ(ExitCodeFor(s.status()), 3) << s.status().ToString();
    EXPECT_NE(s.status().message().find(c.want), std::string::npos) << c.entry.dump() << ": " << s.status().ToString();
  }
}

TEST(NumpySourceTest, EntryErrorsAreConfigErrors) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"format", "npz"}, {"x", "x"}, {"y", "y"}}, "data.train.path: missing"},
      {{{"format", "npz"}, {"path", "a.npz"}, {"y", "y"}}, "data.train.x: missing"},
      {{{"format", "npy"}, {"x", "x.npy"}, {"y", 3}}, "data.train.y: must be a non-empty string"},
      {{{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}, {"shuffle", true}}, "data.train.shuffle: unknown key"},
      {{{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}, {"path", "a"}}, "data.train.path: unknown key"},
      {{{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}, {"label_mode", "binary"}}, "data.train.label_mode"},
      {{{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}, {"rescale", "1/255"}}, "data.train.rescale"},
      {{{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}, {"num_classes", 0}}, "data.train.num_classes"},
  };
  for (const auto& [entry, want] : cases) {
    StatusOr<std::unique_ptr<SourceFormat>> f = ParseNumpy(entry, "/tmp", "data.train");
    ASSERT_FALSE(f.ok()) << entry.dump();
    EXPECT_EQ(ExitCodeFor(f.status()), 2) << f.status().ToString();
    EXPECT_NE(f.status().message().find(want), std::string::npos) << f.status().ToString();
  }
  // first/count/format are shared keys every source accepts (shard.cc applies them).
  StatusOr<std::unique_ptr<SourceFormat>> f = ParseNumpy(
      {{"format", "npz"}, {"path", "a.npz"}, {"x", "x"}, {"y", "y"}, {"first", 1}, {"count", 2}}, "/tmp", "data.train");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->format(), "npz");
  EXPECT_EQ((*f)->num_files(), 1);
  EXPECT_EQ((*f)->FileName(0), "a.npz");
}

}  // namespace
}  // namespace ringtrain::data
