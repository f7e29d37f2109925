// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * DCQCN rate control arithmetic; see sroce_dcqcn.h.
 */
#include "sroce_dcqcn.h"

#ifdef SROCE_PROTO_HOST
#include <string.h>
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#else
#include <linux/kernel.h>
#include <linux/stddef.h>
#include <linux/string.h>
#endif

#define KNOB(n, lo, hi, d, u) {					\
	.name = #n,							\
	.offset = offsetof(struct sroce_dcqcn_params, n),		\
	.min = (lo), .max = (hi), .def = (d), .unit = (u),		\
}

/* mlx5's names and defaults; the ranges are sroce's. */
const struct sroce_dcqcn_knob sroce_dcqcn_knobs[SROCE_DCQCN_NKNOBS] = {
	KNOB(rp_enable, 0, 1, 1, "bool"),
	KNOB(rpg_time_reset, 1, 1000000, 300, "us"),
	KNOB(rpg_byte_reset, 64, 1u << 24, 32767, "bytes"),
	KNOB(rpg_threshold, 1, 31, 1, "events"),
	KNOB(rpg_ai_rate, 1, 400000, 5, "Mbit/s"),
	KNOB(rpg_hai_rate, 1, 400000, 50, "Mbit/s"),
	KNOB(rpg_max_rate, 0, 400000, 0, "Mbit/s"),
	KNOB(rpg_gd, 1, 15, 11, "shift"),
	KNOB(rpg_min_dec_fac, 1, 100, 50, "%"),
	KNOB(rpg_min_rate, 1, 400000, 1, "Mbit/s"),
	KNOB(rate_to_set_on_first_cnp, 0, 400000, 0, "Mbit/s"),
	KNOB(dce_tcp_g, 0, 1023, 1019, "/1024"),
	KNOB(dce_tcp_rtt, 1, 1000000, 1, "us"),
	KNOB(initial_alpha_value, 0, 1023, 1023, "/1024"),
	KNOB(rate_reduce_monitor_period, 0, 1000000, 4, "us"),
	KNOB(clamp_tgt_rate, 0, 1, 0, "bool"),
	KNOB(clamp_tgt_rate_after_time_inc, 0, 1, 1, "bool"),
	KNOB(np_enable, 0, 1, 1, "bool"),
	KNOB(min_time_between_cnps, 0, 1000000, 4, "us"),
	KNOB(cnp_dscp, 0, 63, 48, "dscp"),
	KNOB(cnp_802p_prio, 0, 7, 6, "prio"),
};

const unsigned int sroce_dcqcn_nknobs = ARRAY_SIZE(sroce_dcqcn_knobs);

u32 *sroce_dcqcn_knob_ptr(struct sroce_dcqcn_params *p,
			  const struct sroce_dcqcn_knob *k)
{
	return (u32 *)((u8 *)p + k->offset);
}

void sroce_dcqcn_params_default(struct sroce_dcqcn_params *p)
{
	unsigned int i;

	for (i = 0; i < sroce_dcqcn_nknobs; i++)
		*sroce_dcqcn_knob_ptr(p, &sroce_dcqcn_knobs[i]) =
			sroce_dcqcn_knobs[i].def;
}

const struct sroce_dcqcn_knob *sroce_dcqcn_knob_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < sroce_dcqcn_nknobs; i++)
		if (!strcmp(sroce_dcqcn_knobs[i].name, name))
			return &sroce_dcqcn_knobs[i];
	return NULL;
}

int sroce_dcqcn_knob_check(const struct sroce_dcqcn_knob *k, u32 val)
{
	return val < k->min || val > k->max ? -1 : 0;
}

static u32 mbps_to_kbps(u32 mbps)
{
	return mbps > 0xffffffffu / 1000u ? 0xffffffffu : mbps * 1000u;
}

static u32 min_u32(u32 a, u32 b)
{
	return a < b ? a : b;
}

static u32 max_u32(u32 a, u32 b)
{
	return a > b ? a : b;
}

/* x / 2^s, rounded to nearest */
static u64 shr_round(u64 x, unsigned int s)
{
	return (x + (1ull << (s - 1))) >> s;
}

/* alpha * (g / 1024)^n, in Q10, by squaring in Q20 (n may be huge). */
static u32 alpha_decay(u32 alpha, u32 g, u64 n)
{
	u64 f = 1u << 20, base = (u64)g << 10;

	while (n && f) {
		if (n & 1)
			f = shr_round(f * base, 20);
		base = shr_round(base * base, 20);
		n >>= 1;
	}
	return (u32)shr_round((u64)alpha * f, 20);
}

void sroce_dcqcn_rp_alpha(struct sroce_dcqcn_rp *rp,
			  const struct sroce_dcqcn_params *p, u64 now_ns)
{
	u64 period = (u64)max_u32(p->dce_tcp_rtt, 1) * 1000u, n;
	u32 g = min_u32(p->dce_tcp_g, SROCE_DCQCN_ALPHA_ONE);

	if (now_ns < rp->alpha_ns + period)
		return;
	n = (now_ns - rp->alpha_ns) / period;
	/* The period that was running; a CNP in it pulls alpha up. */
	rp->alpha = (u32)shr_round((u64)rp->alpha * g +
				   (rp->cnp_in_period ?
				    (u64)(SROCE_DCQCN_ALPHA_ONE - g) *
				    SROCE_DCQCN_ALPHA_ONE : 0), 10);
	/* ...and the ones after it had none. */
	rp->alpha = alpha_decay(rp->alpha, g, n - 1);
	rp->alpha_ns += n * period;
	rp->cnp_in_period = false;
}

