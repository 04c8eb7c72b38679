#!/usr/bin/env bash
# Backward passes on the stand-in autograd engine (tests/progs/autograd N,
# its libtorch_cpu.so beside it): two threads each begin N passes at once,
# whose kernels the one engine thread launches; every launch of a pass sits
# under the engine thread's stack, then "[autograd thread for tid T]" (T the
# thread that began it), then the call into the engine and that thread's
# stack, counts and GPU time exact. A pass the probes never saw begin keeps
# the engine thread's own stack, counted caller_unknown; a node main runs of
# its own pass keeps main's stack, and so does a launch main makes after it,
# deeper than the node ran (neither is counted: both are main's own).
# Everything twice: with the node probe on every node, then with it taken
# away first (GP_TEST_QUIET_NODES=1: the programs begin passes until the
# loader has learnt the engine thread's call and taken the probe away,
# user/session/node_watch.h), where each launch reads its node's pass where
# the engine's loop keeps the task.
source "$(dirname "$0")/lib.sh"

SC="python3 $ROOT/tests/bpf/stack_check.py"
API=torch::autograd::Engine::execute_with_graph_task
N=6

check_main() { # the two callers' passes, the unseen one, main's own
	env LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/a.pb.gz" --libcuda "$STUBLIB" \
		--cupti "$B/stub/libcupti.so" -- "$PROGS/autograd" $N 2>"$WORK/a.err" >"$WORK/out" ||
		{ cat "$WORK/a.err" "$WORK/out"; fail "loader failed${1:-}"; }
	line=$(grep "^autograd: " "$WORK/out") || fail "autograd: $(cat "$WORK/out")"
	tid_a=$(echo "$line" | sed -n 's/.*tid_a=\([0-9]*\).*/\1/p')
	tid_b=$(echo "$line" | sed -n 's/.*tid_b=\([0-9]*\).*/\1/p')
	echo "$line" | grep -q "passes=$((2 * N + 1)) kernels=$((4 * N + 5))" || fail "autograd: $line"
	$SC "$WORK/a.pb.gz" under k_a $((2 * N)) $((4000 * N)) launch_a "[autograd thread for tid $tid_a]" \
		$API caller_a || { cat "$WORK/a.err"; fail "k_a not under caller_a${1:-}"; }
	$SC "$WORK/a.pb.gz" under k_b $((2 * N)) $((6000 * N)) launch_b "[autograd thread for tid $tid_b]" \
		$API caller_b || fail "k_b not under caller_b${1:-}"
	# The engine thread's own stack, whole: launch_orphan, the engine, thread_main, a root.
	$SC "$WORK/a.pb.gz" split k_orphan thread_main=1 || fail "the pass no probe saw begin${1:-}"
	python3 -c "import sys; sys.path.insert(0, '$ROOT/tests/bpf'); from stack_check import parse
sys.exit(any(f[0].startswith('[autograd') for s in parse('$WORK/a.pb.gz') if s[2][0][0] in ('k_orphan', 'k_own', 'k_after')
             for f in s[2]))" || fail "a launch in no other thread's pass is under a caller${1:-}"
	$SC "$WORK/a.pb.gz" split k_own own_pass=1 || fail "a node of main's own pass${1:-}"
	$SC "$WORK/a.pb.gz" split k_after deep_after=1 || fail "a launch after main's own pass${1:-}"
	[ "$(counter "$WORK/a.err" autograd_launches)" = $((4 * N + 1)) ] &&
		[ "$(counter "$WORK/a.err" under_caller)" = $((4 * N)) ] &&
		[ "$(counter "$WORK/a.err" caller_unknown)" = 1 ] && [ "$(counter "$WORK/a.err" own_thread)" = 0 ] &&
		[ "$(counter "$WORK/a.err" autograd_engines)" = 1 ] &&
		[ "$(counter "$WORK/a.err" unattributed)" = 0 ] ||
		{ grep "^counters:" "$WORK/a.err" | tail -1; fail "autograd counters${1:-}"; }
	ok "$((4 * N)) engine-thread launches under the thread that began each pass, exact; 1 without, counted${1:-}"
}

