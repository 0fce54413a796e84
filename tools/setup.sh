# Shared set-up for tools/dtsim and tools/test (sourced, not run).
# Installs missing Debian packages, then configures and builds in Release when sources changed.
# Quiet when there is nothing to do, so that a built tool starts fast.

DTSIM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DTSIM_BUILD="${DTSIM_BUILD_DIR:-$DTSIM_ROOT/build}"
DTSIM_SANITIZE_BUILD="${DTSIM_SANITIZE_BUILD_DIR:-$DTSIM_BUILD-sanitize}"
DTSIM_PACKAGES=(cmake g++ make pkg-config libsimgrid-dev libboost-graph-dev nlohmann-json3-dev
                libfmt-dev doctest-dev libcli11-dev libeigen3-dev libjemalloc-dev)
# Only for tools/test's sanitizer build and tools/fuzz (libFuzzer): Debian 12's clang is clang 14.
# Its ASan, UBSan and libFuzzer runtimes are in libclang-rt-14-dev, which clang only recommends;
# llvm-14 has the llvm-symbolizer that makes sanitizer reports name functions, files and lines.
DTSIM_CLANG_MAJOR=14
DTSIM_CLANG_PACKAGES=(clang "libclang-rt-$DTSIM_CLANG_MAJOR-dev" "llvm-$DTSIM_CLANG_MAJOR")
# Only tools/test needs these: a real browser renders the HTML report, GNU parallel runs an emitted sweep.
DTSIM_TEST_PACKAGES=(chromium parallel)

