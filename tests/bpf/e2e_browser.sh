#!/usr/bin/env bash
# The profile and the timeline of a run, opened in a real browser (Debian's
# Chromium, headless; tests/browser/view_check.py): pprof's own web UI draws
# the profile's flame graph with its whole GPU time at the root and a box
# for each kernel and launch site; speedscope (from npm, build/browser)
# opens the --trace timeline with a profile per track, named as the file
# names them, each covering the time its slices cover, the GPU tracks
# together the profile's GPU time (within a ns a slice), every track's slices
# nested as viewers read them. Screenshots go to build/browser/shots.
source "$(dirname "$0")/lib.sh"

SPEEDSCOPE="$B/browser/node_modules/speedscope/dist/release"
[ -f "$SPEEDSCOPE/index.html" ] || fail "speedscope is not under $B/browser (make $SPEEDSCOPE/index.html)"
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] && /usr/bin/python3 -c 'import selenium' 2>/dev/null ||
	fail "no Chromium, chromedriver or python3-selenium (sudo make deps installs them)"

LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/l.pb.gz" --trace "$WORK/l.json" -- \
	"$PROGS/launcher" -t 4 -n 100 >"$WORK/out" 2>"$WORK/err" || fail "loader: $(tail -3 "$WORK/err")"
ns=$($CHECK "$WORK/l.pb.gz" totals | awk '{ n += $(NF - 1) } END { print n + 0 }')
[ "$ns" -gt 0 ] || fail "no GPU time in the profile"
res=$(/usr/bin/python3 "$ROOT/tests/browser/view_check.py" "$WORK/l.pb.gz" "$ns" "$WORK/l.json" "$SPEEDSCOPE" "$WORK" \
	gemm softmax lib_scale graph_k1 site_a site_c worker "[graph captured at]") || fail "in the browser (above)"
# The timeline's times are steps of 1/1024 us (user/output/trace.c), each end
# within half a ns: the tracks' total within a ns a slice of the profile's.
gpu_us=$(echo "$res" | sed -n 's/.*GPU tracks covering \([0-9.]*\) us.*/\1/p')
slices=$(echo "$res" | sed -n 's/.* us in \([0-9]*\) slices.*/\1/p')
awk -v u="$gpu_us" -v n="$ns" -v k="$slices" 'BEGIN { d = u * 1000 - n; exit !(k > 0 && d <= k && -d <= k) }' ||
	fail "speedscope's GPU tracks cover $gpu_us us in $slices slices, the profile holds $ns ns"
mkdir -p "$B/browser/shots" && cp "$WORK/flamegraph.png" "$WORK/timeline.png" "$B/browser/shots/"
ok "$res"
