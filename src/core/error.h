// Engine errors. The PostgreSQL layer maps each code to an SQLSTATE at the SQL boundary.
#pragma once

#include <stdexcept>
#include <string>

namespace gpu2bs {

enum class ErrorCode {
  InvalidParameter,   // 22023
  ProgramLimit,       // 54000
  OutOfMemory,        // 53200
  Interrupted,        // query cancel / terminate pending: the caller processes the interrupt
  DeviceUnavailable,  // 55000: gpu2bs.device = gpu and no usable GPU
  DeviceError,        // 58000: a CUDA call failed
  Internal            // XX000
};

// An engine error with where it was thrown: the source file, line and function of the
// expression that constructs it (default arguments evaluated at the throw site), which the SQL
// boundary reports as the error's location.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& msg, std::string detail = {}, std::string hint = {},
        const char* file = __builtin_FILE(), int line = __builtin_LINE(),
        const char* function = __builtin_FUNCTION())
      : std::runtime_error(msg), code_(code), detail_(std::move(detail)), hint_(std::move(hint)),
        file_(file), line_(line), function_(function) {}
  ErrorCode code() const { return code_; }
  const std::string& detail() const { return detail_; }
  const std::string& hint() const { return hint_; }
  const char* file() const { return file_; }
  int line() const { return line_; }
  const char* function() const { return function_; }

 private:
  ErrorCode code_;
  std::string detail_;
  std::string hint_;
  const char* file_;      // static storage (a string literal)
  int line_;
  const char* function_;  // static storage
};

}  // namespace gpu2bs
