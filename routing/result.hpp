#pragma once
// Result<T>: the error-or-value type returned across routing/ and discovery/.
// Exceptions stop at the control-plane edge (YAML, protobuf, main); below it,
// failures are values that say what went wrong and where.

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace subnetd {

enum class Errc {
  kInvalidArgument,   // caller passed something malformed (spec string, request)
  kParse,             // a file or byte string could not be parsed
  kMalformedMad,      // MAD bytes violate the wire format
  kOutOfRange,        // a number is outside what the field or space holds
  kNotFound,          // a node, port, GUID or LID does not exist
  kConflict,          // two things claim the same identity (GUID, LID, link end)
  kTimeout,           // no answer within the allotted time
  kUnreachable,       // a destination cannot be reached
  kLidsExhausted,     // the LID space is too small for the fabric
  kIncomplete,        // routing tables leave reachable pairs unrouted
  kForwardingLoop,    // a destination's next hops form a loop
  kCdgCycle,          // the channel dependency graph has a cycle (credit loop)
  kCancelled,         // a stop_token asked us to stop
  kIo,                // transport or file I/O failure
  kUnsupported,       // valid but not implemented by this backend
  kInternal,          // a broken invariant: a bug
};

const char* errc_name(Errc e);

struct Error {
  Errc code;
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_{Errc::kInternal, {}};
  bool ok_ = true;
};

inline Result<void> ok_result() { return {}; }

// Unwraps a Result<T> into `lhs` or returns its error from the enclosing function.
#define SUBNETD_TRY_ASSIGN(lhs, expr)              \
  auto&& _subnetd_r_##lhs = (expr);                \
  if (!_subnetd_r_##lhs.ok()) return _subnetd_r_##lhs.error(); \
  lhs = std::move(_subnetd_r_##lhs).value()

#define SUBNETD_TRY(expr)                                \
  do {                                                   \
    auto&& _subnetd_r = (expr);                          \
    if (!_subnetd_r.ok()) return _subnetd_r.error();     \
  } while (0)

}  // namespace subnetd
