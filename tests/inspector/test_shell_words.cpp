// shellSplit (inspector/sweep.h): the words of a command line the studio shows, as a
// POSIX shell would make them, so the remote runs exactly what is shown.
#include <gtest/gtest.h>

#include "sweep.h"

namespace kiln::sweep {
namespace {

using Words = std::vector<std::string>;

TEST(ShellSplit, QuotesAndEscapes) {
  EXPECT_EQ(shellSplit("kiln build m.onnx --layer-precisions '*:fp16,Conv_3:fp32'"),
            (Words{"kiln", "build", "m.onnx", "--layer-precisions", "*:fp16,Conv_3:fp32"}));
  EXPECT_EQ(shellSplit("a\\ b \"c \\\"d\\\" \\x\" 'e'\\''f' ''"),
            (Words{"a b", "c \"d\" \\x", "e'f", ""}));
  EXPECT_EQ(shellSplit("  spaced\tout\n  "), (Words{"spaced", "out"}));
  EXPECT_TRUE(shellSplit("").empty());
  EXPECT_EQ(shellSplit("'unterminated"), (Words{"unterminated"}));
}

TEST(ShellSplit, InvertsShellJoin) {
  const Words argv = {
      "kiln", "build", "/m/my model.onnx", "--max-error", "cosine>=0.999", "it's", "", "$HOME",
      "a\"b", "*:fp16"};
  EXPECT_EQ(shellSplit(shellJoin(argv)), argv);
}

}  // namespace
}  // namespace kiln::sweep
