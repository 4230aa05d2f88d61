#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace ratelimit::util {

// Splits what a file descriptor delivers into records that end in `delimiter`, reading in
// large blocks. Records are views into one buffer, so consecutive records lie next to each
// other and can be written out together; a view stays valid until the next `fill`. A record
// longer than the buffer makes the buffer grow to hold it whole.
class RecordReader {
public:
  RecordReader(int fd, char delimiter, std::size_t block_size = 256 * 1024);

  // Complete records buffered after the cursor, at most `max`: how many, and the bytes they
  // span (delimiters included). Consumes nothing.
  struct Span {
    std::size_t records = 0;
    std::string_view bytes;
  };
  Span peek(std::size_t max) const;

  // Moves the cursor past `bytes` bytes, which `peek` returned.
  void consume(std::size_t bytes) {
    m_begin += bytes;
    m_searched = 0;
  }

  // Reads once more (the caller has found no complete record and is done with every view
  // it holds); false at the end of the input, or on an error with `error()` set.
  // Retries EINTR; a descriptor in non-blocking mode is waited on with poll(2).
  bool fill();

  // After `fill` returned false: the bytes after the last delimiter (a last record without
  // one, possibly empty), and errno of a failed read, or 0.
  std::string_view rest() const { return buffered(); }
  int error() const { return m_error; }

  // Buffered bytes not consumed yet.
  std::string_view buffered() const { return {m_buffer.data() + m_begin, m_end - m_begin}; }

private:
  int m_fd;
  char m_delimiter;
  std::size_t m_block_size;
  std::vector<char> m_buffer;
  std::size_t m_begin = 0; // the cursor
  std::size_t m_end = 0;   // the end of the bytes read
  // Bytes from the cursor known to hold no delimiter, so that a long record is not searched
  // again from its start after each read.
  mutable std::size_t m_searched = 0;
  int m_error = 0;
};

} // namespace ratelimit::util
