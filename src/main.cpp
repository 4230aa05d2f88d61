#include "cli/main.hpp"

int main(int argc, char** argv) { return ratelimit::cli::main(argc, argv); }
