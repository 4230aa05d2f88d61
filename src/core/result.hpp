#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ratelimit::core {

// Either a value or an error message. Parsers return it instead of printing or throwing.
template <typename T>
class Result {
public:
  Result(T value) : m_content(std::move(value)) {}
  static Result failure(std::string message) { return Result(Error{std::move(message)}); }

  bool ok() const { return std::holds_alternative<T>(m_content); }
  explicit operator bool() const { return ok(); }
  const T& value() const { return std::get<T>(m_content); }
  const T& operator*() const { return value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<Error>(m_content).message; }

private:
  struct Error {
    std::string message;
  };
  explicit Result(Error error) : m_content(std::move(error)) {}
  std::variant<T, Error> m_content;
};

} // namespace ratelimit::core
