#!/bin/bash
# mpicc / mpicxx / axon.pc as configure generates them in the build tree:
# flags, -show, compile-only modes, resolved install paths.
. "$AXON_SRCDIR/test/launcher/lib.sh"

tools="$AXON_BUILDDIR/src/tools"
for wrapper in mpicc mpicxx; do
    [[ -f "$tools/$wrapper" ]] || fail "$tools/$wrapper was not generated"
    show=$(sh "$tools/$wrapper" -show -O2 hello.c -o hello)
    [[ "$show" != *'${'* && "$show" != *'@'* ]] || fail "$wrapper: unresolved path in: $show"
    [[ "$show" =~ ^[^\ ]+.*\ -I(/[^ ]*)/include\ -O2\ hello\.c\ -o\ hello\ -L(/[^ ]*)\ -Wl,-rpath,(/[^ ]*)\ -lmpi_abi$ ]] ||
        fail "$wrapper -show: unexpected command: $show"
    libdir=${BASH_REMATCH[2]}
    [[ "${BASH_REMATCH[3]}" == "$libdir" ]] || fail "$wrapper: rpath differs from -L: $show"
    [[ "$(sh "$tools/$wrapper" --showme hello.c)" == "$(sh "$tools/$wrapper" -show hello.c)" ]] ||
        fail "$wrapper: --showme differs from -show"
    for mode in -c -E -S -M -MM; do
        show=$(sh "$tools/$wrapper" -show $mode hello.c)
        [[ "$show" == *" -I"*" $mode hello.c" && "$show" != *-lmpi_abi* && "$show" != *-rpath* ]] ||
            fail "$wrapper $mode must not link: $show"
    done
    [[ "$(sh "$tools/$wrapper" --showme:link)" == "-L$libdir -Wl,-rpath,$libdir -lmpi_abi" ]] ||
        fail "$wrapper --showme:link"
    # Arguments with spaces keep their quoting when the compiler runs.
    printf 'int main(void) { return 0; }\n' >"$work/with space.c"
    sh "$tools/$wrapper" -c "$work/with space.c" -o "$work/with space.o" || fail "$wrapper: quoting of arguments"
    [[ -f "$work/with space.o" ]] || fail "$wrapper produced no object"
done
[[ "$(sh "$tools/mpicxx" -show x.cpp | cut -d' ' -f1)" != "$(sh "$tools/mpicc" -show x.c | cut -d' ' -f1)" ]] ||
    echo "note: mpicc and mpicxx use the same compiler command"

# A real compile against the project's mpi.h (the install path may not exist yet).
printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); return MPI_Finalize(); }\n' >"$work/hello.c"
sh "$tools/mpicc" -c -I"$AXON_SRCDIR/include" "$work/hello.c" -o "$work/hello.o" || fail "mpicc -c of an MPI program"

if command -v pkg-config >/dev/null; then
    flags=$(pkg-config --cflags --libs "$tools/axon.pc") || fail "pkg-config rejects axon.pc"
    flags=$(echo $flags)  # pkg-config pads with spaces; it also drops -I/usr/include
    [[ "$flags" =~ ^(-I/[^\ ]*/include\ )?-L(/[^\ ]+)\ -Wl,-rpath,(/[^\ ]+)\ -lmpi_abi$ ]] || fail "axon.pc flags: $flags"
    [[ "${BASH_REMATCH[2]}" == "${BASH_REMATCH[3]}" ]] || fail "axon.pc: rpath differs from -L: $flags"
fi
echo "wrappers OK"