# The cases that are easy to get wrong (tests/progs/engine/cases.c).
cases() { # MODE: runs it, sets tid_a tid_b
	env LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/$1.pb.gz" --libcuda "$STUBLIB" \
		--cupti "$B/stub/libcupti.so" -- "$PROGS/autograd_cases" "$1" 2>"$WORK/$1.err" >"$WORK/$1.out" ||
		{ cat "$WORK/$1.err" "$WORK/$1.out"; fail "loader failed ($1)"; }
	line=$(grep "^autograd_cases: $1 " "$WORK/$1.out") || fail "autograd_cases $1: $(cat "$WORK/$1.out")"
	tid_a=$(echo "$line" | sed -n 's/.*tid_a=\([0-9]*\).*/\1/p')
	tid_b=$(echo "$line" | sed -n 's/.*tid_b=\([0-9]*\).*/\1/p')
}
no_marker() { # MODE KERNEL: none of KERNEL's stacks is under a caller
	python3 -c "import sys; sys.path.insert(0, '$ROOT/tests/bpf'); from stack_check import parse
sys.exit(any(f[0].startswith('[autograd') for s in parse('$WORK/$1.pb.gz') if s[2][0][0] == '$2'
             for f in s[2]))" || fail "$1: $2 is under a caller"
}
check_reent() {
	cases reent
	$SC "$WORK/reent.pb.gz" under k_inner 1 1000 launch_inner "[autograd thread for tid $tid_a]" $API caller_a ||
		fail "reent: the reentrant pass's launch not under caller_a"
	$SC "$WORK/reent.pb.gz" under k_b 1 3000 launch_b "[autograd thread for tid $tid_b]" $API caller_b ||
		fail "reent: the node it took of b's pass not under caller_b"
	[ "$(counter "$WORK/reent.err" nested)" = 1 ] || fail "reent: nested passes $(counter "$WORK/reent.err" nested)"
	ok "a reentrant backward on the engine thread: its launches under its outer caller, the node it took under its own"
}
only_marker() { # MODE KERNEL TID: KERNEL's stacks are under TID's caller or under none
	python3 -c "import sys; sys.path.insert(0, '$ROOT/tests/bpf'); from stack_check import parse
sys.exit(any(f[0].startswith('[autograd') and f[0] != '[autograd thread for tid $3]'
             for s in parse('$WORK/$1.pb.gz') if s[2][0][0] == '$2' for f in s[2]))" ||
		fail "$1: $2 is under another thread's caller than $3's"
}
# With the node probe away, the nodes a reentrant backward's inner loop takes
# are not seen: which pass each is of cannot be told, so each is counted
# caller_unknown, unless the probe was back before its node began (the
# begin asks for it, GP_BPF_AG_UNLEARNED: the program waits until it is).
check_reent_quiet() {
	cases reent
	only_marker reent k_inner "$tid_a"
	only_marker reent k_b "$tid_b"
	[ $(($(counter "$WORK/reent.err" caller_unknown) + $(counter "$WORK/reent.err" under_caller))) = 2 ] &&
		[ "$(counter "$WORK/reent.err" nested)" = 1 ] && [ "$(counter "$WORK/reent.err" probe_away)" = 1 ] &&
		[ "$(counter "$WORK/reent.err" probe_back)" = 1 ] ||
		{ grep "^counters:" "$WORK/reent.err" | tail -1; fail "reent, node probe away: counters"; }
	ok "a reentrant backward with the node probe away: its inner nodes' launches counted caller_unknown, never guessed; the probe put back"
}
check_lost() {
	cases lost
	$SC "$WORK/lost.pb.gz" under k_b 1 3000 launch_b "[autograd thread for tid $tid_b]" $API caller_b_reuse ||
		fail "lost: b's pass"
	$SC "$WORK/lost.pb.gz" split k_inner thread_main=1 || fail "lost: the unseen pass's launch"
	no_marker lost k_inner
	$SC "$WORK/lost.pb.gz" split k_post thread_main=1 || fail "lost: the unseen pass's final callback"
	no_marker lost k_post
	[ "$(counter "$WORK/lost.err" caller_unknown)" = 2 ] && [ "$(counter "$WORK/lost.err" after_node)" = 0 ] ||
		fail "lost: caller_unknown $(counter "$WORK/lost.err" caller_unknown) after_node $(counter "$WORK/lost.err" after_node)"
	ok "a pass never seen to begin at a finished pass's address: its own stack, counted (its node and its final callback), not the old caller${1:-}"
}
check_stale() {
	cases stale
	$SC "$WORK/stale.pb.gz" under k_b 1 3000 launch_b "[autograd thread for tid $tid_b]" $API caller_b_reuse ||
		fail "stale: b's pass"
	$SC "$WORK/stale.pb.gz" split k_after deep_after=1 || fail "stale: main's launch after its passes"
	no_marker stale k_after
	ok "main's own reentrant pass, its address reused by another thread: main's later launch stays its own${1:-}"
}
check_graph() {
	cases graph
	$SC "$WORK/graph.pb.gz" graph-under k_graph 3 6000 capture_graph replay_node \
		"[autograd thread for tid $tid_b]" $API caller_g || fail "graph: a replay on the engine thread"
	[ "$(counter "$WORK/graph.err" under_capture)" = 3 ] && [ "$(counter "$WORK/graph.err" under_caller)" = 3 ] ||
		{ grep "^counters:" "$WORK/graph.err" | tail -1; fail "graph: counters"; }
	ok "a graph the engine thread replayed: its kernels under the capture, the replay, then the pass's caller${1:-}"
}
check_post() {
	cases post
	$SC "$WORK/post.pb.gz" under k_b 2 6000 launch_b "[autograd thread for tid $tid_b]" $API caller_p ||
		fail "post: the pass's nodes"
	$SC "$WORK/post.pb.gz" under k_post 1 1000 final_cb "[autograd thread for tid $tid_b]" $API caller_p ||
		fail "post: the final callback's launch, after the last node returned"
	[ "$(counter "$WORK/post.err" under_caller)" = 3 ] && [ "$(counter "$WORK/post.err" after_node)" = 1 ] ||
		{ grep "^counters:" "$WORK/post.err" | tail -1; fail "post: counters"; }
	ok "a pass's final callback, run by the engine thread after its last node: under the pass's caller, counted after_node${1:-}"
}
# The engine probed at the module load: the program launches nothing until
# it is (a module load is a driver call the probes see between duty windows
# too, where a first launch may wait for a window).
check_unlaunched() {
	cases unlaunched
	$SC "$WORK/unlaunched.pb.gz" under k_b 2 6000 launch_b "[autograd thread for tid $tid_b]" $API caller_p ||
		fail "unlaunched: the pass's nodes"
	[ "$(counter "$WORK/unlaunched.err" under_caller)" = 3 ] ||
		{ grep "^counters:" "$WORK/unlaunched.err" | tail -1; fail "unlaunched: counters"; }
	ok "an engine probed at the process's module load, before any launch: its passes under their caller"
}

