// The message of the bad_input error f throws, for tests that check what a bad
// description is told; a test failure if f throws nothing or another kind of error.
#pragma once

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace atvoss::simulator {

inline std::string bad_input_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input()) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

}  // namespace atvoss::simulator
