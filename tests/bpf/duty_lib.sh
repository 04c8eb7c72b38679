# What the duty-cycle tests share (sourced after lib.sh): the windows as the
# loader logged them, and the profile held against spin's launch times.

# The loader's window edges from its -v log ERR, into EDGES: "open NS",
# "close NS", "stop NS" (a window open at the stop ends there).
duty_edges() { # ERR EDGES
	sed -n 's/.*duty: window open at \([0-9]*\) .*/open \1/p; s/.*duty: window closed at \([0-9]*\) .*/close \1/p;
		s/.*stopping at \([0-9]*\) .*/stop \1/p' "$1" >"$2"
}

# How many of spin's launch times (TIMES, one CLOCK_MONOTONIC ns a line) fall inside the windows of EDGES.
duty_inside() { # EDGES TIMES
	awk 'NR == FNR { if ($1 == "open") { o[++n] = $2; c[n] = 0 } else if ($1 == "close" && n) c[n] = $2;
			else if ($1 == "stop" && n && !c[n]) c[n] = $2; next }
		{ for (i = 1; i <= n; i++) if ($1 >= o[i] && (!c[i] || $1 < c[i])) { k++; break } }
		END { print k + 0 }' "$1" "$2"
}

# Spin's profiles P... (summed) against its launch times: only spin_kernel's
# launches (and launches labelled made before the shim recorded), each 1000
# ns of GPU time, as many as were made inside the NWIN windows of EDGES
# within one launch per edge. Sets DUTY_JOINED, DUTY_LABELLED, DUTY_INSIDE,
# DUTY_TOTAL.
duty_check_profile() { # EDGES TIMES NWIN P...
	local edges=$1 times=$2 nwin=$3 n ns got diff p; shift 3
	for p in "$@"; do $CHECK "$p" totals; done |
		awk '{ k = $1; for (i = 2; i <= NF - 2; i++) k = k " " $i; ns[k] += $(NF - 1); c[k] += $NF }
			END { for (k in ns) print k, ns[k], c[k] }' >"$WORK/totals"
	n=$(awk '$1=="spin_site" && $2=="spin_kernel" {print $4}' "$WORK/totals")
	ns=$(awk '$1=="spin_site" && $2=="spin_kernel" {print $3}' "$WORK/totals")
	DUTY_LABELLED=$(awk '$1 == "spin_site" && /before the shim recorded/ {n += $NF} END {print n + 0}' "$WORK/totals")
	grep -v "^spin_site spin_kernel \|^spin_site \[no GPU record: before the shim recorded\] 0 " "$WORK/totals" &&
		fail "samples other than spin_kernel's and launches labelled before recording (above)"
	[ "${n:-0}" -ge 100 ] && [ "$ns" = $((n * 1000)) ] || { cat "$WORK/totals"; fail "joined $n launches, GPU time $ns ns (want n x 1000)"; }
	DUTY_JOINED=$n
	DUTY_INSIDE=$(duty_inside "$edges" "$times")
	DUTY_TOTAL=$(wc -l <"$times")
	got=$((n + DUTY_LABELLED))
	diff=$((got > DUTY_INSIDE ? got - DUTY_INSIDE : DUTY_INSIDE - got))
	[ "$diff" -le $((2 * nwin)) ] || { cat "$edges"; fail "$got launches in the profiles, $DUTY_INSIDE made inside the $nwin windows"; }
}

# The loader's last counters line of ERR, into CTR, holding each of NAME=VALUE...
duty_counters() { # ERR CTR NAME=VALUE...
	local err=$1 ctr=$2 c; shift 2
	grep "^counters: " "$err" | tail -1 >"$ctr"
	for c in "$@"; do
		grep -q " $c " "$ctr" || { cat "$ctr"; fail "counters: want $c"; }
	done
}
