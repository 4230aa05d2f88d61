#!/usr/bin/env bash
# The Debian package (scripts/package, CPack): made from the build directory, unpacked into
# a scratch root with dpkg-deb -x: its files are where the shells and man look for them, its
# binary runs and reports the package's version, its dependencies come from the binary.
. "$(dirname "$0")/lib.sh"

BUILD_DIR=$(cd "${2:-$(dirname "$RATELIMIT")}" && pwd)
SOURCE_DIR=$(cd "${3:-$SUITE_DIR/../..}" && pwd)

# Makes the package in $TEST_DIR/dist and unpacks it into $ROOT; sets $DEB.
make_package() {
  local tool
  for tool in cpack dpkg-deb dpkg-shlibdeps; do
    if ! command -v $tool >/dev/null; then
      fail "$tool is missing; scripts/install-deps --test installs it"
      return 1
    fi
  done
  expect_status 0 cpack --config "$BUILD_DIR/CPackConfig.cmake" -B "$TEST_DIR/dist" || return
  DEB=$(ls "$TEST_DIR"/dist/ratelimit_*.deb 2>/dev/null)
  expect_true "one package, named ratelimit_VERSION_ARCH.deb: '$DEB'" \
    test "$(wc -w <<<"$DEB")" = 1 || return
  ROOT=$TEST_DIR/root
  expect_status 0 dpkg-deb -x "$DEB" "$ROOT"
}

test_the_package_is_named_by_version_and_architecture() {
  make_package || return
  local version architecture
  version=$(dpkg-deb -f "$DEB" Version)
  architecture=$(dpkg-deb -f "$DEB" Architecture)
  expect_eq "ratelimit_${version}_${architecture}.deb" "$(basename "$DEB")" "file name"
  expect_eq "$(dpkg --print-architecture)" "$architecture" "architecture"
  expect_eq ratelimit "$(dpkg-deb -f "$DEB" Package)" "package name"
  # From dpkg-shlibdeps: the C library at least (libstdc++ and SQLite are linked in).
  expect_contains "$(dpkg-deb -f "$DEB" Depends)" "libc6 (>=" "Depends"
}

test_the_packaged_binary_runs_and_reports_the_package_version() {
  make_package || return
  expect_status 0 "$ROOT/usr/bin/ratelimit" --version
  expect_eq "ratelimit $(dpkg-deb -f "$DEB" Version) (stores: sqlite, redis)" "$OUT" "--version"
  expect_status 0 "$ROOT/usr/bin/ratelimit" --db "$TEST_DIR/x.db" try k -r 1/min
  expect_status 1 "$ROOT/usr/bin/ratelimit" --db "$TEST_DIR/x.db" -q try k -r 1/min
}

test_the_files_are_where_the_shells_and_man_look() {
  make_package || return
  local installed source
  while read -r installed source; do
    if [ ! -f "$ROOT/$installed" ]; then
      fail "not in the package: $installed"
    elif ! cmp -s "$ROOT/$installed" "$SOURCE_DIR/$source"; then
      fail "$installed differs from $source"
    fi
  done <<'FILES'
usr/share/bash-completion/completions/ratelimit completions/ratelimit.bash
usr/share/zsh/vendor-completions/_ratelimit completions/_ratelimit
usr/share/fish/vendor_completions.d/ratelimit.fish completions/ratelimit.fish
FILES
  expect_true "the man page is compressed and the same as man/ratelimit.1" \
    cmp -s <(gzip -dc "$ROOT/usr/share/man/man1/ratelimit.1.gz") "$SOURCE_DIR/man/ratelimit.1"
  # Nothing outside /usr, nothing else in it.
  expect_eq "./usr/bin/ratelimit
./usr/share/bash-completion/completions/ratelimit
./usr/share/fish/vendor_completions.d/ratelimit.fish
./usr/share/man/man1/ratelimit.1.gz
./usr/share/zsh/vendor-completions/_ratelimit" \
    "$(dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {print $NF}' | sort)" "the package's files"
  expect_tools_find_installed "$ROOT/usr/bin" "$ROOT/usr/share" \
    "$ROOT/usr/share/zsh/vendor-completions"
}

run_suite
