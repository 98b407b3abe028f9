#!/bin/bash
# flood_agent.sh FLOODER HOST COMMAND... -- a launch agent for flood.sh: it
# floods the port the daemon will connect back to (the PORT after
# "--daemon ADDRESSES") from 127.0.0.1 with hundreds of connections that
# are not daemons (idle, stalled, junk), waits until they are in, and then
# runs the daemon here as local_agent.sh does.
flooder=$1
shift 2
port=
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  [[ ${args[i]} == --daemon ]] && port=${args[i + 2]}
done
go=$(mktemp)
rm -f "$go"
"$flooder" "$port" 1 6 300 "$go" >"$go.log" 2>&1 &
for _ in $(seq 100); do [[ -e $go ]] && break; sleep 0.05; done
rm -f "$go" "$go.log"
exec env -i PATH="$PATH" HOME="${HOME:-/}" ${LD_LIBRARY_PATH:+LD_LIBRARY_PATH="$LD_LIBRARY_PATH"} \
    ${TMPDIR:+TMPDIR="$TMPDIR"} "$@"
