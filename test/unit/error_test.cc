// Error codes, their names, and the message helpers every PE's report goes through.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "bootstrap/agree.h"
#include "common/error.h"

namespace tshmemi {
namespace {

TEST(Errors, EveryStatusHasAName) {
  // Loops over the enum's range rather than listing names: a new status without a string fails here.
  for (int status = 0; status < TSHMEM_NUM_STATUS; ++status) {
    const std::string name = tshmemx_strerror(status);
    EXPECT_EQ(name.rfind("TSHMEM_", 0), 0u) << "status " << status << " -> " << name;
    EXPECT_NE(name, "not a tshmem status");
  }
  EXPECT_STREQ(tshmemx_strerror(-1), "not a tshmem status");
  EXPECT_STREQ(tshmemx_strerror(TSHMEM_NUM_STATUS), "not a tshmem status");
}

TEST(Errors, LastErrorIsPerThreadAndCleared) {
  clear_last_error();
  EXPECT_EQ(set_error(TSHMEM_ERR_INVALID_ARG, "call: value %d breaks the rule", 7), TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG);
  EXPECT_STREQ(tshmemx_last_error(), "call: value 7 breaks the rule");
  std::string other_thread_message = "unset";
  std::thread([&] { other_thread_message = tshmemx_last_error(); }).join();
  EXPECT_EQ(other_thread_message, "") << "the last error is thread-local";
  tshmemx_clear_last_error();
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS);
  EXPECT_STREQ(tshmemx_last_error(), "");
}

TEST(Errors, LongMessagesAreKeptWhole) {
  const std::string long_value(5000, 'x');
  set_error(TSHMEM_ERR_CONFIG, "X=%s", long_value.c_str());
  EXPECT_EQ(std::string(tshmemx_last_error()).size(), 5002u);
}

TEST(Errors, PeListsAreCompact) {
  EXPECT_EQ(pe_list({}), "");
  EXPECT_EQ(pe_list({1}), "1");
  EXPECT_EQ(pe_list({0, 1}), "0,1");
  EXPECT_EQ(pe_list({0, 1, 2, 3, 5}), "0-3,5");
  EXPECT_EQ(pe_list({2, 4, 5, 6, 9, 10}), "2,4-6,9,10");
}

TEST(Errors, ReportsCarryWholeMessagesAndCutLongerOnesAtAWord) {
  const std::string whole(1000, 'y');  // a long binding message fits whole
  PeReport report = make_report(TSHMEM_ERR_CUDA, whole);
  EXPECT_EQ(report.status, TSHMEM_ERR_CUDA);
  EXPECT_EQ(std::string(report.text), whole);
  std::string words;
  while (words.size() < 3000) words += "collective ";
  report = make_report(TSHMEM_ERR_CUDA, words);
  const std::string text = report.text;
  EXPECT_LT(text.size(), sizeof(report.text));
  ASSERT_GE(text.size(), 4u);
  EXPECT_EQ(text.substr(text.size() - 4), " ...") << "marked as cut";
  EXPECT_EQ(text.substr(text.size() - 14), "collective ...") << "cut after a whole word: " << text;
}

// A warning repeated in a loop is one line and a count: the first is printed, the repeats within a second are held,
// and the next line printed after the pause says how many were left out; other texts are not held by them.
TEST(Errors, RepeatedWarningsAreThrottledWithACount) {
  log_configure(LogLevel::kWarn, kLogAll);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 1000; ++i)
    log_throttled(LogLevel::kWarn, kLogInit, "throttle-test", "refused request " + std::to_string(i));
  log_throttled(LogLevel::kWarn, kLogInit, "throttle-test-other", "another warning");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  log_throttled(LogLevel::kWarn, kLogInit, "throttle-test", "refused request 1000");
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("refused request 0\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("refused request 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("another warning"), std::string::npos) << out;
  EXPECT_NE(out.find("refused request 1000 (\xe2\x80\xa6 999 more like this)"), std::string::npos) << out;
  // An error set in a loop (the same words, other numbers) is throttled the same way; the caller still gets each.
  testing::internal::CaptureStderr();
  for (int i = 0; i < 2000; ++i) {
    EXPECT_EQ(set_error(TSHMEM_ERR_NOT_INITIALIZED, "tshmem_putmem: call %d after finalize", i),
              TSHMEM_ERR_NOT_INITIALIZED);
    EXPECT_EQ(last_error_message(), "tshmem_putmem: call " + std::to_string(i) + " after finalize");
  }
  log_flush_throttled();
  const std::string errors = testing::internal::GetCapturedStderr();
  EXPECT_NE(errors.find("call 0 after finalize"), std::string::npos) << errors;
  EXPECT_NE(errors.find("1,999 more like this"), std::string::npos) << errors;
  EXPECT_LT(errors.size(), 1000u) << errors;
  clear_last_error();
}

}  // namespace
}  // namespace tshmemi
