#!/usr/bin/env bash
# Prints again what each failed Ginkgo spec and Go test said, from a test
# run's log, for the end of that log: a CI log is often read from its last
# lines, which otherwise say where a spec failed and not why. Timelines and
# captured output are left out; they stay in the log above.
#
# Usage: hack/test-failures.sh LOG [MAX_LINES]
set -euo pipefail

log=${1:?usage: hack/test-failures.sh LOG [MAX_LINES]}
max_lines=${2:-80}

echo "What the failed tests said (from ${log}):"
# Ginkgo colours its report; the patterns match the text without colour.
sed -e 's/\x1b\[[0-9;]*m//g' "$log" | awk -v max="$max_lines" '
  function out(line) {
    if (line == "" && blank) return
    blank = line == ""
    if (n < max) print line
    n++
  }
  # A failed spec or suite node: "• [FAILED] [2.0 seconds]" and the like.
  /\[(FAILED|PANICKED!|TIMEDOUT|INTERRUPTED|ABORTED)\] \[[0-9.]+ seconds\]$/ {
    spec = 1; skip = 0; out(""); out($0); next
  }
  spec && /^-+$/ { spec = 0; next }
  spec && /^ *(Timeline|Captured .*) >>$/ { skip = 1; next }
  spec && skip && /^ *<< (Timeline|Captured )/ { skip = 0; next }
  spec && !skip { out($0); next }
  # A failed Go test and its indented messages.
  /^--- FAIL: / { test = 1; out(""); out($0); next }
  test && /^    / { out($0); next }
  { test = 0 }
  END { if (n > max) print "... and " n - max " more lines; the whole report is above." }
'
