/* SPDX-License-Identifier: MIT */
/*
 * The duty cycle (README, "Duty cycle"): within every period, windows at
 * random offsets, at least window_ns each, together the chosen fraction of
 * the period. Random, not periodic, so that a workload's own period cannot
 * keep its steps out of (or in) every window. Plain arithmetic on the
 * times it is given: the session asks it, at each tick, whether now is in
 * a window.
 */
#ifndef GP_SESSION_DUTY_H
#define GP_SESSION_DUTY_H

#include <stdbool.h>
#include <linux/types.h>

/* Windows a period holds at most: a shorter --window than period / this is lengthened. */
#define DUTY_WINDOWS_MAX 64

struct duty {
	double fraction;          /* of each period, in windows; 1: always on */
	__u64 window_ns;          /* a window's least length */
	__u64 period_ns;
	__u64 period_start;       /* the current period's start */
	__u64 from[DUTY_WINDOWS_MAX], to[DUTY_WINDOWS_MAX]; /* its windows, in order */
	unsigned nr;
	__u64 rng;                /* xorshift64 state, never 0 */
};

/*
 * Plans the first period from now. fraction in (0, 1]; window_ns > 0;
 * period_ns > 0; seed: any (0 picks a fixed one). When the fraction of a
 * period is shorter than a window, each period has one window of
 * window_ns: duty__fraction says what that makes.
 */
void duty__init(struct duty *d, double fraction, __u64 window_ns, __u64 period_ns, __u64 now,
		__u64 seed);
/* Whether now is in a window; a period that ended is followed by a newly planned one. */
bool duty__on(struct duty *d, __u64 now);
/* The fraction of each period its windows take (what was asked, or more: see duty__init). */
double duty__fraction(const struct duty *d);

/*
 * Whether a window's opening waits for one target's shim to record. A
 * target found not recording when a window opened after the whole wait,
 * DUTY_MAX_STRIKES times, is waited for no more: one that never records (or
 * switches on just late, at will) would otherwise choose when every
 * tenant's windows open, and shorten them each. It is waited for again once
 * found recording at DUTY_EARN_BACK openings in a row (a healthy shim
 * starved three times in a long run): one that spoils three windows and
 * behaves for the rest delays at most 3 in DUTY_MAX_STRIKES + DUTY_EARN_BACK.
 */
#define DUTY_MAX_STRIKES 3
#define DUTY_EARN_BACK 32

struct duty_wait {
	__u8 strikes; /* openings it was not recording at, while waited for */
	__u8 good;    /* then, openings in a row found recording */
};

/* Whether windows wait for this target. */
bool duty_wait__waited(const struct duty_wait *w);
/* At a window's opening, whether the target records: true when it is now waited for no more. */
bool duty_wait__note(struct duty_wait *w, bool recording);

#endif /* GP_SESSION_DUTY_H */
