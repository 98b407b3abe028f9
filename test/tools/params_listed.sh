#!/bin/bash
# Every AXON_* variable the sources read must be listed by axon_info --params
# with a default and a description, and the listing must have no extras.
set -u
info="$AXON_BUILDDIR/src/tools/axon_info"
declared=$(grep -rhoE '"AXON_[A-Z0-9_]+"' "$AXON_SRCDIR/src" | tr -d '"' | sort -u)
listed=$("$info" --params | grep -oE '^AXON_[A-Z0-9_]+' | sort -u)
[[ -n "$declared" ]] || { echo "found no AXON_ parameter in the sources"; exit 1; }
if [[ "$declared" != "$listed" ]]; then
  echo "declared in src/ but not listed, or listed but not declared:"
  diff <(echo "$declared") <(echo "$listed")
  exit 1
fi
# Each entry has a description line ending with its default.
missing=$("$info" --params | awk '/^AXON_/ {name=$1; getline; if ($0 !~ /\(default: [^)]*\)$/) print name}')
[[ -z "$missing" ]] || { echo "no default shown for: $missing"; exit 1; }
echo "$(echo "$declared" | wc -l) parameters listed"
