# Shared set-up for tools/dtsim and tools/test (sourced, not run).
# Installs missing Debian packages, then configures and builds in Release when sources changed.
# Quiet when there is nothing to do, so that a built tool starts fast.

DTSIM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DTSIM_BUILD="${DTSIM_BUILD_DIR:-$DTSIM_ROOT/build}"
DTSIM_SANITIZE_BUILD="${DTSIM_SANITIZE_BUILD_DIR:-$DTSIM_BUILD-sanitize}"
DTSIM_PACKAGES=(cmake g++ make pkg-config libsimgrid-dev libboost-graph-dev nlohmann-json3-dev
                libfmt-dev doctest-dev libcli11-dev libeigen3-dev libjemalloc-dev)
# Only for tools/test's sanitizer build and tools/fuzz (libFuzzer): Debian 12's clang is clang 14.
DTSIM_CLANG_PACKAGES=(clang)
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

# dtsim_build [TARGET]: builds TARGET (default: everything, the test suite included) in $DTSIM_BUILD.
dtsim_build() {
  local target="${1:-all}"
  local stamp="$DTSIM_BUILD/.dtsim-built-$target"
  dtsim_install_packages || { echo "dtsim: could not install the Debian packages it needs" >&2; return 1; }
  dtsim_sources_changed "$stamp" || return 0
  local jobs
  jobs="$(nproc 2>/dev/null || echo 2)"
  if [ ! -f "$DTSIM_BUILD/CMakeCache.txt" ]; then
    cmake -S "$DTSIM_ROOT" -B "$DTSIM_BUILD" -DCMAKE_BUILD_TYPE=Release >&2 || return 1
  fi
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
  if [ ! -f "$DTSIM_SANITIZE_BUILD/CMakeCache.txt" ]; then
    local flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    local coverage="-fsanitize=fuzzer-no-link"
    CXX=clang++ cmake -S "$DTSIM_ROOT" -B "$DTSIM_SANITIZE_BUILD" -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g $flags $coverage" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
      -DDTSIM_WITH_CUDA=OFF -DDTSIM_FUZZ=ON >&2 || return 1
  fi
  cmake --build "$DTSIM_SANITIZE_BUILD" -j "$(nproc 2>/dev/null || echo 2)" >&2 || return 1
  touch "$stamp"
}
