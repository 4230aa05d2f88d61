#!/usr/bin/env bash
# `cmake --install` lays the binary, the man page (compressed) and the three completions
# where each tool looks for them.
. "$(dirname "$0")/lib.sh"

BUILD_DIR=$(cd "${2:-$(dirname "$RATELIMIT")}" && pwd)
SOURCE_DIR=$(cd "${3:-$SUITE_DIR/../..}" && pwd)

install_to_prefix() {
  PREFIX=$TEST_DIR/prefix
  expect_status 0 cmake --install "$BUILD_DIR" --prefix "$PREFIX"
}

test_install_lays_every_file() {
  install_to_prefix || return
  local installed source
  while read -r installed source; do
    if [ ! -f "$PREFIX/$installed" ]; then
      fail "not installed: $installed"
    elif ! cmp -s "$PREFIX/$installed" "$SOURCE_DIR/$source"; then
      fail "$installed differs from $source"
    fi
  done <<'FILES'
share/bash-completion/completions/ratelimit completions/ratelimit.bash
share/zsh/site-functions/_ratelimit completions/_ratelimit
share/fish/vendor_completions.d/ratelimit.fish completions/ratelimit.fish
FILES
  expect_true "the man page is compressed and the same as man/ratelimit.1" \
    cmp -s <(gzip -dc "$PREFIX/share/man/man1/ratelimit.1.gz") "$SOURCE_DIR/man/ratelimit.1"
  expect_status 0 "$PREFIX/bin/ratelimit" --version
  expect_contains "$OUT" "ratelimit "
}

test_each_tool_finds_the_installed_files() {
  install_to_prefix || return
  # zsh: the site-functions directory on $fpath of a local install.
  expect_tools_find_installed "$PREFIX/bin" "$PREFIX/share" "$PREFIX/share/zsh/site-functions"
}

run_suite
