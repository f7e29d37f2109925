/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * DCQCN rate control arithmetic (reaction point) and CNP pacing (notification
 * point), without timers, locks or packets: the caller feeds events (a CNP
 * arrived, the increase timer fired, bytes were sent) with the current time,
 * and reads back the rate to pace a QP at. Rates are in kbit/s, times in ns,
 * alpha in Q10 (1024 = 1.0).
 *
 * The algorithm is DCQCN (Zhu et al., SIGCOMM 2015) as RoCE NICs run it, with
 * the knobs of mlx5 (names and defaults in struct sroce_dcqcn_params):
 *  - a CNP cuts the current rate:  RC <- RC * (1 - alpha / 2), no lower than
 *    RC * min_dec_fac% and min_rate, at most once per
 *    rate_reduce_monitor_period; the target rate RT takes RC first when
 *    clamp_tgt_rate is set, or when clamp_tgt_rate_after_time_inc is set and
 *    the timer raised the rate since the last cut;
 *  - alpha is updated once per dce_tcp_rtt period: alpha <- g * alpha +
 *    (1 - g) if a CNP arrived in the period, else g * alpha, with g =
 *    dce_tcp_g / 1024. Periods are accounted lazily (in closed form) at the
 *    next event, so no timer runs at the period's microsecond scale;
 *  - every rpg_time_reset (timer) and every rpg_byte_reset bytes sent (byte
 *    counter) the rate rises: fast recovery RC <- (RT + RC) / 2 while both
 *    stage counters are below rpg_threshold; additive increase (RT +=
 *    rpg_ai_rate) once either reaches it; hyper increase (RT += rpg_hai_rate)
 *    once both exceed it. RT is capped at the line (or rpg_max_rate) rate;
 *    when RC gets back there the QP is no longer limited.
 */
#ifndef SROCE_DCQCN_H
#define SROCE_DCQCN_H

#include "sroce_proto.h"

#define SROCE_DCQCN_ALPHA_ONE	1024u	/* alpha 1.0 in Q10 */

/* The knobs, with mlx5's names. Units in the comments; see the table. */
struct sroce_dcqcn_params {
	/* reaction point */
	u32 rp_enable;				/* 0/1 */
	u32 rpg_time_reset;			/* us: increase timer */
	u32 rpg_byte_reset;			/* bytes: increase byte counter */
	u32 rpg_threshold;			/* stages of fast recovery */
	u32 rpg_ai_rate;			/* Mbit/s: additive increase */
	u32 rpg_hai_rate;			/* Mbit/s: hyper increase */
	u32 rpg_max_rate;			/* Mbit/s, 0 = line rate */
	u32 rpg_gd;				/* cut = RC * alpha >> gd */
	u32 rpg_min_dec_fac;			/* %: a cut keeps at least this */
	u32 rpg_min_rate;			/* Mbit/s */
	u32 rate_to_set_on_first_cnp;		/* Mbit/s, 0 = keep */
	u32 dce_tcp_g;				/* alpha gain, /1024 */
	u32 dce_tcp_rtt;			/* us: alpha period */
	u32 initial_alpha_value;		/* Q10 */
	u32 rate_reduce_monitor_period;		/* us: one cut per period */
	u32 clamp_tgt_rate;			/* 0/1 */
	u32 clamp_tgt_rate_after_time_inc;	/* 0/1 */
	/* notification point */
	u32 np_enable;				/* 0/1 */
	u32 min_time_between_cnps;		/* us, per QP */
	u32 cnp_dscp;				/* 0..63 */
	u32 cnp_802p_prio;			/* 0..7 */
};

/* One knob: its name, where it is, its bounds and default. */
struct sroce_dcqcn_knob {
	const char *name;
	u32 offset;		/* in struct sroce_dcqcn_params */
	u32 min, max, def;
	const char *unit;
};

/* The number of knobs: one per field of struct sroce_dcqcn_params. */
#define SROCE_DCQCN_NKNOBS	(sizeof(struct sroce_dcqcn_params) / sizeof(u32))

extern const struct sroce_dcqcn_knob sroce_dcqcn_knobs[SROCE_DCQCN_NKNOBS];
extern const unsigned int sroce_dcqcn_nknobs;

