# Shared by the test runners (tools/run-tests.sh, tools/run-fuzzers.sh) and
# make check's total (tools/check-summary.sh); sourced, not run.
#
# Every test ends in one verdict: passed, failed or skipped. A script or a
# command skips by exiting 77 (automake's convention) after printing why on
# its last line; a cmocka case skips with skip() after printing why (see
# tests/skip.h). With GP_SUMMARY set (make check), each verdict is appended
# there as one line: VERDICT<TAB>SUITE<TAB>NAME<TAB>DETAIL, VERDICT one of
# pass, fail, skip.

GP_SKIP=77

# record VERDICT SUITE NAME [DETAIL]
record() {
	[ -n "${GP_SUMMARY:-}" ] || return 0
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(printf '%s' "${4:-}" | tr '\t\n' '  ')" >>"$GP_SUMMARY"
}

# True when this machine can run every test: make check as root where BPF
# works (CI's machine). There a skip is a test that should have run, and fails
# the run; elsewhere (not root) the root-only tests are skipped, and said so.
# GP_CAN_RUN_ALL=1 or 0 overrides the probe (for the runners' own tests).
can_run_all() {
	case "${GP_CAN_RUN_ALL:-}" in
	1) return 0 ;;
	0) return 1 ;;
	esac
	[ "$(id -u)" = 0 ] && bpftool prog show >/dev/null 2>&1
}

# Indents a log excerpt under a verdict line.
indent() { sed 's/^/    | /'; }
