#pragma once

namespace ratelimit::cli {

// The whole program: parses `argv`, runs the command, returns the exit status.
int main(int argc, char** argv);

} // namespace ratelimit::cli
