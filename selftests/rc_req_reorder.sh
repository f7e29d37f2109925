#!/bin/bash
# timeout: 480
#
# Requests over a path that reorders, loses and duplicates (issue 25): rping
# -V (RDMA CM; the server READs the client's 16 KiB buffer and WRITEs it
# back, the client SENDs each round's buffer address and checks every byte)
# runs 200 iterations with A as the server.
#
#  1. netem "delay 1ms 1ms loss 2% duplicate 2%" on A's side of the veth
#     only: A's 16-packet WRITEs (and READ requests) reach B's responder
#     shuffled by the 0-2 ms jitter; B's responses and ACKs go clean.
#  2. The same netem on both sides: the issue's case.
#
# A responder that dropped every request ahead of ePSN NAKed a hole once
# and, when the resend's packets overtook the hole's, said nothing more
# until the requester's ACK timeout (about 2.3 s under RDMA CM): with the
# impairment on the requests' path only, rping was killed after 78 of 200
# iterations; on both paths after 105 and 116 of 200 in 120 s
# (2026-12-04). Now the rest of the SEND or WRITE being received that
# comes ahead is placed at once (kernel/proto/sroce_responder.h), and the
# hole's arrival completes the run. Even then, on both paths each end lost
# a last packet (a READ request, a WRITE's last, a SEND, an ACK) with
# nothing after it about once every 10 iterations, and waited for the ACK
# timeout: 29 timeouts, 55 s. Now a requester that hears nothing for a
# probe timeout (2 srtt + 4 rttvar, at least 10 ms) with few PSNs
# outstanding goes back N at once (kernel/proto/sroce_gbn.h): 0 timeouts,
# 12-15 s. Checks: rping completes with its data verified, within 150 s;
# in case 1, B placed requests ahead (out_of_seq_placed) and B's responder
# sent sequence NAKs; in case 2, A and B had fewer than 10 ACK timeouts
# and sent tail loss probes.
export SR_TAG=rq # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

sr_reorder_setup 84

# rping_case NAME: 200 rping -V iterations of 16 KiB, A the server; sets
# why (and fails) unless both ends complete them.
rping_case() {
	sr_rping "$nsa" 10.84.0.1 "$nsb" 160 150 "$tmp" -V -C 200 -S 16384 || {
		why=$sr_rping_why
		return 1
	}
	log "$1: client exit $sr_rping_rc, server exit $sr_rping_src, $sr_rping_done of 200 iterations in $sr_rping_secs s"
	if ((sr_rping_rc != 0 || sr_rping_src != 0 || sr_rping_done != 200)); then
		why="rping did not complete: client exit $sr_rping_rc, server exit $sr_rping_src after $sr_rping_done of 200 iterations (client: $(tail -n 1 "$tmp/client" | cut -c 1-100); server: $(tail -n 1 "$tmp/server" | cut -c 1-100))"
		return 1
	fi
}

# counters DEV: the counters this test reports, "name=value ...".
counters() {
	local c line=
	for c in out_of_seq_placed out_of_seq_request seq_nak_sent duplicate_request retry_timeouts tail_loss_probes; do
		line+="$c=$(sr_hwc "$1" "$c") "
	done
	echo "$line"
}

sr_netem "$nsa" "$va"
log "netem on $va (A -> B: A's requests): $netem"
why=
placed0=$(sr_hwc "$db" out_of_seq_placed)
naks0=$(sr_hwc "$db" seq_nak_sent)
if rping_case "requests impaired"; then
	log "B (responder): $(counters "$db"); A: $(counters "$da")"
	placed=$(($(sr_hwc "$db" out_of_seq_placed) - placed0))
	naks=$(($(sr_hwc "$db" seq_nak_sent) - naks0))
	if ((placed == 0)); then
		why="B placed no request ahead of ePSN (out_of_seq_placed +0) under jitter"
	elif ((naks == 0)); then
		why="B sent no sequence NAK (seq_nak_sent +0) for $placed requests out of sequence"
	fi
fi
subtest_verdict "requests reordered, lost, duplicated: rping -V 200 x 16 KiB" "$why"

sr_netem "$nsb" "$vb"
log "netem on $vb too (B -> A): $netem"
why=
t0=$(($(sr_hwc "$da" retry_timeouts) + $(sr_hwc "$db" retry_timeouts)))
p0=$(($(sr_hwc "$da" tail_loss_probes) + $(sr_hwc "$db" tail_loss_probes)))
if rping_case "both impaired"; then
	log "A: $(counters "$da"); B: $(counters "$db")"
	timeouts=$(($(sr_hwc "$da" retry_timeouts) + $(sr_hwc "$db" retry_timeouts) - t0))
	probes=$(($(sr_hwc "$da" tail_loss_probes) + $(sr_hwc "$db" tail_loss_probes) - p0))
	if ((timeouts >= 10)); then
		why="$timeouts ACK timeouts (A and B; < 10 expected: a lost last packet is found by a tail loss probe)"
	elif ((probes == 0)); then
		why="no tail loss probe (tail_loss_probes +0) where 2% of the packets are lost"
	fi
fi
subtest_verdict "both directions reordered, lost, duplicated: rping -V 200 x 16 KiB" "$why"
