# Shared set-up for tools/dtsim and tools/test (sourced, not run).
# Installs missing Debian packages, then configures and builds in Release when sources changed.
# Quiet when there is nothing to do, so that a built tool starts fast.

DTSIM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DTSIM_BUILD="${DTSIM_BUILD_DIR:-$DTSIM_ROOT/build}"
DTSIM_PACKAGES=(cmake g++ make pkg-config libsimgrid-dev libboost-graph-dev nlohmann-json3-dev
                libfmt-dev doctest-dev libcli11-dev libeigen3-dev)

dtsim_install_packages() {
  local installed pkg missing=()
  # One dpkg-query for all; packages dpkg has never heard of are simply not listed.
  installed=$'\n'$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${DTSIM_PACKAGES[@]}" 2>/dev/null |
                   awk '$2 == "installed" { print $1 }')$'\n'
  for pkg in "${DTSIM_PACKAGES[@]}"; do
    [[ "$installed" == *$'\n'"$pkg"$'\n'* ]] || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dtsim: installing ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || return 1
}

dtsim_sources_changed() {
  local stamp="$DTSIM_BUILD/.dtsim-built"
  [ -f "$stamp" ] || return 0
  [ -n "$(find "$DTSIM_ROOT/CMakeLists.txt" "$DTSIM_ROOT/sim" "$DTSIM_ROOT/tools/cli" "$DTSIM_ROOT/calibration" \
           "$DTSIM_ROOT/tests" -newer "$stamp" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' \
           -o -name 'CMakeLists.txt' -o -name '*.cmake' \) -print -quit 2>/dev/null)" ]
}

dtsim_build() {
  dtsim_install_packages || { echo "dtsim: could not install the Debian packages it needs" >&2; return 1; }
  dtsim_sources_changed || return 0
  local jobs
  jobs="$(nproc 2>/dev/null || echo 2)"
  if [ ! -f "$DTSIM_BUILD/CMakeCache.txt" ]; then
    cmake -S "$DTSIM_ROOT" -B "$DTSIM_BUILD" -DCMAKE_BUILD_TYPE=Release >&2 || return 1
  fi
  cmake --build "$DTSIM_BUILD" -j "$jobs" >&2 || return 1
  touch "$DTSIM_BUILD/.dtsim-built"
}
