// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// dcqcn_sim: a discrete-event model of N DCQCN senders through one RED/ECN
// bottleneck, driven by sroce's own rate code (proto/sroce_dcqcn.c) and
// pacer clock (sroce_dcqcn_pace_next). It is how the incast selftest's
// knobs were chosen: the TCG guest takes ~2 minutes per run, this a few
// milliseconds, and on every setting tried the two agreed on utilisation,
// queue and marks within their run-to-run noise.
//
// The model:
//  - every sender always has data (perftest with a deep send queue); until
//    its first CNP it is unlimited and sends at unpaced= Mbit/s (in the
//    guest, as fast as its CPU allows), then at the QP's DCQCN rate through
//    the pacer, which wakes up to slack_us late (TCG timer latency);
//  - the rate increase timer (rpg_time_reset) is armed by a CNP, as in
//    sroce_cc.c, and is late by up to slack_us too;
//  - packets take fwd_us to the bottleneck: RED (average weight 2^-wlog
//    per packet, decayed over idle time as Linux does; no mark below min,
//    probability p * (avg - min) / (max - min) up to max, every packet
//    above it; marks at enqueue) in front of a link of cap Mbit/s, with a
//    byte limit (tail drop: a dropped packet is counted, not resent);
//  - the receiver sends a CNP per CE-marked packet, at most one per
//    min_time_between_cnps per QP; it reaches the sender back_us later.
//
// usage: dcqcn_sim [@FILE] [name=value]...
//   FILE: DCQCN knob settings, "name=value" per line, # comments
//   scenario: flows=4 join=0 (s: flows 2..N start then) dur=14 window=6
//     (s: the steady window is the run's end) cap=70 (Mbit/s) pkt=4200
//     (bytes on the wire) red_min=43750 red_max=175000 red_p=0.3 wlog=1
//     limit=2500000 fwd_us=300 back_us=500 slack_us=2000 unpaced=200
//     seed=1 trace=0 (1: queue and rates every 10 ms of the window)
//   any DCQCN knob by its sysfs name (range-checked as the kernel does)
//   expect_jain=X expect_util=X (at least), expect_qmax=BYTES expect_conv=S
//   expect_drops=N (at most): exit 1 unless the run meets them (conv: the last flow
//   within 20 % of the mean for 3 s, in 1 s steps, at most S s after it
//   started)
// Output: one line of name=value figures over the steady window.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "sroce_dcqcn.h"
}

namespace {

using ns_t = unsigned long long;
constexpr double kNsPerS = 1e9;

struct Event {
	ns_t t;
	unsigned long long seq; // FIFO among equal times: deterministic
	enum Kind { Pace, Timer, Enqueue, Depart, Deliver, Cnp } kind;
	int flow;
	bool ce;
	bool operator>(const Event &o) const
	{
		return t != o.t ? t > o.t : seq > o.seq;
	}
};

struct Flow {
	sroce_dcqcn_rp rp{};
	ns_t next = 0;       // pacer: next packet due
	ns_t np_last = 0;    // receiver: last CNP for this QP
	bool timer = false;  // increase timer armed
	double window_bytes = 0;
	std::vector<double> per_s; // Mbit sent in each second
};

struct Sim {
	std::map<std::string, double> opt{
		{"flows", 4}, {"join", 0}, {"dur", 14}, {"window", 6}, {"cap", 70},
		{"pkt", 4200}, {"red_min", 43750}, {"red_max", 175000},
		{"red_p", 0.3}, {"wlog", 1}, {"limit", 2500000}, {"fwd_us", 300},
		{"back_us", 500}, {"slack_us", 2000}, {"unpaced", 200}, {"seed", 1},
		{"trace", 0}};
	std::map<std::string, double> expect;
	sroce_dcqcn_params p{};

	bool set(const std::string &kv)
	{
		const auto eq = kv.find('=');
		if (eq == std::string::npos || eq == 0)
			return false;
		const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
		char *end = nullptr;
		const double x = std::strtod(v.c_str(), &end);
		if (v.empty() || *end)
			return false;
		if (k.rfind("expect_", 0) == 0) {
			expect[k.substr(7)] = x;
			return true;
		}
		if (opt.count(k)) {
			opt[k] = x;
			return true;
		}
		const sroce_dcqcn_knob *kn = sroce_dcqcn_knob_find(k.c_str());
		if (!kn || x < 0 || x > 4294967295.0 ||
		    sroce_dcqcn_knob_check(kn, (u32)x))
			return false;
		*sroce_dcqcn_knob_ptr(&p, kn) = (u32)x;
		return true;
	}

