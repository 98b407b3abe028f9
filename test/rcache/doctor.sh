#!/bin/bash
# axon_info --doctor reports the registration cache's real state: on with the
# memory hooks installed (a sanitizer build: off, for the sanitizer), and
# off with the reason under AXON_RCACHE=off.
set -u
info="$AXON_BUILDDIR/src/tools/axon_info"
fail=0
want="registration cache: on: memory hooks patched into libc"
grep -q -- "--enable-sanitizers" <("$AXON_BUILDDIR/config.status" --config) &&
  want="registration cache: off: a sanitizer"
line=$("$info" --doctor 2>&1 | grep "registration cache:")
echo "$line"
[[ "$line" == *"$want"* ]] || { echo "FAIL: expected '$want'"; fail=1; }
line=$(AXON_RCACHE=off "$info" --doctor 2>&1 | grep "registration cache:")
echo "$line"
[[ "$line" == *"registration cache: off: AXON_RCACHE=off"* ]] || { echo "FAIL: AXON_RCACHE=off not reported"; fail=1; }
[[ $fail -eq 0 ]] && echo "doctor: ok"
exit $fail
