// docs/reference/devices.md's op x device table is the one the backends declare
// (backends::DeviceTableMarkdown), and the declarations agree with the checks behind them.
#include <gtest/gtest.h>

#include <string>

#include "backends/backend.h"
#include "testing/source_dir.h"

namespace ringtrain::backends {
namespace {

constexpr char kDoc[] = "docs/reference/devices.md";
constexpr char kBegin[] = "<!-- table generated from src/backends: begin -->\n";
constexpr char kEnd[] = "<!-- table generated from src/backends: end -->";

TEST(DeviceTableTest, TheDocumentationHoldsTheDeclaredTable) {
  const std::string doc = ::ringtrain::testing::ReadSourceFile(kDoc);
  ASSERT_FALSE(doc.empty()) << kDoc << " is missing";
  const size_t b = doc.find(kBegin), e = doc.find(kEnd);
  ASSERT_NE(b, std::string::npos) << kDoc << " lacks the line " << kBegin;
  ASSERT_NE(e, std::string::npos) << kDoc << " lacks the line " << kEnd;
  const std::string table = doc.substr(b + std::string(kBegin).size(), e - b - std::string(kBegin).size());
  EXPECT_EQ(table, DeviceTableMarkdown()) << kDoc << " is out of date; put this table between its markers:\n"
                                          << DeviceTableMarkdown();
}

TEST(DeviceTableTest, EveryOpKindHasOneRowPerDevice) {
  ASSERT_EQ(CpuDeclaredSupport().size(), ops::AllOpKinds().size());
  ASSERT_EQ(CudaDeclaredSupport().size(), ops::AllOpKinds().size());
  for (size_t i = 0; i < ops::AllOpKinds().size(); ++i) {
    EXPECT_EQ(CpuDeclaredSupport()[i].kind, ops::AllOpKinds()[i]);
    EXPECT_EQ(CudaDeclaredSupport()[i].kind, ops::AllOpKinds()[i]);
    EXPECT_EQ(CpuDeclaredSupport()[i].level, OpSupport::Level::kFull) << ops::OpKindName(ops::AllOpKinds()[i]);
  }
}

// What the CUDA check accepts and refuses is what its row says.
TEST(DeviceTableTest, TheCudaCheckFollowsItsDeclaration) {
  for (const OpSupport& s : CudaDeclaredSupport()) {
    ops::Op op;
    op.kind = s.kind;
    SCOPED_TRACE(ops::OpKindName(s.kind));
    const Status plain = CudaSupports(op);
    if (s.level == OpSupport::Level::kNone) {
      EXPECT_EQ(plain.code(), Code::kUnimplemented);
    } else {
      EXPECT_TRUE(plain.ok()) << plain.ToString();  // the op at its defaults
    }
  }
  // The arguments the CUDA kernels take: grouped, dilated, any activation, many inputs.
  ops::Op conv;
  conv.kind = ops::OpKind::kConv2D;
  conv.groups = 2;
  conv.window.dilation_h = 2;
  conv.activation = ops::Activation::kGelu;
  EXPECT_TRUE(CudaSupports(conv).ok());
  ops::Op add;
  add.kind = ops::OpKind::kAdd;
  add.num_inputs = 3;
  EXPECT_TRUE(CudaSupports(add).ok());
}

}  // namespace
}  // namespace ringtrain::backends