# A process that maps libtorch only after its first driver call, and after
# the loader has stopped looking for it (GPUPROBE_TEST_AUTOGRAD_TRIES=1: one
# look, at the module load): its first launch starts the looks again.
# launched: it launched before too, and the looks at that launch ended as
# well (two "no autograd engine" lines); idle, it is not looked at again
# (idle_not_looked); it goes on launching after it maps libtorch, and is
# looked at again once it launched in two scans.
# The loader's own clock: wall_s of its last -v "loader:" line (empty before one).
loader_wall() { # ERR
	sed -n 's/^loader: .* wall_s=\([0-9.]*\) .*/\1/p' "$1" | tail -1
}
# Whether the loader's clock in ERR has passed FROM + 6.5 s (three scans, SCAN_NS 2 s).
three_scans_past() { # ERR FROM
	awk -v a="$(loader_wall "$1")" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 6.5) }'
}
# A target that launches nothing is not looked at again: three scans by
# the loader's clock pass with no look after the looks ended.
idle_not_looked() { # NAME
	local from
	# The lines that ended the looks are written inside a tick, its "loader:"
	# line after them: there may be none yet, and the last one may be the
	# tick's before, a tick early at most (three scans take 6 s of the 6.5).
	wait_line "$WORK/$1.err" "^loader: .* wall_s=" 30 || fail "$1: the loader wrote no -v \"loader:\" line"
	from=$(loader_wall "$WORK/$1.err")
	wait_until 30 three_scans_past "$WORK/$1.err" "$from" ||
		fail "$1: the loader's clock did not reach $from + 6.5 s (at $(loader_wall "$WORK/$1.err"))"
	! grep -q "autograd engine looked for again" "$WORK/$1.err" ||
		fail "$1: looked for again while it launched nothing"
}
check_late() { # [launched]
	local mode=${1:-} name=late${1:+_$1} lpid ppid caller gaveup=1
	[ -n "$mode" ] && gaveup=2
	GPUPROBE_TEST_AUTOGRAD_TRIES=1 LD_LIBRARY_PATH="$B/stub" "$LOADER" -v -o "$WORK/$name.pb.gz" \
		--libcuda "$STUBLIB" --cupti "$B/stub/libcupti.so" -- "$PROGS/autograd_late" $mode \
		2>"$WORK/$name.err" >"$WORK/$name.out" &
	lpid=$!
	PIDS+=($lpid)
	for _ in $(seq 600); do # a minute at most, for the lines
		[ "$(grep -c "no autograd engine after 1 looks" "$WORK/$name.err")" -ge $gaveup ] &&
			grep -q "^autograd_late: waiting" "$WORK/$name.out" && break
		kill -0 $lpid 2>/dev/null || break
		sleep 0.1
	done
	ppid=$(sed -n 's/^autograd_late: waiting pid=\([0-9]*\)$/\1/p' "$WORK/$name.out")
	[ "$(grep -c "no autograd engine after 1 looks" "$WORK/$name.err")" -ge $gaveup ] && [ -n "$ppid" ] ||
		{ kill $lpid 2>/dev/null; wait $lpid; cat "$WORK/$name.err" "$WORK/$name.out"; fail "$name: the loader never gave up its looks"; }
	[ -n "$mode" ] && idle_not_looked "$name"
	kill -USR1 "$ppid" || fail "$name: autograd_late ($ppid) is gone before its signal"
	wait $lpid || { cat "$WORK/$name.err" "$WORK/$name.out"; fail "loader failed ($name)"; }
	caller=$(sed -n 's/^autograd_late: caller=\([0-9]*\)$/\1/p' "$WORK/$name.out")
	$SC "$WORK/$name.pb.gz" under k_late 2 6000 launch_l "[autograd thread for tid $caller]" $API caller_l ||
		fail "$name: the pass's nodes"
	[ "$(counter "$WORK/$name.err" under_caller)" = 2 ] && [ "$(counter "$WORK/$name.err" autograd_engines)" = 1 ] ||
		{ grep "^counters:" "$WORK/$name.err" | tail -1; fail "$name: counters"; }
	if [ -n "$mode" ]; then
		grep -q "autograd engine looked for again$" "$WORK/$name.err" ||
			fail "$name: probed, but not by a look after the looks ended"
		ok "libtorch mapped after the looks at the first launch ended too: not looked for while idle, looked for again while it launches, its pass under its caller"
	else
		ok "libtorch mapped after the loader's looks at the module load ended: looked for again at the first launch, its pass under its caller"
	fi
}

