#!/bin/bash
# local_agent.sh HOST COMMAND... -- a launch agent (--launch-agent
# ".../local_agent.sh {}") that runs the daemon of "host" HOST on this very
# machine, so mpirun's multi-node paths (daemons, their handshake and
# addresses, routing, remote working directories and environments) are
# tested without a second machine. Like ssh, it gives the daemon a fresh
# login environment rather than mpirun's (PATH, HOME, and what the build
# needs to find its libraries); the secret arrives on stdin, as through ssh.
shift
exec env -i PATH="$PATH" HOME="${HOME:-/}" ${LD_LIBRARY_PATH:+LD_LIBRARY_PATH="$LD_LIBRARY_PATH"} \
    ${TMPDIR:+TMPDIR="$TMPDIR"} "$@"
