// Status and Result<T>: how library code reports failure. Only apps/ may exit;
// everything below returns a Status whose message names the file, tensor or
// value at fault, so the CLI can print one clear line.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace fdpp {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller passed something malformed (shape, id, option)
  kNotFound,         // a file, tensor or key is missing
  kIoError,          // the OS refused (open, mmap, read)
  kCorrupt,          // a file exists but its contents are inconsistent
  kUnsupported,      // well-formed, but fdpp does not implement it
  kOutOfRange,       // a value exceeds a limit (context, vocab, batch)
  kOutOfMemory,      // host or device allocation failed / would not fit
  kCudaError,        // a CUDA, cuBLAS or driver call failed
  kInternal,         // a bug in fdpp
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CODE: message", for logs and the CLI's one-line errors.
  std::string to_string() const;

  // Adds context in front of the message: "loading model.safetensors: <msg>".
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status OutOfMemory(std::string m) { return {StatusCode::kOutOfMemory, std::move(m)}; }
inline Status CudaError(std::string m) { return {StatusCode::kCudaError, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status carries no value");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace fdpp

#define FDPP_CONCAT_INNER_(a, b) a##b
#define FDPP_CONCAT_(a, b) FDPP_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is an error.
#define FDPP_RETURN_IF_ERROR(expr)              \
  do {                                          \
    ::fdpp::Status fdpp_status_ = (expr);       \
    if (!fdpp_status_.ok()) return fdpp_status_; \
  } while (0)

// `FDPP_ASSIGN_OR_RETURN(auto x, make_x());` unwraps a Result or returns its Status.
#define FDPP_ASSIGN_OR_RETURN(lhs, expr) \
  FDPP_ASSIGN_OR_RETURN_IMPL_(FDPP_CONCAT_(fdpp_result_, __LINE__), lhs, expr)
#define FDPP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
