#!/bin/bash
# timeout: 900
#
# Teardown under traffic. Everything that can disappear under a running RC
# flow disappears, and sroce must clean up after it: no splat (the runner
# fails the test on one), no leftover QP, CQ, MR or PD, the module unloads,
# and unreclaimable slab returns to where it started (within noise).
#  1. kill -9, ROUNDS times (70; 25 by default), of tools/verbs-tests/rc_integrity
#     in the middle of random traffic in both directions (SEND, WRITE, READ
#     and atomics in flight, ACK timers armed), and 10 (4) times of one side of
#     ib_write_bw / ib_read_bw between two processes, the other side left to
#     notice (or be killed).
#  2. The same with netem dropping everything, or delaying it by 50 ms, so
#     that processes die with retransmit timers armed and with packets still
#     on the wire for QPs that no longer exist (counted as rcvd_no_qp); and
#     with netem CE-marking 5 % (ECN), DCQCN's knobs set so that the QPs go
#     in and out of rate limiting many times a second: they die while their
#     requester and READ streams move between sroce's two workqueues (the
#     unpaced one and the pacer's per-CPU one), with pacer timers armed.
#  3. rmmod while traffic runs: sroce disassociates the devices' users, so
#     rmmod must succeed and remove the devices under the running process,
#     which must end with an error rather than hang; the module reloads and
#     works.
#  4. rdma link delete of one device, the netdev (veth) deleted, and the
#     namespace deleted, each during traffic; the devices go away, the
#     processes get errors or are killed, and new links work afterwards.
# After each part the devices still pass verified traffic, and at the end
# "rdma res show" has nothing left, rmmod succeeds, and SUnreclaim is back
# within 8 MiB of its starting value.
#
# SROCE_TEARDOWN_FULL=1 runs all 110 kills; SROCE_TEARDOWN_ROUNDS=N sets
# part 1's rounds, SROCE_TEARDOWN_SIDED=N its one-sided kills,
# SROCE_TEARDOWN_NETEM_ROUNDS=N part 2's kills per netem setting (10; 6
# by default);
# SROCE_TEARDOWN_CHECK_ARGS="..." is appended to the verified runs between
# the parts (slow debug kernels: e.g. --ack-timeout 18 --max-size 64K);
# SROCE_SLAB_CHECK=0 skips the SUnreclaim check (the debug-kernel lane: its
# kmemleak checks precisely, and KASAN's quarantine holds freed objects);
# SROCE_SEED=N reproduces the timing. Each part is a sub-case.
export SR_TAG=td # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_integrity
# The traffic here is meant to be killed, not to time out: a 1 s ACK timeout
# (retry budget 8 s) keeps a TCG guest that stalls now and then from ending
# it with RETRY_EXC_ERR first. So do the victims of the netem ECN rounds
# (one with the 67 ms default ended by itself before its kill in CI's debug
# lane; its output was not kept: ended_early keeps it now).
slow=(--ack-timeout 18)
nsa=${SR_ID}a nsb=${SR_ID}b
va=${SR_ID}va vb=${SR_ID}vb
da=${SR_ID}0 db=${SR_ID}1
# 70 here, 10 one-sided and 30 under netem: 110 kill -9 in all with
# SROCE_TEARDOWN_FULL=1; the default (CI) run does 25 + 4 + 18.
full=${SROCE_TEARDOWN_FULL:-${SROCE_FULL:-0}}
if [[ $full == 1 ]]; then
	rounds=${SROCE_TEARDOWN_ROUNDS:-70} sided=${SROCE_TEARDOWN_SIDED:-10}
	netem_rounds=${SROCE_TEARDOWN_NETEM_ROUNDS:-10}
else
	rounds=${SROCE_TEARDOWN_ROUNDS:-25} sided=${SROCE_TEARDOWN_SIDED:-4}
	netem_rounds=${SROCE_TEARDOWN_NETEM_ROUNDS:-6}
