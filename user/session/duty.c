/* SPDX-License-Identifier: MIT */
/* The duty cycle's windows (duty.h). */
#include <string.h>
#include "user/session/duty.h"

static __u64 next_rand(struct duty *d)
{
	__u64 x = d->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	d->rng = x;
	return x;
}

/* A draw in [0, n]: the modulo's bias is below 2^-20 for any period under 12 days. */
static __u64 draw(struct duty *d, __u64 n)
{
	return next_rand(d) % (n + 1);
}

/* Windows and their length for one period: as many of window_ns as the fraction holds. */
static void plan_sizes(const struct duty *d, unsigned *ret_n, __u64 *ret_len)
{
	__u64 on = (__u64)(d->fraction * (double)d->period_ns);
	__u64 n = d->window_ns ? on / d->window_ns : 1;

	if (n > DUTY_WINDOWS_MAX)
		n = DUTY_WINDOWS_MAX;
	if (!n) {
		n = 1;
		on = d->window_ns < d->period_ns ? d->window_ns : d->period_ns;
	}
	*ret_n = (unsigned)n;
	*ret_len = on / n;
}

/*
 * n windows of len at random in [start, start + period): n sorted uniform
 * draws in the free time, the i-th window after i windows' worth of it.
 */
static void plan(struct duty *d, __u64 start)
{
	__u64 len, free;
	unsigned n;

	d->period_start = start;
	if (d->fraction >= 1.0) {
		d->nr = 1;
		d->from[0] = start;
		d->to[0] = start + d->period_ns;
		return;
	}
	plan_sizes(d, &n, &len);
	free = d->period_ns - (__u64)n * len;
	for (unsigned i = 0; i < n; i++)
		d->from[i] = draw(d, free);
	for (unsigned i = 1; i < n; i++) /* insertion sort: n is small */
		for (unsigned k = i; k > 0 && d->from[k - 1] > d->from[k]; k--) {
			__u64 t = d->from[k];

			d->from[k] = d->from[k - 1];
			d->from[k - 1] = t;
		}
	for (unsigned i = 0; i < n; i++) {
		d->from[i] += start + (__u64)i * len;
		d->to[i] = d->from[i] + len;
	}
	d->nr = n;
}

void duty__init(struct duty *d, double fraction, __u64 window_ns, __u64 period_ns, __u64 now,
		__u64 seed)
{
	memset(d, 0, sizeof(*d));
	d->fraction = fraction > 0 && fraction < 1.0 ? fraction : 1.0;
	d->window_ns = window_ns ? window_ns : 1;
	d->period_ns = period_ns ? period_ns : 1;
	d->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
	plan(d, now);
}

bool duty__on(struct duty *d, __u64 now)
{
	if (now >= d->period_start + d->period_ns) {
		__u64 periods = (now - d->period_start) / d->period_ns;

		plan(d, d->period_start + periods * d->period_ns);
	}
	for (unsigned i = 0; i < d->nr; i++)
		if (now >= d->from[i] && now < d->to[i])
			return true;
	return false;
}

double duty__fraction(const struct duty *d)
{
	unsigned n;
	__u64 len;

	if (d->fraction >= 1.0)
		return 1.0;
	plan_sizes(d, &n, &len);
	return (double)n * (double)len / (double)d->period_ns;
}

bool duty_wait__waited(const struct duty_wait *w)
{
	return w->strikes < DUTY_MAX_STRIKES;
}

bool duty_wait__note(struct duty_wait *w, bool recording)
{
	if (duty_wait__waited(w)) {
		if (recording || ++w->strikes < DUTY_MAX_STRIKES)
			return false;
		w->good = 0;
		return true;
	}
	w->good = recording ? w->good + 1 : 0;
	if (w->good >= DUTY_EARN_BACK)
		*w = (struct duty_wait){ 0 };
	return false;
}