void sroce_dcqcn_rp_init(struct sroce_dcqcn_rp *rp,
			 const struct sroce_dcqcn_params *p, u32 line_kbps,
			 u64 now_ns)
{
	u32 max = line_kbps ? line_kbps : 1;

	if (p->rpg_max_rate)
		max = min_u32(max, mbps_to_kbps(p->rpg_max_rate));
	memset(rp, 0, sizeof(*rp));
	rp->max = max;
	rp->rc = max;
	rp->rt = max;
	rp->alpha = min_u32(p->initial_alpha_value, SROCE_DCQCN_ALPHA_ONE);
	rp->alpha_ns = now_ns;
}

bool sroce_dcqcn_rp_cnp(struct sroce_dcqcn_rp *rp,
			const struct sroce_dcqcn_params *p, u64 now_ns)
{
	u32 floor, min_rate, cut, rc;

	sroce_dcqcn_rp_alpha(rp, p, now_ns);
	if (!rp->limited) {
		/* A new congestion episode. */
		rp->alpha = min_u32(p->initial_alpha_value,
				    SROCE_DCQCN_ALPHA_ONE);
		rp->alpha_ns = now_ns;
		if (p->rate_to_set_on_first_cnp) {
			rp->rc = min_u32(rp->max,
					 mbps_to_kbps(p->rate_to_set_on_first_cnp));
			rp->rt = rp->rc;
		}
	}
	rp->cnp_in_period = true;
	if (rp->cut_once &&
	    now_ns - rp->cut_ns < (u64)p->rate_reduce_monitor_period * 1000u)
		return false;

	if (p->clamp_tgt_rate || !rp->limited ||
	    (p->clamp_tgt_rate_after_time_inc && rp->timer_inc))
		rp->rt = rp->rc;
	rc = rp->rc;
	cut = (u32)(((u64)rc * rp->alpha) >> min_u32(p->rpg_gd, 31));
	cut = min_u32(cut, rc);
	floor = (u32)(((u64)rc * min_u32(p->rpg_min_dec_fac, 100)) / 100u);
	min_rate = min_u32(mbps_to_kbps(max_u32(p->rpg_min_rate, 1)), rp->max);
	rp->rc = max_u32(max_u32(rc - cut, floor), min_rate);
	rp->rt = max_u32(rp->rt, rp->rc);
	rp->t_stage = 0;
	rp->b_stage = 0;
	rp->bytes = 0;
	rp->timer_inc = false;
	rp->cut_ns = now_ns;
	rp->cut_once = true;
	rp->limited = rp->rc < rp->max;
	return true;
}

/* One increase event; @stage is the counter that produced it. */
static void rp_increase(struct sroce_dcqcn_rp *rp,
			const struct sroce_dcqcn_params *p, u32 *stage)
{
	u32 f = p->rpg_threshold, step;
	u64 rt;

	if (max_u32(rp->t_stage, rp->b_stage) < f)
		step = 0;				/* fast recovery */
	else if (min_u32(rp->t_stage, rp->b_stage) > f)
		step = mbps_to_kbps(p->rpg_hai_rate);	/* hyper increase */
	else
		step = mbps_to_kbps(p->rpg_ai_rate);	/* additive increase */
	if (*stage < 0xffffffffu)
		(*stage)++;
	rt = (u64)rp->rt + step;
	rp->rt = rt > rp->max ? rp->max : (u32)rt;
	/* Halfway to the target, rounding up so that it gets there. */
	if (rp->rt > rp->rc)
		rp->rc += (rp->rt - rp->rc + 1) / 2;
	else
		rp->rc = rp->rt;
	if (rp->rc >= rp->max) {
		rp->rc = rp->max;
		rp->rt = rp->max;
		rp->limited = false;
		rp->t_stage = 0;
		rp->b_stage = 0;
		rp->bytes = 0;
	}
}

void sroce_dcqcn_rp_timer(struct sroce_dcqcn_rp *rp,
			  const struct sroce_dcqcn_params *p, u64 now_ns)
{
	sroce_dcqcn_rp_alpha(rp, p, now_ns);
	if (!rp->limited)
		return;
	rp->timer_inc = true;
	rp_increase(rp, p, &rp->t_stage);
}

/* At most this many byte counter events per call: bounded work. */
#define SROCE_DCQCN_MAX_BYTE_EVENTS	64

void sroce_dcqcn_rp_sent(struct sroce_dcqcn_rp *rp,
			 const struct sroce_dcqcn_params *p, u32 bytes)
{
	u32 reset = max_u32(p->rpg_byte_reset, 1), i;
	u64 total;

	if (!rp->limited)
		return;
	total = (u64)rp->bytes + bytes;
	for (i = 0; i < SROCE_DCQCN_MAX_BYTE_EVENTS && total >= reset &&
	     rp->limited; i++) {
		total -= reset;
		rp_increase(rp, p, &rp->b_stage);
	}
	if (rp->limited)
		rp->bytes = total >= reset ? reset - 1 : (u32)total;
}