fi
seed=${SROCE_SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$seed

[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM (tools/vm/run -- selftests/run.sh)"
require_cmd ip rdma ss jq tc timeout ib_write_bw ib_read_bw
[[ -x "$bin" ]] || skip "$bin is not built (make verbs-tests)"
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

tmp=$(mktemp -d)
defer rm -rf "$tmp"

# --- the slab baseline, with sroce not loaded ---------------------------------------
if _sroce_loaded; then
	log "sroce.ko is loaded; unloading it for this test (reloaded at exit)"
	sr_module_release || fail "cannot unload sroce to take a baseline"
	defer sroce_load
fi
defer_quiet sr_module_release
sunreclaim() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}
# Load what the test itself will need first, so that it is in the baseline.
check modprobe -a sch_netem udp_tunnel ip6_udp_tunnel ib_uverbs
slab0=$(sunreclaim)
log "SUnreclaim before: $slab0 kB"

sroce_load
check modprobe sch_netem

# --- topology ------------------------------------------------------------------------
ns_create "$nsa"
ns_create "$nsb"
topology() {
	veth_pair "$nsa" "$va" "$nsb" "$vb"
	check ip -n "$nsa" addr add 10.84.0.1/24 dev "$va"
	check ip -n "$nsb" addr add 10.84.0.2/24 dev "$vb"
	# Each side knows the other's MAC for good: part 2's netem drops and
	# delays ARP too, and a QP's move to RTR resolves its peer's MAC within
	# 1 s (ib_core's rdma_addr_find_l2_eth_by_grh), so one lost ARP packet
	# failed ibv_modify_qp with ETIMEDOUT before any traffic (debug lane,
	# 2026-12-06, "loss 5% ecn"). The test is about QP teardown, not ARP.
	local mac_a mac_b
	mac_a=$(sr_mac "$nsa" "$va")
	mac_b=$(sr_mac "$nsb" "$vb")
	check ip -n "$nsa" neigh replace 10.84.0.2 lladdr "$mac_b" dev "$va" nud permanent
	check ip -n "$nsb" neigh replace 10.84.0.1 lladdr "$mac_a" dev "$vb" nud permanent
	links
}
links() {
	sr_exists "$da" || sr_link_add "$nsa" "$da" "$va"
	sr_exists "$db" || sr_link_add "$nsb" "$db" "$vb"
	sr_wait_gid "$da" 10.84.0.1
	sr_wait_gid "$db" 10.84.0.2
}
topology
log "seed $seed (SROCE_SEED=$seed reproduces the timing)"

# spawn NS CMD...: start CMD in the background, in namespace NS ("" for this
# one), exec'ed all the way down so that $! is CMD's own PID and kill -9 $!
# hits it (a backgrounded function or timeout(1) would leave it orphaned).
spawn() {
	local ns=$1
	shift
	if [[ -n "$ns" ]]; then
		(
			trap - ERR
			exec ip netns exec "$ns" "$@"
		) &
	else
		(
			trap - ERR
			exec "$@"
		) &
	fi
}
# rsleep MIN_MS MAX_MS: sleep a random time in [MIN, MAX] ms (sr_nap: no
# sleep(1), whose start alone took 0.4 s of the debug kernel).
rsleep() {
	sr_nap_ms $(($1 + RANDOM % ($2 - $1 + 1)))
}
# flowing FILE: rc_integrity (output in FILE) has connected its QPs.
flowing() {
	wait_for "grep -q '^path_mtu' $1" 60 || { cat "$1"; fail "rc_integrity did not get going"; }
}
# killed PID: kill -9 PID (if it still runs) and reap it.
killed() {
	kill -9 "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
# ended_early WHAT: fail because the rc_integrity meant to be killed (output
# in $tmp/ri) ended by itself; its last lines and the retry counters go into
# the failure, so that CI's summary says why.
ended_early() {
	local d c counters=
	cat "$tmp/ri"
	for d in "$da" "$db"; do
		for c in retry_timeouts retry_exceeded_err rcvd_seq_err rcvd_fatal_nak rp_cnp_handled; do
			counters+=" $d/$c=$(sr_hwc "$d" "$c")"
		done
	done
	fail "$1: rc_integrity ended before it was killed: $(tail -n 3 "$tmp/ri" | tr '\n' ' ');$counters"
}
# integrity ARGS...: a verified rc_integrity run between the two devices.
read -ra check_args <<<"${SROCE_TEARDOWN_CHECK_ARGS:-}"
integrity() {
	check timeout 300 "$bin" --dev-a "$da" --dev-b "$db" --seed $((seed + RANDOM)) --timeout 60 "$@" "${check_args[@]}"
}
# leftovers: print the user objects (they have a PID; the RDMA core's own GSI
# QP, CQs and PDs have none) on our devices.
leftovers() {
	local r
	for r in qp cq mr pd; do
		{ rdma res show "$r" -j 2>/dev/null || echo '[]'; } |
			jq -r --arg a "$da" --arg b "$db" --arg r "$r" \
				'.[]? | select(((.ifname // "") | startswith($a) or startswith($b)) and
				   .pid != null) | "\($r) \(.ifname) \(.comm // "") \(.pid)"' ||
			echo "($r: unreadable)"
	done
}
no_leftovers() { [[ -z "$(leftovers)" ]]; }
expect_clean() { # WHAT
	log "  (at ${SECONDS}s)"
	wait_for no_leftovers 30 || {
		leftovers >"$tmp/left"
		fail "$1: objects left behind: $(head -n 20 "$tmp/left" | tr '\n' ';')"
	}
	log "ok: $1: no QP, CQ, MR or PD left"
}

# --- 1. kill -9 in the middle of traffic ---------------------------------------------------

subtest_begin "kill -9 of rc_integrity mid-traffic, $rounds rounds"
t0=$SECONDS
for ((r = 1; r <= rounds; r++)); do
	spawn "" "$bin" "${slow[@]}" --dev-a "$da" --dev-b "$db" --seed $((seed + r)) --iters 1000000 \
		--depth 16 --max-size 64K --timeout 60 >"$tmp/ri" 2>&1
	pid=$!
	rsleep 200 1200
	kill -0 "$pid" 2>/dev/null || ended_early "round $r"
	killed "$pid"
done
log "$rounds rounds in $((SECONDS - t0)) s"
expect_clean "after $rounds kill -9 of rc_integrity"

# one_side TOOL VICTIM: TOOL's server in A, client in B, kill -9 VICTIM
# (server or client) mid-run; the survivor gets 10 s to notice on its own.
port=20100
one_side() {
	local tool=$1 victim=$2 spid cpid survivor ga gb
	port=$((port + 1))
	ga=$(sr_gid_index "$da" 10.84.0.1) gb=$(sr_gid_index "$db" 10.84.0.2)
	spawn "$nsa" "$tool" -F -d "$da" -x "$ga" -s 65536 -D 30 -p "$port" \
		>"$tmp/srv" 2>&1
	spid=$!
	wait_for "ns_exec $nsa ss -Hltn 'sport = :$port' | grep -q ." 30 ||
		fail "$tool server did not listen: $(cat "$tmp/srv")"
	spawn "$nsb" "$tool" -F -d "$db" -x "$gb" -s 65536 -D 30 -p "$port" \
		10.84.0.1 >"$tmp/cli" 2>&1
	cpid=$!
	# Wait until data flows (the client has connected), then a bit more.
	local base=$(($(sr_hwc "$da" sent_pkts) + $(sr_hwc "$db" sent_pkts)))
	wait_for "((\$(sr_hwc $da sent_pkts) + \$(sr_hwc $db sent_pkts) > $base + 200))" 30 ||
		log "note: $tool: little traffic before the kill"
	rsleep 200 1500
	if [[ $victim == server ]]; then
		killed "$spid"
		survivor=$cpid
	else
		killed "$cpid"
		survivor=$spid
	fi
	if wait_for "! kill -0 $survivor 2>/dev/null" 10; then
		log "  $tool: $victim killed, the other side exited by itself"
	else
		log "  $tool: $victim killed, the other side still waits: killed too"
	fi
	killed "$survivor"
}
subtest_begin "kill -9 of one side of ib_write_bw / ib_read_bw, $sided rounds"
for ((r = 1; r <= sided; r++)); do
	tool=ib_write_bw
	((r % 2)) || tool=ib_read_bw
	victim=server
	((RANDOM % 2)) || victim=client
	one_side "$tool" "$victim"
done
expect_clean "after $sided one-sided kills"
subtest_begin "verified traffic after the kills"
integrity --iters 100 --depth 8
log "ok: traffic after part 1"

# --- 2. timers armed, packets in flight --------------------------------------------------
# pacing_knobs on|off: DCQCN knobs under which CE marks make the QPs flip in
# and out of rate limiting (a CNP per mark, a cut per CNP, the rate back at
# line rate within a few 10 us or 64-byte increase steps); off puts back the
# values they had.
declare -A knobs_saved
pacing_knobs() {
	local d k v
	for d in "$da" "$db"; do
		for k in "min_time_between_cnps 0" "rate_reduce_monitor_period 0" "rpg_time_reset 10" \
			"rpg_byte_reset 64" "rpg_ai_rate 400000" "rpg_hai_rate 400000"; do
			read -r k v <<<"$k"
			if [[ $1 == on ]]; then
				knobs_saved[$d/$k]=$(cat "$SR_SYS/$d/dcqcn/$k")
			else
				v=${knobs_saved[$d/$k]}
			fi
			echo "$v" >"$SR_SYS/$d/dcqcn/$k" || fail "cannot set $d's dcqcn/$k to $v"
		done
	done
}
# cnps: the rate cuts both devices' QPs have taken (rp_cnp_handled).
cnps() { echo $(($(sr_hwc "$da" rp_cnp_handled) + $(sr_hwc "$db" rp_cnp_handled))); }
for spec in "loss 100%" "delay 50ms" "loss 5% ecn"; do
	subtest_begin "netem $spec: $netem_rounds x kill -9 with timers armed, packets in flight"
	read -ra netem <<<"$spec"
	check tc -n "$nsa" qdisc replace dev "$va" root netem "${netem[@]}"
	check tc -n "$nsb" qdisc replace dev "$vb" root netem "${netem[@]}"
	[[ $spec != *ecn ]] || pacing_knobs on
	cnp0=$(cnps)
	noqp0=$(($(sr_hwc "$da" rcvd_no_qp) + $(sr_hwc "$db" rcvd_no_qp)))
	# Loss and delay: the default 67 ms ACK timeout, so that retransmit
	# timers fire (and RETRY_EXC_ERR may end a victim) before the kill.
	victim=()
	[[ $spec != *ecn ]] || victim=("${slow[@]}")
	for ((r = 1; r <= netem_rounds; r++)); do
		spawn "" "$bin" "${victim[@]}" --dev-a "$da" --dev-b "$db" --seed $((seed + r)) \
			--iters 1000000 --depth 16 --max-size 16K --timeout 60 >"$tmp/ri" 2>&1
		pid=$!
		if [[ $spec == *ecn ]]; then
			# Killed once this run's QPs are being paced (a rate cut
			# counted), not before its traffic began: a debug kernel
			# takes seconds to start it.
			c0=$(cnps)
			wait_for "((\$(cnps) > $c0)) || ! kill -0 $pid" 60 ||
				fail "netem $spec: round $r: no CNP handled within 60 s of the start: the QPs were never paced"
			kill -0 "$pid" 2>/dev/null || ended_early "netem $spec: round $r"
			rsleep 100 400
		else
			rsleep 400 1200
		fi
		killed "$pid"
	done
	sr_nap 0.5
	check tc -n "$nsa" qdisc del dev "$va" root
	check tc -n "$nsb" qdisc del dev "$vb" root
	noqp=$(($(sr_hwc "$da" rcvd_no_qp) + $(sr_hwc "$db" rcvd_no_qp) - noqp0))
	log "packets for QPs that were gone: rcvd_no_qp +$noqp"
	if [[ $spec == *ecn ]]; then
		pacing_knobs off
		log "CNPs handled (rate cuts): rp_cnp_handled +$(($(cnps) - cnp0))"
	fi
	expect_clean "after kill -9 under netem $spec"
done
subtest_begin "verified traffic after the netem kills"
integrity --iters 100 --depth 8
log "ok: traffic after part 2"

# --- 3. rmmod while traffic runs ------------------------------------------------------
# sroce implements disassociate_ucontext, so the RDMA core does not pin the
# module for open user contexts: rmmod must go ahead, unregister the devices
# and disassociate their users (their rings are unmapped, their calls fail
# and their CQs see nothing more). The process must notice and end - not
# hang, not crash the kernel.
subtest_begin "rmmod during traffic succeeds; the process ends with an error"
spawn "" "$bin" "${slow[@]}" --dev-a "$da" --dev-b "$db" --seed "$seed" --iters 1000000 --depth 16 \
	--max-size 64K --timeout 10 >"$tmp/ri" 2>&1
pid=$!
flowing "$tmp/ri"
rsleep 500 1500
rc=0
msg=$(rmmod sroce 2>&1) || rc=$?
if [[ $rc != 0 ]]; then
	killed "$pid"
	fail "rmmod during traffic failed ($rc: $msg): it must disassociate the users and succeed"
fi
log "rmmod succeeded during traffic: the devices' users were disassociated"
[[ ! -e /sys/module/sroce ]] || fail "rmmod returned 0 but sroce is still loaded"
if sr_exists "$da" || sr_exists "$db"; then
	fail "devices left after rmmod"
fi
if wait_for "! kill -0 $pid 2>/dev/null" 60; then
	rc=0
	wait "$pid" || rc=$?
	log "  rc_integrity exited with $rc: $(tail -n 2 "$tmp/ri" | tr '\n' ' ')"
	[[ $rc != 0 ]] || fail "rc_integrity reported success on a device that went away"
else
	fail "rc_integrity still runs 60 s after its devices were removed by rmmod"
fi
sroce_load
links
expect_clean "after rmmod during traffic"
subtest_begin "verified traffic after the reload"
integrity --iters 100 --depth 8
log "ok: traffic after part 3"

# --- 4. devices, netdevs and namespaces deleted during traffic ---------------------------
# under_traffic WHAT CMD...: start rc_integrity, run CMD in the middle, and
# give rc_integrity 30 s to fail by itself (it must not hang forever).
under_traffic() {
	local what=$1 rc=0
	shift
	subtest_begin "$what during traffic: the process ends, nothing left"
	spawn "" "$bin" "${slow[@]}" --dev-a "$da" --dev-b "$db" --seed $((seed + RANDOM)) --iters 1000000 \
		--depth 16 --max-size 64K --timeout 10 >"$tmp/ri" 2>&1
	pid=$!
	flowing "$tmp/ri"
	rsleep 500 1500
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/ri"; fail "$what: rc_integrity ended early"; }
	check "$@"
	if wait_for "! kill -0 $pid 2>/dev/null" 40; then
		wait "$pid" || rc=$?
		log "  rc_integrity exited with $rc: $(tail -n 2 "$tmp/ri" | tr '\n' ' ')"
		[[ $rc != 0 ]] || fail "$what: rc_integrity reported success"
	else
		log "  rc_integrity still running 40 s after the $what: killed"
		killed "$pid"
	fi
}

under_traffic "rdma link delete of a device" rdma link delete "$db"
sr_wait_gone "$db" || fail "$db still exists after rdma link delete"
expect_clean "after rdma link delete"
links
subtest_begin "verified traffic on a new device"
integrity --iters 100 --depth 8
log "ok: traffic on a new $db"

under_traffic "ip link del of the veth pair" ip -n "$nsb" link del "$vb"
sr_wait_gone "$da" || fail "$da survived its netdev"
sr_wait_gone "$db" || fail "$db survived its netdev"
expect_clean "after the netdev deletion"
topology
subtest_begin "verified traffic on a new veth pair"
integrity --iters 100 --depth 8
log "ok: traffic on a new veth pair"

# Namespace deletion. A namespace lives while a process is in it, so the
# traffic runs from inside namespace B; deleting the name and then killing
# the process must take B's veth, and with it both devices, away.
subtest_begin "namespace deleted during traffic: the devices go, nothing left"
spawn "$nsb" "$bin" "${slow[@]}" --dev-a "$da" --dev-b "$db" --seed "$seed" --iters 1000000 \
	--depth 16 --max-size 64K --timeout 10 >"$tmp/ri" 2>&1
pid=$!
flowing "$tmp/ri"
rsleep 500 1500
check ip netns del "$nsb"
rsleep 200 800
killed "$pid"
sr_wait_gone "$db" || fail "$db survived its namespace"
sr_wait_gone "$da" || fail "$da survived its peer's namespace (the veth pair)"
expect_clean "after the namespace deletion"

# --- the end: nothing left, the module goes, slab comes back -----------------------------
subtest_begin "at the end: no link left, rmmod succeeds"
rdma link show | grep -q "${SR_ID}" && fail "sroce links left: $(rdma link show | grep "$SR_ID")"
sr_module_release || fail "rmmod sroce failed at the end"
[[ ! -e /sys/module/sroce ]] || fail "sroce still loaded"
# Namespaces and sockets are freed after RCU grace periods: give them time.
slab1=$(sunreclaim)
for ((i = 0; i < 10 && ${SROCE_SLAB_CHECK:-1} != 0 && slab1 > slab0 + 8192; i++)); do
	sr_nap 1
	slab1=$(sunreclaim)
done
log "SUnreclaim: $slab0 kB before, $slab1 kB after ($((slab1 - slab0)) kB)"
if [[ ${SROCE_SLAB_CHECK:-1} == 0 ]]; then
	subtest_skip "unreclaimable slab back within 8 MiB" "SROCE_SLAB_CHECK=0: figures unchecked ($((slab1 - slab0)) kB)"
else
	subtest_begin "unreclaimable slab back within 8 MiB"
	((slab1 <= slab0 + 8192)) || fail "unreclaimable slab grew by $((slab1 - slab0)) kB (more than 8 MiB)"
	subtest_end
fi
log "all teardown checks passed"