# dtsim_install_packages [PACKAGE...]: installs what is missing of the packages (default: DTSIM_PACKAGES).
dtsim_install_packages() {
  local installed pkg missing=()
  local wanted=("$@")
  [ ${#wanted[@]} -eq 0 ] && wanted=("${DTSIM_PACKAGES[@]}")
  # One dpkg-query for all; packages dpkg has never heard of are simply not listed.
  installed=$'\n'$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${wanted[@]}" 2>/dev/null |
                   awk '$2 == "installed" { print $1 }')$'\n'
  for pkg in "${wanted[@]}"; do
    [[ "$installed" == *$'\n'"$pkg"$'\n'* ]] || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "dtsim: missing Debian packages: ${missing[*]}; not root and no sudo here: run as root" \
           "'apt-get install ${missing[*]}', then run this again" >&2
      return 1
    fi
    sudo=(sudo)
  fi
  echo "dtsim: installing ${missing[*]}" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || return 1
}

# dtsim_sources_changed STAMP: whether a source is newer than the stamp of the last build.
dtsim_sources_changed() {
  local stamp="$1"
  [ -f "$stamp" ] || return 0
  [ -n "$(find "$DTSIM_ROOT/CMakeLists.txt" "$DTSIM_ROOT/sim" "$DTSIM_ROOT/tools/cli" "$DTSIM_ROOT/calibration" \
           "$DTSIM_ROOT/tests" -newer "$stamp" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' \
           -o -name 'CMakeLists.txt' -o -name '*.cmake' \) -print -quit 2>/dev/null)" ]
}

# dtsim_configure DIR COMMAND...: runs the configure COMMAND (cmake ...) for the build folder DIR,
# unless a configure of DIR has completed: DIR/.dtsim-configured is written only after COMMAND
# succeeded, so a configure that failed or was stopped (which leaves a CMakeCache.txt, and maybe no
# Makefile) is run again the next time, and says so, instead of blocking every later build.
dtsim_configure() {
  local dir="$1"
  shift
  local marker="$dir/.dtsim-configured"
  if [ -f "$dir/CMakeCache.txt" ] && { [ -f "$dir/Makefile" ] || [ -f "$dir/build.ninja" ]; }; then
    [ -f "$marker" ] && return 0
    # A folder configured before these markers: a build that succeeded there vouches for its configure
    # (every configure below removes the build stamps before it starts).
    if compgen -G "$dir/.dtsim-built-*" >/dev/null; then
      touch "$marker"
      return 0
    fi
  fi
  if [ -f "$dir/CMakeCache.txt" ]; then
    echo "dtsim: $dir has no completed configure (an earlier one failed or was stopped): configuring it again" >&2
  fi
  rm -f "$marker" "$dir"/.dtsim-built-*
  "$@" >&2 || return 1
  touch "$marker"
}

# dtsim_build [TARGET]: builds TARGET (default: everything, the test suite included) in $DTSIM_BUILD.
dtsim_build() {
  local target="${1:-all}"
  local stamp="$DTSIM_BUILD/.dtsim-built-$target"
  dtsim_install_packages || { echo "dtsim: could not install the Debian packages it needs" >&2; return 1; }
  dtsim_sources_changed "$stamp" || return 0
  local jobs
  jobs="$(nproc 2>/dev/null || echo 2)"
  dtsim_configure "$DTSIM_BUILD" cmake -S "$DTSIM_ROOT" -B "$DTSIM_BUILD" -DCMAKE_BUILD_TYPE=Release || return 1
  cmake --build "$DTSIM_BUILD" -j "$jobs" --target "$target" >&2 || return 1
  touch "$stamp"
  [ "$target" = all ] && touch "$DTSIM_BUILD/.dtsim-built-dtsim"
  return 0
}

# dtsim_build_sanitized: the test suite built with clang, -fsanitize=address,undefined and
# assertions on (-O1: fast enough to run the suite) in $DTSIM_SANITIZE_BUILD, with the libFuzzer
# targets of tests/fuzz (the library carries fuzzer-no-link coverage for them; tools/fuzz runs them).
dtsim_build_sanitized() {
  dtsim_install_packages "${DTSIM_CLANG_PACKAGES[@]}" ||
    { echo "dtsim: could not install clang for the sanitizer build" >&2; return 1; }
  local stamp="$DTSIM_SANITIZE_BUILD/.dtsim-built-all"
  dtsim_sources_changed "$stamp" || return 0
  dtsim_check_sanitizer_toolchain || return 1
  local flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  local coverage="-fsanitize=fuzzer-no-link"
  dtsim_configure "$DTSIM_SANITIZE_BUILD" env CXX=clang++ cmake -S "$DTSIM_ROOT" -B "$DTSIM_SANITIZE_BUILD" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g $flags $coverage" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
    -DDTSIM_WITH_CUDA=OFF -DDTSIM_FUZZ=ON || return 1
  cmake --build "$DTSIM_SANITIZE_BUILD" -j "$(nproc 2>/dev/null || echo 2)" >&2 || return 1
  touch "$stamp"
}

# dtsim_check_sanitizer_toolchain: whether clang++ compiles and links a -fsanitize=address,undefined
# program and a -fsanitize=fuzzer one (in a temporary folder, removed after; about a second, run only
# when the sanitizer build is about to be configured or built). If not, one line names the package.
dtsim_check_sanitizer_toolchain() {
  local pkg="libclang-rt-$DTSIM_CLANG_MAJOR-dev"
  if ! command -v clang++ >/dev/null 2>&1; then
    echo "dtsim: no clang++ for the sanitizer build: install clang" >&2
    return 1
  fi
  local major
  major="$(clang++ -dumpversion 2>/dev/null)" && major="${major%%.*}" && [ -n "$major" ] && pkg="libclang-rt-$major-dev"
  local dir what first rc=0
  dir="$(mktemp -d "${TMPDIR:-/tmp}/dtsim-toolchain.XXXXXX")" || return 1
  printf 'int main() { return 0; }\n' >"$dir/sanitized.cpp"
  printf '#include <cstddef>\n#include <cstdint>\n%s\n' \
    'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$dir/fuzzer.cpp"
  for what in address,undefined fuzzer,address,undefined; do
    local src="$dir/sanitized.cpp"
    [ "$what" = address,undefined ] || src="$dir/fuzzer.cpp"
    if ! clang++ -fsanitize="$what" "$src" -o "$dir/a.out" >"$dir/log" 2>&1; then
      first="$(grep -m1 -E 'error|cannot find' "$dir/log" || head -1 "$dir/log")"
      echo "dtsim: clang++ cannot link a -fsanitize=$what program: install $pkg (clang++: ${first:0:200})" >&2
      rc=1
      break
    fi
  done
  rm -rf "$dir"
  return "$rc"
}

# dtsim_sanitizer_symbolizer: points ASan and UBSan at clang's llvm-symbolizer when none is on PATH
# (llvm-14 installs it as /usr/lib/llvm-14/bin/llvm-symbolizer and /usr/bin/llvm-symbolizer-14), so
# their reports name functions, files and lines. A path already set is kept.
dtsim_sanitizer_symbolizer() {
  command -v llvm-symbolizer >/dev/null 2>&1 && return 0
  local s
  for s in "/usr/lib/llvm-$DTSIM_CLANG_MAJOR/bin/llvm-symbolizer" "$(command -v "llvm-symbolizer-$DTSIM_CLANG_MAJOR" 2>/dev/null)"; do
    if [ -n "$s" ] && [ -x "$s" ]; then
      export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-$s}" UBSAN_SYMBOLIZER_PATH="${UBSAN_SYMBOLIZER_PATH:-$s}"
      return 0
    fi
  done
  return 0
}
