#!/bin/bash
# Guest B of tools/vm/two-guests: runs what guest A asks, until A says quit.
#
# The two guests share a host directory, /run/sroce-share (tools/vm/run
# --share, mounted uncached, so what one guest writes the other reads at
# once). Guest A (tools/vm/peer.sh) writes job N as jobs/N.sh and then the
# marker jobs/N.go; jobs are numbered 1, 2, 3, ... and this agent starts each
# in that order, as soon as its marker appears, in the background (so A can
# start a server here and then a client at home). A job runs in the
# repository with bash, in its own process group, its output in jobs/N.out;
# when it ends its status goes to jobs/N.rc and then the marker jobs/N.done.
# jobs/N.kill asks for the job's process group to be killed (SIGTERM, then
# SIGKILL 5 s later; status 143). The file "quit" ends the agent (and any job left).
#
# Only bash builtins in the polling loop: every exec of a host binary over
# 9p costs ~0.15 s under TCG.
set -uo pipefail
set -m # each background job gets its own process group

dir=${SROCE_PEER_DIR:-/run/sroce-share}
jobs=$dir/jobs
[[ -d $dir ]] || { echo "peer-agent: no shared directory $dir (tools/vm/run --share)" >&2; exit 2; }
mkdir -p "$jobs"
idle=/run/sroce-peer-idle
[[ -p $idle ]] || mkfifo "$idle"
nap() { read -rt "$1" <>"$idle" || true; }

declare -A pid_of=() killed_at=()
next=1
echo "peer-agent: ready on $(</proc/sys/kernel/hostname), kernel $(</proc/sys/kernel/osrelease)"
echo "ready $$" >"$dir/agent.ready"

while [[ ! -e $dir/quit ]]; do
	while [[ -e $jobs/$next.go ]]; do
		n=$next
		next=$((next + 1))
		(
			set +m
			bash "$jobs/$n.sh" </dev/null >"$jobs/$n.out" 2>&1
			echo $? >"$jobs/$n.rc"
			: >"$jobs/$n.done"
		) &
		pid_of[$n]=$!
	done
	for n in "${!pid_of[@]}"; do
		p=${pid_of[$n]}
		if [[ -e $jobs/$n.done ]]; then
			wait "$p" 2>/dev/null
			unset "pid_of[$n]" "killed_at[$n]"
		elif [[ -e $jobs/$n.kill && -z ${killed_at[$n]:-} ]]; then
			kill -TERM -- "-$p" 2>/dev/null
			killed_at[$n]=$SECONDS
		elif [[ -n ${killed_at[$n]:-} ]]; then
			# Killed with its subshell, the job cannot report itself.
			if kill -0 "$p" 2>/dev/null && ((SECONDS - killed_at[$n] >= 5)); then
				kill -KILL -- "-$p" 2>/dev/null
			elif ! kill -0 "$p" 2>/dev/null; then
				echo 143 >"$jobs/$n.rc"
				: >"$jobs/$n.done"
			fi
		fi
	done
	nap 0.05
done

for n in "${!pid_of[@]}"; do
	echo "peer-agent: job $n still running at quit; killing it"
	kill -KILL -- "-${pid_of[$n]}" 2>/dev/null
done
echo "peer-agent: quit after $((next - 1)) jobs"
exit 0
