// Engine errors record where they were thrown: the SQL boundary reports that file, line and
// function as the PostgreSQL error's location.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"

namespace {

// Throws an engine error from this function (the throw site the error must name).
[[noreturn]] void fail_here(int* line) {
  *line = __LINE__ + 1;
  throw gpu2bs::Error(gpu2bs::ErrorCode::InvalidParameter, "bad", "detail", "hint");
}

}  // namespace

TEST(Error, RecordsTheThrowSite) {
  int line = 0;
  try {
    fail_here(&line);
    FAIL() << "no exception";
  } catch (const gpu2bs::Error& e) {
    EXPECT_NE(std::strstr(e.file(), "error_test.cpp"), nullptr) << e.file();
    EXPECT_EQ(e.line(), line);
    EXPECT_STREQ(e.function(), "fail_here");
    EXPECT_STREQ(e.what(), "bad");
    EXPECT_EQ(e.detail(), "detail");
    EXPECT_EQ(e.hint(), "hint");
  }
}

TEST(Error, ExplicitSiteIsKept) {
  gpu2bs::Error e(gpu2bs::ErrorCode::DeviceError, "cuda", {}, {}, "kernels/x.cu", 42, nullptr);
  EXPECT_STREQ(e.file(), "kernels/x.cu");
  EXPECT_EQ(e.line(), 42);
  EXPECT_EQ(e.function(), nullptr);
}
