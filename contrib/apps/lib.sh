# Sourced by the contrib/apps scripts, which build another project's tests
# against an installed Axon.
#
#   app_setup PREFIX WORKDIR
#     sets mpicc, mpicxx, mpirun and mpiexec (PREFIX/bin; exit 2 when mpicc
#     or mpirun is missing), makes WORKDIR absolute (in $work), creates it
#     and changes into it.
#   debian_source PACKAGE WORKDIR
#     fetches the original tarball of a Debian source package through a
#     private deb-src list (the system's apt sources stay as they are) into
#     WORKDIR/apt.
#   source_tree PACKAGE WORKDIR [MEMBER ...]
#     debian_source, then the original tarball unpacked into WORKDIR/src
#     (only the MEMBERs, shell patterns, when given).
#   count_result NAME STATUS LOG
#     prints "PASS  NAME" or "FAIL  NAME (...)" and counts it in $passed /
#     $failed; `finish` prints the "N passed, M failed" line and exits 1 on
#     any failure.
app_setup() {
  mpicc="$1/bin/mpicc"
  mpirun="$1/bin/mpirun"
  mpicxx="$1/bin/mpicxx"
  mpiexec="$1/bin/mpiexec"
  [[ -x $mpicc && -x $mpirun ]] || { echo "$0: no mpicc/mpirun under $1/bin" >&2; exit 2; }
  mkdir -p "$2"
  work=$(cd "$2" && pwd)
  cd "$work"
}

debian_source() {
  local package=$1 work=$2
  mkdir -p "$work/apt/lists/partial"
  cat > "$work/apt/src.sources" <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  local apt_opts=(-o Dir::Etc::sourcelist="$work/apt/src.sources" -o Dir::Etc::sourceparts=/dev/null
                  -o Dir::State::Lists="$work/apt/lists")
  apt-get "${apt_opts[@]}" update > "$work/apt/update.log" 2>&1 ||
    { echo "$0: apt-get update for the deb-src list failed; see $work/apt/update.log" >&2; exit 1; }
  # Only the original tarball is used, so only it is fetched (apt-get source
  # would fail on a mirror that lacks the Debian patches), and it is checked
  # against the hash in the signed index.
  local uri name size hash
  read -r uri name size hash < <(apt-get "${apt_opts[@]}" source --print-uris "$package" 2>/dev/null |
                                 grep "\.orig\.tar\." | head -1) || true
  [[ -n ${hash:-} ]] || { echo "$0: no source package $package in Debian's index" >&2; exit 1; }
  /usr/lib/apt/apt-helper download-file "${uri//\'/}" "$work/apt/$name" "$hash" > "$work/apt/download.log" 2>&1 ||
    { echo "$0: downloading $name failed; see $work/apt/download.log" >&2; exit 1; }
}

source_tree() {
  local package=$1 work=$2
  shift 2
  debian_source "$package" "$work"
  mkdir -p "$work/src"
  local members=()
  (($#)) && members=(--wildcards "$@")
  tar xf "$work"/apt/"${package}"_*.orig.tar.* -C "$work/src" --strip-components=1 "${members[@]}"
}

passed=0 failed=0
count_result() {
  if [[ $2 == 0 ]]; then
    echo "PASS  $1"; passed=$((passed + 1))
  else
    echo "FAIL  $1 (exit $2; log $3)"; failed=$((failed + 1))
  fi
}

finish() {
  echo "$passed passed, $failed failed"
  ((failed == 0))
}
