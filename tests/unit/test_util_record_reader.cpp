#include "util/record_reader.hpp"

#include <doctest/doctest.h>
#include <string>
#include <unistd.h>

using ratelimit::util::RecordReader;

namespace {

// A pipe holding `input`, its write end closed: the reader sees the input, then its end.
class InputPipe {
public:
  explicit InputPipe(std::string_view input) {
    REQUIRE(::pipe(m_fds) == 0);
    REQUIRE(::write(m_fds[1], input.data(), input.size()) == static_cast<ssize_t>(input.size()));
    ::close(m_fds[1]);
  }
  ~InputPipe() { ::close(m_fds[0]); }
  int fd() const { return m_fds[0]; }

private:
  int m_fds[2] = {-1, -1};
};

// Every record `reader` yields, one `peek(1)` at a time, then the rest after the end.
std::vector<std::string> drain(RecordReader& reader) {
  std::vector<std::string> records;
  for (;;) {
    RecordReader::Span span = reader.peek(1);
    if (span.records == 1) {
      records.emplace_back(span.bytes);
      reader.consume(span.bytes.size());
      continue;
    }
    if (!reader.fill()) {
      break;
    }
  }
  records.emplace_back(reader.rest());
  return records;
}

} // namespace

TEST_CASE("util::RecordReader splits records across reads and keeps a last unterminated one") {
  InputPipe input("alpha\nbeta\n\ngamma-is-longer-than-a-block\ndelta");
  RecordReader reader(input.fd(), '\n', 8);
  std::vector<std::string> expected{"alpha\n", "beta\n", "\n", "gamma-is-longer-than-a-block\n",
                                    "delta"};
  CHECK(drain(reader) == expected);
  CHECK(reader.error() == 0);
}

TEST_CASE("util::RecordReader splits on NUL, and newlines are ordinary bytes then") {
  using namespace std::string_literals;
  InputPipe input("a\nb\0c\0"s);
  RecordReader reader(input.fd(), '\0', 4);
  std::vector<std::string> expected{"a\nb\0"s, "c\0"s, ""};
  CHECK(drain(reader) == expected);
}

TEST_CASE("util::RecordReader::peek counts at most the records asked for, without consuming") {
  InputPipe input("1\n22\n333\n4444\n55");
  RecordReader reader(input.fd(), '\n');
  REQUIRE(reader.fill());
  RecordReader::Span two = reader.peek(2);
  CHECK(two.records == 2);
  CHECK(two.bytes == "1\n22\n");
  // More than there are: every complete record, not the unterminated tail.
  RecordReader::Span all = reader.peek(1000);
  CHECK(all.records == 4);
  CHECK(all.bytes == "1\n22\n333\n4444\n");
  CHECK(reader.peek(0).records == 0);
  reader.consume(two.bytes.size());
  CHECK(reader.peek(1).bytes == "333\n");
}

TEST_CASE("util::RecordReader reports an empty input as no record and an empty rest") {
  InputPipe input("");
  RecordReader reader(input.fd(), '\n');
  CHECK(drain(reader) == std::vector<std::string>{""});
}

TEST_CASE("util::RecordReader reports a read error") {
  RecordReader reader(-1, '\n');
  CHECK_FALSE(reader.fill());
  CHECK(reader.error() == EBADF);
}
