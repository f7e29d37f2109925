#!/bin/bash
# Guest A's command for tools/vm/test/two-guests-selftest.sh.
# shellcheck source=tools/vm/peer.sh
source tools/vm/peer.sh
t() { if [[ $1 == 0 ]]; then echo "ok $2 - $3"; else echo "not ok $2 - $3"; fi; }
peer_ready 120 || { echo "not ok 1 - guest B's agent did not start"; exit 1; }
out=$(peer_run 'echo hi from B; exit 3')
rc=$?
[[ $rc == 3 && $out == "hi from B" ]]
t $? 1 "a job's exit status and output come back (got $rc, '$out')"
peer_start 'sleep 100'
peer_wait "$PEER_JOB" 2
rc=$?
[[ $rc == 124 ]]
t $? 2 "a job past its limit is killed: 124 (got $rc)"
peer_start 'sleep 1; peer_mark ready; sleep 1; exit 5'
j=$PEER_JOB
peer_wait_mark "$j" ready 20
t $? 3 "peer_wait_mark sees the job's mark"
peer_wait "$j" 20
rc=$?
[[ $rc == 5 ]]
t $? 4 "the status after a mark (got $rc)"
x=$(peer_run 'echo from a subshell')
peer_run 'echo next' >/dev/null
[[ $x == "from a subshell" && $PEER_JOB == 5 ]]
t $? 5 "a job started in a subshell takes its number: the next one is 5 (got $PEER_JOB)"
# Now a fake kernel warning in guest B: the harness must fail the run.
peer_run "echo 'WARNING: CPU: 1 PID: 4242 at drivers/fake/fake.c:42 fake_fn+0x1/0x2' >/dev/kmsg"
