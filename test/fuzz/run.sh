#!/bin/bash
# Builds one libFuzzer target (clang -fsanitize=fuzzer,address,undefined)
# when it is missing or older than its sources, runs it once over every
# input kept in test/fuzz/regressions/TARGET (crashes found before, fixed),
# then fuzzes for SECONDS from the seeds in test/fuzz/corpus/TARGET (new
# inputs go to a scratch copy, the source tree stays as it is).
# Exit 0: no crash; 77: no clang with libFuzzer here (skipped); else the
# fuzzer's status, the crashing input saved next to the test's log.
# Usage: run.sh TARGET [SECONDS]    (default AXON_FUZZ_SECONDS, else 4)
# By hand, for a long run: AXON_FUZZ_SECONDS=3600 test/fuzz/run.sh tcp_wire
# (with AXON_SRCDIR and AXON_BUILDDIR set as test/run-tests.sh sets them).
set -u
: "${AXON_SRCDIR:?}" "${AXON_BUILDDIR:?}"
target=$1
seconds=${2:-${AXON_FUZZ_SECONDS:-4}}
src=$AXON_SRCDIR
out=$AXON_BUILDDIR/test/fuzz
logs=$AXON_BUILDDIR/test/logs
cxx=${AXON_FUZZ_CXX:-clang++}
mkdir -p "$out" "$logs"

case "$target" in
tcp_wire) files="test/fuzz/fuzz_tcp_wire.cpp src/btl/tcp/wire.cpp"; max_len=4096 ;;
sm_segment) files="test/fuzz/fuzz_sm_segment.cpp src/btl/sm/layout.cpp src/base/shm_file.cpp test/fuzz/stub_log.cpp"
    max_len=8192 ;;
pml_headers) files="test/fuzz/fuzz_pml_headers.cpp src/pml/decode.cpp"; max_len=1024 ;;
launcher_wire) files="test/fuzz/fuzz_launcher_wire.cpp src/launcher/wire.cpp"; max_len=4096 ;;
*) echo "unknown fuzz target $target" >&2; exit 2 ;;
esac

command -v "$cxx" >/dev/null || { echo "SKIP: no $cxx (clang with libFuzzer; contrib/install-deps.sh --tests)"; exit 77; }
probe=$out/.libfuzzer-ok
if [[ ! -e $probe ]]; then
    echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$out/probe.cpp"
    "$cxx" -fsanitize=fuzzer,address "$out/probe.cpp" -o "$out/probe" >/dev/null 2>&1 ||
        { echo "SKIP: $cxx cannot build libFuzzer targets (-fsanitize=fuzzer,address)"; exit 77; }
    touch "$probe"
fi

# Rebuilt when a source or a header it includes (the .d file) is newer.
bin=$out/fuzz_$target
stale=0
if [[ ! -x $bin || ! -e $bin.d ]]; then
    stale=1
else
    for dep in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$bin.d"); do
        [[ -e $dep && $dep -nt $bin ]] && { stale=1; break; }
    done
fi
if [[ $stale -eq 1 ]]; then
    paths=()
    for f in $files; do paths+=("$src/$f"); done
    start=$(date +%s%N)
    "$cxx" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -Wall -Wextra -Werror -I"$src/src" -I"$src/include" -I"$AXON_BUILDDIR" \
        -MMD -MF "$bin.d" "${paths[@]}" -o "$bin.tmp" || { echo "FAIL: cannot build fuzz_$target"; exit 1; }
    mv "$bin.tmp" "$bin"
    echo "built fuzz_$target in $((($(date +%s%N) - start) / 1000000)) ms"
fi

# Inputs that crashed once: each must run clean now.
regressions=$src/test/fuzz/regressions/$target
if compgen -G "$regressions/*" >/dev/null; then
    "$bin" -runs=1 "$regressions"/* >"$logs/fuzz_$target.regressions" 2>&1 ||
        { tail -n 30 "$logs/fuzz_$target.regressions"; echo "FAIL: a regression input crashes fuzz_$target again"; exit 1; }
    echo "regression inputs: $(ls "$regressions" | wc -l) clean"
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
[[ -d $src/test/fuzz/corpus/$target ]] && cp "$src/test/fuzz/corpus/$target"/* "$scratch"/ 2>/dev/null
"$bin" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$logs/fuzz_$target-" "$scratch" >"$logs/fuzz_$target.out" 2>&1
rc=$?
grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+.*DONE" "$logs/fuzz_$target.out" | tr '\n' ' '
echo
if [[ $rc -ne 0 ]]; then
    tail -n 40 "$logs/fuzz_$target.out"
    echo "FAIL: fuzz_$target crashed; the input is $(ls "$logs"/fuzz_$target-* 2>/dev/null | head -n 1)"
    echo "      (fix the code, then keep the input in test/fuzz/regressions/$target/)"
    exit 1
fi
echo "ok: fuzz_$target ran ${seconds} s without a crash"
