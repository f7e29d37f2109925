# shellcheck shell=bash
# Sourced by the command guest A runs under tools/vm/two-guests: runs
# commands in guest B through tools/vm/peer-agent.sh (see there for the
# files in the shared directory). No "set -e" here, and only builtins in the
# waiting loops.
#
#   peer_ready [SECS]        wait for the agent (default 120 s)
#   peer_start 'SCRIPT'      start SCRIPT (bash, in the repo) in B; its job
#                            number goes to $PEER_JOB
#   peer_wait JOB [SECS]     wait for it (default 300 s) and return its
#                            status; on timeout kill it and return 124
#   peer_out JOB             its output so far
#   peer_run 'SCRIPT' [SECS] start, wait, print the output; the status
#   peer_kill JOB            kill it (its process group) and wait for it
#   peer_quit                end the agent (tools/vm/two-guests does it too)
#   peer_wait_mark JOB NAME [SECS]
#                            wait until the job said NAME (peer_mark NAME in
#                            its script) or ended: 0 if it said it
# $PEER_PREAMBLE is put in front of every script (environment, sourcing).
# In the script, $PEER_JOB is its number and peer_mark NAME says NAME (e.g.
# "ready": a server is listening).

PEER_DIR=${SROCE_PEER_DIR:-/run/sroce-share}
PEER_JOBS=$PEER_DIR/jobs
PEER_PREAMBLE=${PEER_PREAMBLE:-}
PEER_JOB=0
_peer_next=1
_peer_idle=/run/sroce-peer-idle-a
[[ -p $_peer_idle ]] || mkfifo "$_peer_idle"
_peer_nap() { read -rt "$1" <>"$_peer_idle" || true; }

peer_ready() {
	local limit=${1:-120} t0=$SECONDS
	until [[ -e $PEER_DIR/agent.ready ]]; do
		((SECONDS - t0 < limit)) || return 1
		_peer_nap 0.1
	done
	# Jobs of an earlier run would confuse the numbering.
	[[ ! -e $PEER_JOBS/1.go ]] || { echo "peer: $PEER_JOBS is not empty" >&2; return 1; }
}

peer_start() {
	local n=$_peer_next
	# A job started from a subshell ($(peer_run ...)) advanced only the
	# subshell's counter: skip the numbers taken.
	while [[ -e $PEER_JOBS/$n.sh ]]; do n=$((n + 1)); done
	_peer_next=$((n + 1))
	{
		printf 'cd %q || exit 125\n' "${SROCE_ROOT:-$PWD}"
		printf 'PEER_JOB=%d PEER_JOBS=%q\n' "$n" "$PEER_JOBS"
		# shellcheck disable=SC2016 # expanded in guest B
		printf 'peer_mark() { : >"$PEER_JOBS/$PEER_JOB.$1"; }\n'
		printf '%s\n%s\n' "$PEER_PREAMBLE" "$1"
	} >"$PEER_JOBS/$n.sh"
	: >"$PEER_JOBS/$n.go"
	PEER_JOB=$n
}

peer_wait() {
	local n=$1 limit=${2:-300} t0=$SECONDS rc
	until [[ -e $PEER_JOBS/$n.done ]]; do
		if ((SECONDS - t0 >= limit)); then
			echo "peer: job $n still running after ${limit}s; killing it" >&2
			peer_kill "$n"
			return 124
		fi
		_peer_nap 0.05
	done
	read -r rc <"$PEER_JOBS/$n.rc" || rc=125
	return "${rc:-125}"
}

peer_kill() {
	local n=$1 t0=$SECONDS
	[[ -e $PEER_JOBS/$n.done ]] && return 0
	: >"$PEER_JOBS/$n.kill"
	until [[ -e $PEER_JOBS/$n.done ]] || ((SECONDS - t0 > 20)); do _peer_nap 0.1; done
}

peer_wait_mark() {
	local n=$1 mark=$2 limit=${3:-60} t0=$SECONDS
	until [[ -e $PEER_JOBS/$n.$mark ]]; do
		[[ ! -e $PEER_JOBS/$n.done ]] || return 1
		((SECONDS - t0 < limit)) || return 1
		_peer_nap 0.05
	done
}

peer_out() { [[ ! -e $PEER_JOBS/$1.out ]] || cat "$PEER_JOBS/$1.out"; }

peer_run() {
	local rc=0
	peer_start "$1"
	peer_wait "$PEER_JOB" "${2:-300}" || rc=$?
	peer_out "$PEER_JOB"
	return "$rc"
}

peer_quit() { : >"$PEER_DIR/quit"; }
