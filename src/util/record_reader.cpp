#include "util/record_reader.hpp"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <unistd.h>

namespace ratelimit::util {

namespace {

std::size_t count_byte(const char* begin, std::size_t size, char byte) {
  // A plain loop that the compiler vectorises: a few bytes per cycle, where stepping with
  // memchr would cost a call per record.
  std::size_t count = 0;
  for (std::size_t i = 0; i < size; ++i) {
    count += begin[i] == byte ? 1 : 0;
  }
  return count;
}

} // namespace

RecordReader::RecordReader(int fd, char delimiter, std::size_t block_size)
    : m_fd(fd), m_delimiter(delimiter), m_block_size(block_size), m_buffer(block_size) {}

RecordReader::Span RecordReader::peek(std::size_t max) const {
  const char* start = m_buffer.data() + m_begin;
  std::size_t available = m_end - m_begin;
  if (max == 0 || available == 0) {
    return {};
  }
  const void* found = std::memchr(start + m_searched, m_delimiter, available - m_searched);
  if (found == nullptr) {
    m_searched = available;
    return {};
  }
  const char* end = static_cast<const char*>(found) + 1;
  if (max == 1) {
    return {1, {start, static_cast<std::size_t>(end - start)}};
  }
  if (max >= available) {
    // Every buffered record is wanted (each is at least its delimiter): count them at once.
    const char* last = static_cast<const char*>(::memrchr(start, m_delimiter, available));
    std::size_t size = static_cast<std::size_t>(last + 1 - start);
    return {count_byte(start, size, m_delimiter), {start, size}};
  }
  std::size_t records = 1;
  const char* limit = start + available;
  while (records < max) {
    const void* next = std::memchr(end, m_delimiter, static_cast<std::size_t>(limit - end));
    if (next == nullptr) {
      break;
    }
    end = static_cast<const char*>(next) + 1;
    ++records;
  }
  return {records, {start, static_cast<std::size_t>(end - start)}};
}

bool RecordReader::fill() {
  if (m_begin > 0) {
    std::memmove(m_buffer.data(), m_buffer.data() + m_begin, m_end - m_begin);
    m_end -= m_begin;
    m_begin = 0;
  }
  if (m_buffer.size() - m_end < m_block_size / 2) {
    m_buffer.resize(m_buffer.size() * 2);
  }
  for (;;) {
    ssize_t got = ::read(m_fd, m_buffer.data() + m_end, m_buffer.size() - m_end);
    if (got > 0) {
      m_end += static_cast<std::size_t>(got);
      return true;
    }
    if (got == 0) {
      return false;
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // Someone left the descriptor non-blocking; it is shared, so wait rather than change it.
      pollfd readable{m_fd, POLLIN, 0};
      ::poll(&readable, 1, -1);
      continue;
    }
    m_error = errno;
    return false;
  }
}

} // namespace ratelimit::util
