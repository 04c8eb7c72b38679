#!/usr/bin/env bash
# One stage of make check: runs COMMAND and always exits 0, so the next stage
# runs too. The stage's runner records its own verdicts (tools/testlib.sh);
# when COMMAND fails without recording any (a build error: its runner never
# started), the stage itself is recorded as one failure, so the total says so.
# Usage: check-stage.sh SUITE COMMAND...
set -uo pipefail
source "$(dirname "$0")/testlib.sh"
suite=$1; shift
lines() { [ -f "${GP_SUMMARY:-}" ] && wc -l <"$GP_SUMMARY" || echo 0; }
before=$(lines)
echo "check: $suite: $*"
"$@"
rc=$?
if [ $rc != 0 ] && [ "$(lines)" = "$before" ]; then
	echo "check: $suite: '$*' failed (exit $rc) before any test ran: see above" >&2
	record fail "$suite" "(stage)" "'$*' exit $rc before any test ran (a build error?)"
fi
exit 0
