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

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& msg, std::string detail = {}, std::string hint = {})
      : std::runtime_error(msg), code_(code), detail_(std::move(detail)), hint_(std::move(hint)) {}
  ErrorCode code() const { return code_; }
  const std::string& detail() const { return detail_; }
  const std::string& hint() const { return hint_; }

 private:
  ErrorCode code_;
  std::string detail_;
  std::string hint_;
};

}  // namespace gpu2bs
