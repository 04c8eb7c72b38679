#!/usr/bin/env bash
# A kernel without BTF, or without uprobes, is one clear line naming the
# kernel option to turn on, and exit status 1, in every mode, before anything
# runs. Simulated in a private mount namespace: an empty tmpfs over
# /sys/kernel/btf, or over the uprobe PMU's sysfs directory.
source "$(dirname "$0")/lib.sh"

command -v unshare >/dev/null || skip "no unshare"
unshare -m true 2>/dev/null || skip "unshare -m refused"
BTF=/sys/kernel/btf UPROBE=/sys/bus/event_source/devices/uprobe
[ -e "$BTF/vmlinux" ] || skip "this kernel really has no BTF"
[ -e "$UPROBE/type" ] || skip "this kernel really has no uprobe PMU"

# Runs until told to stop (-s 0): it must outlive the checks, however long they take.
start_stub "$PROGS/spin" -s 0 -i 2000 >"$WORK/a.log"; A=${PIDS[-1]}
wait_file "$WORK/a.log" 30

hidden() { # DIR ERRFILE LOADER-ARGS...: runs the loader with DIR emptied
	local dir=$1 err=$2; shift 2
	# unshare(1) makes the new namespace's mounts private: the host keeps its /sys.
	unshare -m sh -c 'mount -t tmpfs gpuprobe-test "$0" && exec "$@"' "$dir" "$LOADER" "$@" \
		>"$WORK/out" 2>"$err"
}

check() { # WHAT DIR PATTERN
	local what=$1 dir=$2 pat=$3 rc mode
	for mode in all pid cmd; do
		rm -f "$WORK/ran" "$WORK/x.pb.gz"
		set +e
		case $mode in
		all) hidden "$dir" "$WORK/err" --all-cgroups -d 1 -o "$WORK/x.pb.gz" ;;
		pid) hidden "$dir" "$WORK/err" --pid "$A" -d 1 -o "$WORK/x.pb.gz" ;;
		cmd) hidden "$dir" "$WORK/err" -o "$WORK/x.pb.gz" -- touch "$WORK/ran" ;;
		esac
		rc=$?
		set -e
		[ $rc = 1 ] || { cat "$WORK/err"; fail "$what ($mode): exit status $rc, want 1"; }
		[ "$(wc -l <"$WORK/err")" = 1 ] || { cat "$WORK/err"; fail "$what ($mode): not one line"; }
		grep -q "^gpuprobe-bpf: .*$pat" "$WORK/err" || { cat "$WORK/err"; fail "$what ($mode): the line does not say $pat"; }
		grep -qi "libbpf\|errno\|-[0-9]\+" "$WORK/err" && { cat "$WORK/err"; fail "$what ($mode): a raw error"; }
		[ -e "$WORK/ran" ] && fail "$what ($mode): the command ran"
		[ -e "$WORK/x.pb.gz" ] && fail "$what ($mode): a profile was written"
	done
	[ -e "$dir" ] && [ -n "$(ls "$dir")" ] || fail "the host's $dir was hidden too"
	ok "$what: exit 1, one line: $(cat "$WORK/err")"
}
check "no BTF" "$BTF" "no BTF.*CONFIG_DEBUG_INFO_BTF=y"
check "no uprobes" "$UPROBE" "no uprobe support.*CONFIG_UPROBE_EVENTS"
kill -0 "$A" || fail "the program died"
kill "$A"; wait "$A" || fail "the program failed"
ok "the program was left alone"
