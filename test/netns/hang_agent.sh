#!/bin/sh
# A launch agent whose daemon never connects back (a host that hangs).
exec sleep 60
