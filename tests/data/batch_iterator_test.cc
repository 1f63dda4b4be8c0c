// BatchIterator: deterministic shuffled passes, wrap-around, and resuming.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "data/dataset.h"

namespace ringtrain::data {
namespace {

// n examples of 2 floats each; example i is {i, -i} with label i.
Dataset Indexed(size_t n) {
  Dataset d;
  d.example_shape = {2};
  d.example_size = 2;
  d.num_classes = static_cast<int>(n);
  for (size_t i = 0; i < n; ++i) {
    d.images.push_back(static_cast<float>(i));
    d.images.push_back(-static_cast<float>(i));
    d.labels.push_back(static_cast<int32_t>(i));
  }
  return d;
}

// The next `batches` batches' labels, checking images match labels on the way.
std::vector<int32_t> Take(BatchIterator& it, int batch, int batches) {
  std::vector<int32_t> out;
  std::vector<float> images(batch * 2);
  std::vector<int32_t> labels(batch);
  for (int b = 0; b < batches; ++b) {
    it.Next(images.data(), labels.data());
    for (int k = 0; k < batch; ++k) {
      EXPECT_EQ(images[2 * k], static_cast<float>(labels[k]));
      EXPECT_EQ(images[2 * k + 1], -static_cast<float>(labels[k]));
    }
    out.insert(out.end(), labels.begin(), labels.end());
  }
  return out;
}

bool IsPermutation(std::vector<int32_t> v, size_t n) {
  std::sort(v.begin(), v.end());
  std::vector<int32_t> want(n);
  std::iota(want.begin(), want.end(), 0);
  return v == want;
}

TEST(BatchIteratorTest, SameSeedSameOrderDifferentSeedDifferentOrder) {
  Dataset d = Indexed(100);
  BatchIterator a(&d, 10, 42, true), b(&d, 10, 42, true), c(&d, 10, 43, true);
  std::vector<int32_t> ta = Take(a, 10, 25), tb = Take(b, 10, 25), tc = Take(c, 10, 25);
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(BatchIteratorTest, EachPassIsAFreshPermutation) {
  Dataset d = Indexed(60);
  BatchIterator it(&d, 12, 7, true);
  std::vector<int32_t> all = Take(it, 12, 5 * 4);  // 4 passes of 5 batches
  std::vector<std::vector<int32_t>> passes;
  for (int p = 0; p < 4; ++p) {
    passes.emplace_back(all.begin() + p * 60, all.begin() + (p + 1) * 60);
    EXPECT_TRUE(IsPermutation(passes.back(), 60)) << "pass " << p;
  }
  EXPECT_NE(passes[0], passes[1]);
  EXPECT_NE(passes[1], passes[2]);
  std::vector<int32_t> identity(60);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(passes[0], identity);
  EXPECT_EQ(it.pass(), 4u);
  EXPECT_EQ(it.offset(), 0u);
}

TEST(BatchIteratorTest, NoShuffleKeepsOrder) {
  Dataset d = Indexed(5);
  BatchIterator it(&d, 3, 7, false);
  EXPECT_EQ(Take(it, 3, 4), (std::vector<int32_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1}));
  EXPECT_EQ(it.pass(), 2u);
  EXPECT_EQ(it.offset(), 2u);
}

TEST(BatchIteratorTest, BatchWrapsIntoTheNextPass) {
  Dataset d = Indexed(10);
  BatchIterator it(&d, 4, 3, true);
  std::vector<int32_t> labels = Take(it, 4, 3);  // 12 = pass 0 (10) + 2 of pass 1
  EXPECT_TRUE(IsPermutation({labels.begin(), labels.begin() + 10}, 10));
  EXPECT_EQ(it.pass(), 1u);
  EXPECT_EQ(it.offset(), 2u);
  std::vector<int32_t> rest = Take(it, 4, 2);  // finishes pass 1
  std::vector<int32_t> pass1(labels.begin() + 10, labels.end());
  pass1.insert(pass1.end(), rest.begin(), rest.end());
  EXPECT_TRUE(IsPermutation(pass1, 10));
}

TEST(BatchIteratorTest, DatasetSmallerThanBatchWrapsSeveralTimes) {
  Dataset d = Indexed(3);
  BatchIterator it(&d, 8, 9, true);
  std::vector<int32_t> labels = Take(it, 8, 3);  // 24 examples = 8 passes
  for (int p = 0; p < 8; ++p) {
    EXPECT_TRUE(IsPermutation({labels.begin() + 3 * p, labels.begin() + 3 * p + 3}, 3)) << "pass " << p;
  }
  EXPECT_EQ(it.pass(), 8u);
  EXPECT_EQ(it.offset(), 0u);
}

TEST(BatchIteratorTest, SeekReproducesThePosition) {
  Dataset d = Indexed(37);
  BatchIterator a(&d, 5, 1234, true);
  Take(a, 5, 11);  // 55 examples in: pass 1, offset 18
  EXPECT_EQ(a.pass(), 1u);
  EXPECT_EQ(a.offset(), 18u);
  const uint64_t pass = a.pass();
  const size_t offset = a.offset();
  std::vector<int32_t> want = Take(a, 5, 20);

  BatchIterator b(&d, 5, 1234, true);
  Take(b, 5, 3);  // wherever it was, Seek decides
  b.Seek(pass, offset);
  EXPECT_EQ(Take(b, 5, 20), want);

  BatchIterator c(&d, 5, 1234, true);
  c.Seek(0, 37 + 18);  // an offset past the end counts on into later passes
  EXPECT_EQ(c.pass(), 1u);
  EXPECT_EQ(c.offset(), 18u);
  EXPECT_EQ(Take(c, 5, 20), want);
}

TEST(BatchIteratorTest, EmptyDatasetDoesNotCrash) {
  Dataset d;
  d.example_size = 2;
  BatchIterator it(&d, 4, 1, true);
  std::vector<float> images(8, 5.f);
  std::vector<int32_t> labels(4, 5);
  it.Next(images.data(), labels.data());
  EXPECT_EQ(images, std::vector<float>(8, 0.f));
  EXPECT_EQ(labels, std::vector<int32_t>(4, 0));
}

}  // namespace
}  // namespace ringtrain::data