	bool load(const char *path)
	{
		std::ifstream in(path);
		std::string line;
		if (!in)
			return false;
		while (std::getline(in, line)) {
			line = line.substr(0, line.find('#'));
			line.erase(0, line.find_first_not_of(" \t"));
			line.erase(line.find_last_not_of(" \t\r") + 1);
			if (!line.empty() && !set(line)) {
				std::fprintf(stderr, "%s: bad line: %s\n", path,
					     line.c_str());
				return false;
			}
		}
		return true;
	}

	int run();
};

int Sim::run()
{
	const int n = std::max(1, (int)opt["flows"]);
	const double cap = opt["cap"], dur = opt["dur"];
	const u32 pkt = (u32)opt["pkt"];
	const ns_t end = (ns_t)(dur * kNsPerS);
	const ns_t wstart = (ns_t)((dur - opt["window"]) * kNsPerS);
	const ns_t join = (ns_t)(opt["join"] * kNsPerS);
	const ns_t fwd = (ns_t)(opt["fwd_us"] * 1000);
	const ns_t back = (ns_t)(opt["back_us"] * 1000);
	const double slack = opt["slack_us"] * 1000;
	const double pkt_ns = pkt * 8e3 / cap; // on the bottleneck
	const ns_t unpaced_ns = (ns_t)(pkt * 8e3 / opt["unpaced"]);
	const double w = std::ldexp(1.0, -(int)opt["wlog"]);
	const double rmin = opt["red_min"], rmax = opt["red_max"];
	std::mt19937_64 rng((unsigned long long)opt["seed"]);
	std::uniform_real_distribution<double> uni(0, 1);
	auto late = [&] { return (ns_t)(uni(rng) * slack); };

	std::priority_queue<Event, std::vector<Event>, std::greater<>> ev;
	unsigned long long seq = 0;
	auto at = [&](ns_t t, Event::Kind k, int f, bool ce = false) {
		ev.push({t, seq++, k, f, ce});
	};

	std::vector<Flow> fl(n);
	for (int i = 0; i < n; i++) {
		sroce_dcqcn_rp_init(&fl[i].rp, &p, 10000000, 0); // 10 Gbit/s veth
		fl[i].per_s.assign((size_t)dur + 1, 0);
		at(i ? join : 0, Event::Pace, i);
	}

	std::deque<std::pair<int, bool>> fifo;
	double avg = 0, q = 0, qmax_run = 0, link_window = 0;
	ns_t idle_since = 0, next_sample = wstart;
	bool busy = false;
	unsigned long long marks = 0, drops = 0, cnps = 0;
	std::vector<double> samples;

	while (!ev.empty()) {
		const Event e = ev.top();
		const ns_t now = e.t;

		if (now > end)
			break;
		ev.pop();
		for (; next_sample <= now; next_sample += 1000000) {
			samples.push_back(q);
			if (opt["trace"] != 0 && next_sample % 10000000 == 0) {
				std::printf("t=%.2f q=%.0f", next_sample / kNsPerS, q);
				for (const Flow &f : fl)
					std::printf(" %u/%u/%u", f.rp.rc / 1000,
						    f.rp.rt / 1000, f.rp.alpha);
				std::printf("\n");
			}
		}
		Flow *f = e.flow >= 0 ? &fl[e.flow] : nullptr;

		switch (e.kind) {
		case Event::Pace: {
			sroce_dcqcn_rp &rp = f->rp;
			// Send what is due: all of the catch-up, or one unpaced.
			for (int sent = 0; sent < 256; sent++) {
				if (rp.limited && (long long)(f->next - now) > 0)
					break;
				at(now + fwd, Event::Enqueue, e.flow);
				f->per_s[now / 1000000000ull] += pkt * 8e-6;
				if (now >= wstart)
					f->window_bytes += pkt;
				if (!rp.limited) {
					f->next = now + unpaced_ns;
					break;
				}
				f->next = sroce_dcqcn_pace_next(f->next, now, rp.rc,
								pkt);
				sroce_dcqcn_rp_sent(&rp, &p, pkt);
			}
			at(std::max(f->next, now + 1) + (rp.limited ? late() : 0),
			   Event::Pace, e.flow);
			break;
		}
		case Event::Timer:
			if (!f->rp.limited) {
				f->timer = false;
				break;
			}
			sroce_dcqcn_rp_timer(&f->rp, &p, now);
			if (f->rp.limited)
				at(now + p.rpg_time_reset * 1000ull + late(),
				   Event::Timer, e.flow);
			else
				f->timer = false;
			break;
		case Event::Enqueue: {
			bool ce = false;

			if (!busy && fifo.empty())
				avg *= std::pow(1 - w, (now - idle_since) / pkt_ns);
			avg = (1 - w) * avg + w * q;
			if (q + pkt > opt["limit"]) {
				drops++;
				break;
			}
			if (avg >= rmax)
				ce = true;
			else if (avg >= rmin)
				ce = uni(rng) < opt["red_p"] * (avg - rmin) /
							(rmax - rmin);
			marks += ce;
			fifo.emplace_back(e.flow, ce);
			q += pkt;
			qmax_run = std::max(qmax_run, q);
			if (!busy) {
				busy = true;
				at(now + (ns_t)pkt_ns, Event::Depart, -1);
			}
			break;
		}
		case Event::Depart: {
			const auto [flow, ce] = fifo.front();

			fifo.pop_front();
			q -= pkt;
			if (now >= wstart)
				link_window += pkt;
			at(now + fwd, Event::Deliver, flow, ce);
			if (!fifo.empty()) {
				at(now + (ns_t)pkt_ns, Event::Depart, -1);
			} else {
				busy = false;
				idle_since = now;
			}
			break;
		}
		case Event::Deliver:
			if (e.ce && sroce_dcqcn_np_may_send(&p, f->np_last, now)) {
				f->np_last = now;
				cnps++;
				at(now + back + late() / 4, Event::Cnp, e.flow);
			}
			break;
		case Event::Cnp:
			sroce_dcqcn_rp_cnp(&f->rp, &p, now);
			if (f->rp.limited && !f->timer) {
				f->timer = true;
				at(now + p.rpg_time_reset * 1000ull, Event::Timer,
				   e.flow);
			}
			break;
		}
	}

	const double wsec = opt["window"];
	double sum = 0, sum2 = 0;
	std::string rates;
	for (const Flow &x : fl) {
		const double r = x.window_bytes * 8 / wsec / 1e6;
		sum += r;
		sum2 += r * r;
		rates += (rates.empty() ? "" : ",") + std::to_string(r).substr(0, 5);
	}
	const double jain = sum2 > 0 ? sum * sum / (n * sum2) : 0;
	const double util = link_window * 8 / wsec / 1e6 / cap;
	std::sort(samples.begin(), samples.end());
	auto pct = [&](double x) {
		return samples.empty() ? 0 :
		       samples[std::min(samples.size() - 1,
					(size_t)(x * samples.size()))];
	};
	double mean = 0;
	for (double s : samples)
		mean += s;
	mean = samples.empty() ? 0 : mean / samples.size();
	// Convergence of the last flow to start, as the selftest judges it.
	double conv = -1;
	const size_t first = (size_t)(opt["join"]);
	for (size_t b = first; conv < 0 && b + 3 <= (size_t)dur; b++) {
		bool ok = true;
		for (size_t k = b; k < b + 3; k++) {
			double m = 0;
			for (const Flow &x : fl)
				m += x.per_s[k] / n;
			ok = ok && std::fabs(fl[n - 1].per_s[k] - m) <= 0.2 * m;
		}
		if (ok)
			conv = (double)(b - first);
	}
	std::printf("jain=%.3f util=%.3f q_mean=%.0f q_p90=%.0f q_p99=%.0f "
		    "q_max=%.0f run_q_max=%.0f marks=%llu cnps=%llu drops=%llu "
		    "conv_s=%g rates=%s\n",
		    jain, util, mean, pct(0.9), pct(0.99), pct(1), qmax_run,
		    marks, cnps, drops, conv, rates.c_str());

	int bad = 0;
	auto want = [&](const char *k, double got, bool at_least) {
		const auto it = expect.find(k);

		if (it == expect.end())
			return;
		if (at_least ? got >= it->second :
			       got >= 0 && got <= it->second)
			return;
		std::printf("FAIL: %s %g, expected %s %g\n", k, got,
			    at_least ? ">=" : "<=", it->second);
		bad = 1;
	};
	want("jain", jain, true);
	want("util", util, true);
	want("qmax", pct(1), false);
	want("drops", (double)drops, false);
	want("conv", conv, false);
	return bad;
}

} // namespace

int main(int argc, char **argv)
{
	Sim sim;

	sroce_dcqcn_params_default(&sim.p);
	for (int i = 1; i < argc; i++) {
		const bool ok = argv[i][0] == '@' ? sim.load(argv[i] + 1) :
						    sim.set(argv[i]);
		if (!ok) {
			std::fprintf(stderr, "dcqcn_sim: bad argument %s\n",
				     argv[i]);
			return 2;
		}
	}
	return sim.run();
}