/* Per-QP reaction point state. Zeroed memory is not a valid state: init. */
struct sroce_dcqcn_rp {
	u32 rc;			/* current rate, kbit/s */
	u32 rt;			/* target rate, kbit/s */
	u32 max;		/* the cap: line rate or rpg_max_rate, kbit/s */
	u32 alpha;		/* Q10 */
	u32 t_stage;		/* timer increase events since the last cut */
	u32 b_stage;		/* byte counter increase events since then */
	u32 bytes;		/* bytes sent towards the next byte event */
	u64 alpha_ns;		/* start of the current alpha period */
	u64 cut_ns;		/* time of the last cut */
	bool cnp_in_period;	/* a CNP arrived in the current alpha period */
	bool limited;		/* rc < max: the pacer and timer are on */
	bool timer_inc;		/* the timer raised the rate since the last cut */
	bool cut_once;		/* there has been a cut (cut_ns is valid) */
};

void sroce_dcqcn_params_default(struct sroce_dcqcn_params *p);
const struct sroce_dcqcn_knob *sroce_dcqcn_knob_find(const char *name);
u32 *sroce_dcqcn_knob_ptr(struct sroce_dcqcn_params *p,
			  const struct sroce_dcqcn_knob *k);
/* 0, or -1 if @val is out of the knob's range. */
int sroce_dcqcn_knob_check(const struct sroce_dcqcn_knob *k, u32 val);

/* A QP starts unlimited, at the line rate (kbit/s). */
void sroce_dcqcn_rp_init(struct sroce_dcqcn_rp *rp,
			 const struct sroce_dcqcn_params *p, u32 line_kbps,
			 u64 now_ns);
/* A CNP for this QP. Returns true if it cut the rate. */
bool sroce_dcqcn_rp_cnp(struct sroce_dcqcn_rp *rp,
			const struct sroce_dcqcn_params *p, u64 now_ns);
/* The increase timer (rpg_time_reset) fired. */
void sroce_dcqcn_rp_timer(struct sroce_dcqcn_rp *rp,
			  const struct sroce_dcqcn_params *p, u64 now_ns);
/* @bytes were sent; runs the byte counter increase events it completes. */
void sroce_dcqcn_rp_sent(struct sroce_dcqcn_rp *rp,
			 const struct sroce_dcqcn_params *p, u32 bytes);
/* Bring alpha up to date with the periods that ended before @now_ns. */
void sroce_dcqcn_rp_alpha(struct sroce_dcqcn_rp *rp,
			  const struct sroce_dcqcn_params *p, u64 now_ns);

/* Nanoseconds that @bytes take at @kbps (at least 1 kbit/s). */
static inline u64 sroce_dcqcn_tx_ns(u32 kbps, u32 bytes)
{
	if (!kbps)
		kbps = 1;
	/* bytes * 8 bits * 1e6 ns/ms / (kbit/s == bit/ms) */
	return ((u64)bytes * 8000000u + kbps - 1) / kbps;
}

/*
 * The pacer's clock. A limited QP's packet of @wire_bytes goes out at
 * @now_ns (not before @next_ns, when it was due); the next one is due its
 * time at @kbps later. A QP that was idle, or woken late (a TCG guest
 * delivers timers milliseconds late), catches up by at most
 * SROCE_DCQCN_PACE_BURST_BYTES at @kbps, or SROCE_DCQCN_PACE_BURST_NS if
 * that is longer, so that timer latency costs no rate; a longer gap is
 * not credited. Returns the next packet's due time.
 */
#define SROCE_DCQCN_PACE_BURST_NS	100000u
#define SROCE_DCQCN_PACE_BURST_BYTES	32768u

static inline u64 sroce_dcqcn_pace_next(u64 next_ns, u64 now_ns, u32 kbps,
					u32 wire_bytes)
{
	u64 burst = sroce_dcqcn_tx_ns(kbps, SROCE_DCQCN_PACE_BURST_BYTES);

	if (burst < SROCE_DCQCN_PACE_BURST_NS)
		burst = SROCE_DCQCN_PACE_BURST_NS;
	if ((s64)(now_ns - burst - next_ns) > 0)
		next_ns = now_ns - burst;
	return next_ns + sroce_dcqcn_tx_ns(kbps, wire_bytes);
}

/*
 * Notification point: may a CNP go to this QP now? @last_ns is when the last
 * one went (0: never); min_time_between_cnps is in us.
 */
static inline bool sroce_dcqcn_np_may_send(const struct sroce_dcqcn_params *p,
					   u64 last_ns, u64 now_ns)
{
	return !last_ns ||
	       now_ns - last_ns >= (u64)p->min_time_between_cnps * 1000u;
}

#endif /* SROCE_DCQCN_H */
