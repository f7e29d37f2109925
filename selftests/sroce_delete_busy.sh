#!/bin/bash
# timeout: 120
#
# Deleting a device (rdma link delete) while a process holds it open must not
# block until that process exits: the RDMA core can only disassociate user
# contexts of drivers that implement ops.disassociate_ucontext; without it
# ib_uverbs_remove_one() waits (uninterruptibly) for the last user, and the
# same wait stalls netdev deletion and namespace cleanup. Needs the provider.
export SR_TAG=db # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns=$SR_ID dev=${SR_ID}d name=${SR_ID}ib

sr_setup
require_cmd ibv_asyncwatch
sr_have_provider || skip "no provider: build/user/libsroce-rdmav<N>.so is not built"
ns_create "$ns"
sr_dummy "$ns" "$dev"
sr_link_add "$ns" "$name" "$dev"

sr_asyncwatch "$name"

subtest_begin "rdma link delete with the device open does not block"
ns_exec "$ns" rdma link delete "$name" &
deleter=$!
if wait_for "! kill -0 $deleter" 10; then
	wait "$deleter" || fail "rdma link delete failed with a user open"
	! sr_exists "$name" || fail "$name still exists"
	log "ok: rdma link delete completed with a process holding $name open"
	log "watcher: $(cat "$events")"
	log "PASS"
	exit 0
fi
rdma_pid=$(pgrep -P "$deleter" || echo "$deleter")
log "rdma link delete still blocked after 10 s; its kernel stack:"
head -n 8 "/proc/$rdma_pid/stack" 2>/dev/null || true
# Unblock it so that the test cleans up.
kill "$watcher"
wait "$watcher" 2>/dev/null || true
wait_for "! kill -0 $deleter" 20 || fail "rdma link delete still blocked after the user exited"
fail "rdma link delete blocked until the process holding $name open exited (sroce implements no disassociate_ucontext)"