check_main
# Every node seen: N passes of 2 nodes from each caller, the unseen pass's, main's own;
# three callers (main's own pass is one).
[ "$(counter "$WORK/a.err" autograd_nodes)" = $((4 * N + 2)) ] &&
	[ "$(counter "$WORK/a.err" autograd_passes)" = $((2 * N + 1)) ] &&
	[ "$(counter "$WORK/a.err" callers)" = 3 ] && [ "$(counter "$WORK/a.err" probe_away)" = 0 ] ||
	{ grep "^counters:" "$WORK/a.err" | tail -1; fail "autograd: nodes and passes"; }
check_reent
check_lost
check_stale
check_graph
check_post
check_unlaunched
check_late
check_late launched

export GP_TEST_QUIET_NODES=1
check_main ", the node probe away"
# main's passes before the probe went away are a fourth caller; none of the
# passes after it had its nodes seen.
[ "$(counter "$WORK/a.err" callers)" = 4 ] && [ "$(counter "$WORK/a.err" probe_away)" = 1 ] &&
	[ "$(counter "$WORK/a.err" probe_back)" = 0 ] && [ "$(counter "$WORK/a.err" learnt)" = 1 ] ||
	{ grep "^counters:" "$WORK/a.err" | tail -1; fail "autograd, the node probe away: callers"; }
check_reent_quiet
check_lost ", the node probe away"
check_stale ", the node probe away"
check_graph ", the node probe away"
check_post ", the node probe away"
