# Sourced by the contrib/apps scripts: fetches and unpacks a Debian source
# package through a private deb-src list (the system's apt sources stay as
# they are).
#
#   debian_source PACKAGE WORKDIR
#
# Leaves the downloaded files in WORKDIR/apt; the caller unpacks the
# original tarball it needs from there.
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
