#!/bin/bash
# Builds LAMMPS (Debian's lammps source package, the 2022-01-06 stable
# release) with Axon's mpicxx and runs its five standard benchmarks
# (bench/: Lennard-Jones melt, bead-spring polymer, EAM metal, granular
# chute flow, rhodopsin protein with PPPM long-range electrostatics and an
# NPT barostat; 32,000 atoms, 100 steps each) at 2 and 4 ranks, then runs
# the same inputs with Debian's own LAMMPS of the same release, which is
# built against Open MPI, and compares every thermodynamic output line.
# With the same rank count both split the box alike and compute the same
# forces; what may differ is only the order in which reductions add the
# ranks' contributions (the standard leaves it open), so each value must
# agree to a relative 1e-9. Not part of `make check`: it downloads 80 MB,
# builds for about 6 minutes on two cores and runs for 1.5 minutes.
#
#   contrib/apps/lammps-bench.sh PREFIX [WORKDIR]
#
# PREFIX is an Axon installation (the quickstart's, e.g. $HOME/axon).
# WORKDIR (default /tmp/axon-lammps) holds the source, the build and one
# folder per run (run-INPUT-npN/{axon,ref}/log.lammps). Needs cmake,
# libfftw3-dev (the FFTs of PPPM, as Debian's build uses) and, for the
# reference, Debian's lammps package (lmp, with Open MPI's mpirun).
# Exit status: 0 when every comparison passed, 1 otherwise.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX [WORKDIR]}
work=${2:-/tmp/axon-lammps}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
app_setup "$prefix" "$work"

command -v lmp > /dev/null && command -v mpirun.openmpi > /dev/null ||
  { echo "$0: no reference: install Debian's lammps package (apt-get install lammps)" >&2; exit 2; }
command -v cmake > /dev/null || { echo "$0: needs cmake" >&2; exit 2; }

[[ -d src ]] || source_tree lammps "$work" '*/cmake/*' '*/src/*' '*/bench/*' '*/lib/*' '*/potentials/*'
if [[ ! -x build/lmp ]]; then
  # The packages the five benchmarks use, and MPIIO; FFTW3 as in Debian's
  # build, so that PPPM's transforms round alike.
  cmake -S src/cmake -B build -D CMAKE_BUILD_TYPE=Release -D CMAKE_CXX_COMPILER="$mpicxx" \
    -D CMAKE_C_COMPILER="$mpicc" -D BUILD_MPI=yes -D BUILD_OMP=no -D PKG_MOLECULE=yes \
    -D PKG_KSPACE=yes -D PKG_MANYBODY=yes -D PKG_RIGID=yes -D PKG_GRANULAR=yes -D PKG_MPIIO=yes \
    -D FFT=FFTW3 > cmake.log 2>&1 || { echo "$0: cmake failed; see $work/cmake.log" >&2; exit 1; }
  cmake --build build -j"$(nproc)" > make.log 2>&1 || { echo "$0: the build failed; see $work/make.log" >&2; exit 1; }
fi

# Prints the thermo table of a LAMMPS log: the lines between a header that
# starts with "Step" and the "Loop time" line, numbers only.
thermo() {
  awk '$1 == "Step" { on = 1; next } /^Loop time/ { on = 0 } on && $1 ~ /^[0-9]+$/' "$1"
}

# Compares two thermo tables value by value; prints the largest relative
# difference and fails beyond 1e-9 (or when the tables differ in shape).
compare() {
  paste -d'|' <(thermo "$1") <(thermo "$2") | awk -F'|' '
    { na = split($1, a, " "); nb = split($2, b, " ")
      if (na != nb || na == 0) { bad = 1; exit }
      for (i = 1; i <= na; ++i) {
        d = a[i] - b[i]; if (d < 0) d = -d
        m = a[i] < 0 ? -a[i] : a[i]; mb = b[i] < 0 ? -b[i] : b[i]; if (mb > m) m = mb
        r = m > 0 ? d / m : 0
        if (r > worst) worst = r
      }
      ++rows }
    END { if (bad || rows < 2) { print "tables differ in shape"; exit 1 }
          printf "%d lines, largest relative difference %.2e\n", rows, worst
          exit worst > 1e-9 }'
}

for input in lj chain eam chute rhodo; do
  for np in 2 4; do
    dir="$work/run-$input-np$np"
    rm -rf "$dir"
    mkdir -p "$dir/axon" "$dir/ref"
    for side in axon ref; do
      cp src/bench/data.* src/bench/*.eam "$dir/$side/" 2> /dev/null || true
      # Thermo output every 10 steps, 15 significant digits, in one table
      # (rhodo's "multi" style spreads a step over several lines).
      sed -e 's/^thermo_style[[:space:]]*multi.*/thermo_style custom step temp press pe ke etotal evdwl ecoul elong ebond eangle edihed eimp vol/' \
          -e 's/^run\(.*\)/thermo 10\nthermo_modify format float %.15g\nrun\1/' \
          "src/bench/in.$input" > "$dir/$side/in.$input"
    done
    rc=0
    (cd "$dir/axon" && timeout 600 "$mpirun" -np "$np" "$work/build/lmp" -in "in.$input" > out.txt 2>&1) || rc=$?
    if ((rc == 0)); then
      (cd "$dir/ref" && timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" lmp \
         -in "in.$input" > out.txt 2>&1) ||
        { echo "$0: the reference run of $input at $np ranks failed; see $dir/ref/out.txt" >&2; exit 1; }
      compare "$dir/axon/log.lammps" "$dir/ref/log.lammps" > "$dir/compare.txt" || rc=1
      echo "  $input np=$np: $(cat "$dir/compare.txt")"
    fi
    count_result "$input np=$np" "$rc" "$dir"
  done
done
finish
