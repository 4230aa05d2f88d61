#pragma once

#include <string>

namespace ratelimit::util {

// `error`, an errno value, as the reason in a message: lower case, with the causes a user
// can act on named plainly ("the disk is full", "the file system is read-only").
std::string describe_errno(int error);

} // namespace ratelimit::util
