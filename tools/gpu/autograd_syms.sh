#!/bin/bash
# Facts for the backward half of issue 22, from the H200's PyTorch: which
# autograd engine functions libtorch exports, their entry instructions, and
# (tracefs uprobes, no BPF tool needed) which threads call them during
# tools/gpu/autograd.py with what first word behind their reference
# arguments. Writes $OUT/autograd_syms.txt. Run as root from the repo root.
set -u
PY=${PY:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-/tmp}
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
LIB=$site/torch/lib/libtorch_cpu.so
PLIB=$site/torch/lib/libtorch_python.so
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T 2>/dev/null || T=/sys/kernel/debug/tracing
log=$OUT/autograd_syms.txt
exec >"$log" 2>&1

# file offset of a dynamic symbol: its value less its LOAD segment's vaddr - offset
off() {
	local lib=$1 sym=$2 v
	v=$(nm -D --defined-only "$lib" | awk -v s="$sym" '$3 == s { print $1; exit }')
	[ -n "$v" ] || return 1
	readelf -lW "$lib" | $PY -c '
import sys
v = int(sys.argv[1], 16)
for l in sys.stdin:
    f = l.split()
    if f and f[0] == "LOAD":
        o, va, sz = int(f[1], 16), int(f[2], 16), int(f[5], 16)
        if va <= v < va + sz:
            print(hex(v - va + o)); break' "$v"
}
# the mangled name of the libtorch_cpu symbol Engine::<len><name>
sym() { nm -D --defined-only "$LIB" | awk -v p="_ZN5torch8autograd6Engine$1" 'index($3, p) == 1 { print $3; exit }'; }

echo "== exported engine symbols (libtorch_cpu, libtorch_python)"
for l in "$LIB" "$PLIB"; do
	nm -D --defined-only "$l" | grep -E 'autograd(6Engine|6python12PythonEngine)' |
		grep -E 'execute|evaluate_function|thread_main|thread_init' | while read -r v t s; do
		echo "$(basename "$l") $v $t $s $(echo "$s" | c++filt)"
	done
done

EWGT=$(sym 23execute_with_graph_task)
EVAL=$(sym 17evaluate_function)
TMAIN=$(sym 11thread_main)
for s in $EWGT $EVAL $TMAIN; do
	o=$(off "$LIB" $s) || { echo "no symbol $s"; continue; }
	v=$(nm -D --defined-only "$LIB" | awk -v s="$s" '$3 == s { print $1; exit }')
	echo "== $s at file offset $o"
	objdump -d --no-show-raw-insn --start-address=0x$v --stop-address=$((16#$v + 160)) "$LIB" | tail -n +7 | head -45
done

echo "== tracefs uprobes"
echo > $T/uprobe_events
add() { echo "$1" >> $T/uprobe_events || echo "cannot add: $1"; }
o=$(off "$LIB" $EWGT) && add "p:gpa/ewgt $LIB:$o di=%di si=%si dx=%dx si0=+0(%si):x64 dx0=+0(%dx):x64" &&
	add "r:gpa/ewgt_ret $LIB:$o ax=%ax"
o=$(off "$LIB" $EVAL) && add "p:gpa/eval $LIB:$o si0=+0(%si):x64 dx=%dx"
o=$(off "$LIB" $TMAIN) && add "p:gpa/tmain $LIB:$o si0=+0(%si):x64" && add "r:gpa/tmain_ret $LIB:$o"
cat $T/uprobe_events
echo 1 > $T/events/gpa/enable
echo > $T/trace
for mode in eager compile two; do
	echo "== MODE=$mode"
	echo "mark $mode" > $T/trace_marker
	MODE=$mode STEPS=4 $PY tools/gpu/autograd.py 2>&1 | tail -3
done
echo 0 > $T/events/gpa/enable
cp $T/trace $OUT/autograd_trace.txt
echo "== events by thread name and event"
grep -v '^#' $T/trace | awk '{ print $1, $5 }' | sed 's/-[0-9]* / /' | sort | uniq -c | sort -rn | head -40
echo "== first 60 events"
grep -v '^#' $T/trace | head -60
echo "== distinct graph tasks per event (eval si0 vs ewgt dx0/si0)"
grep -o 'ewgt: ([^)]*) di=[^ ]* si=[^ ]* dx=[^ ]* si0=[^ ]* dx0=[^ ]*' $T/trace | head -20
grep -o 'eval: ([^)]*) si0=[^ ]*' $T/trace | awk '{ print $3 }' | sort | uniq -c | head -20
echo > $T/uprobe_events
