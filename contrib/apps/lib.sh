# Sourced by the contrib/apps scripts, which build another project's tests
# against an installed Axon.
#
#   app_setup PREFIX WORKDIR
#     sets mpicc and mpirun (PREFIX/bin, exit 2 when missing), makes WORKDIR
#     absolute (in $work), creates it and changes into it.
#   debian_source PACKAGE WORKDIR
#     fetches a Debian source package through a private deb-src list (the
#     system's apt sources stay as they are) into WORKDIR/apt; the caller
#     unpacks the original tarball it needs from there.
app_setup() {
  mpicc="$1/bin/mpicc"
  mpirun="$1/bin/mpirun"
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
  apt-get "${apt_opts[@]}" update >/dev/null
  (cd "$work/apt" && apt-get "${apt_opts[@]}" source --download-only "$package" >/dev/null 2>&1)
}
