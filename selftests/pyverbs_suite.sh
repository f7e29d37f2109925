#!/bin/bash
# timeout: 1200
#
# rdma-core 44's own pyverbs test suite (python3-pyverbs ships it, partly
# gzipped, as /usr/share/doc/rdma-core/tests) run unmodified against one sroce
# device:
#  - a copy of the suite is unpacked into a temporary directory and run with
#    "--dev DEV --port 1 -v" through a small runner next to run_tests.py
#    (sroce_runner.py, written below: the suite's own loader and argument
#    parser, plus a result class that records one line per test and a
#    per-test time limit, so a hung test costs minutes, not the whole run);
#  - the device sits on the guest's virtio-net NIC (tools/vm/run gives the
#    guest one, eth0, connected to nothing), moved with an IPv4 and an IPv6
#    address into a namespace of its own (python runs in that namespace) and
#    moved back at the end. The NIC matters because the device then has a
#    parent device, and the suite finds a device's IP address - which the
#    RDMA CM tests (test_rdmacm) need - through
#    /sys/class/infiniband/DEV/device/net/. Without a free virtio NIC (a
#    guest booted with --no-nic) a dummy netdev takes its place and those
#    tests skip. The suite's "two nodes" are two sets of resources of one
#    process on one device, so every packet loops back through the device's
#    UDP socket;
#  - the suite picks the GID itself (the first non-zero one: the link-local
#    RoCE v2 GID); SROCE_PYVERBS_GID=N passes --gid N instead;
#  - 16 huge pages of 2 MiB are reserved for the tests that want some;
#  - the vendor modules (test_mlx5_*, test_efa*: 102 tests, each of which
#    opens an mlx5 or EFA context in its set-up and skips on any other
#    device, 2-5 s apiece under TCG) are not run: their tests are recorded
#    as skipped, "vendor-specific module", one skipped sub-case.
# Sub-cases (sroce): each test listed in selftests/pyverbs_expected.txt (the
# tests expected to pass on sroce, from a real run) is one - it fails if it
# skipped, errored, failed or did not run (a "# needs: nic" test without the
# virtio NIC is skipped instead); a test not on the list that passes is a
# passed sub-case, reported as one to add to the list; a test not on the list
# that fails or errors fails; the suite's other skips are one skipped
# sub-case per reason (see Documentation/pyverbs.rst for each). The rxe
# backend has no list: each pass is a sub-case. Prints the counts, every
# non-pass with its reason, and the suite's verbose log.
#
# Knobs:
#   SROCE_PYVERBS_BACKEND=rxe  the same run on one rdma_rxe device (on the
#                              virtio NIC, else a dummy, in the initial
#                              namespace: 6.1's rxe only works there) - the
#                              baseline, not a test of sroce
#   SROCE_PYVERBS_NETDEV=dummy  use a dummy netdev even when there is a virtio
#                              NIC (default "auto": the NIC when it is free;
#                              "nic": fail without one)
#   SROCE_PYVERBS_TESTS="tests.test_qp tests.test_mr.MRTest"  only these (and
#                              only the expected tests among them)
#   SROCE_PYVERBS_EXPECTED=FILE  the list of tests expected to pass (default
#                              selftests/pyverbs_expected.txt; sroce only)
#   SROCE_PYVERBS_TEST_TIMEOUT=300  per-test limit in seconds
#   SROCE_PYVERBS_SUITE_TIMEOUT=1000  limit for the whole suite
#   SROCE_PYVERBS_SUITE=DIR   the suite's directory (default: rdma-core's)
#   SROCE_PYVERBS_SAVE_DIR=DIR  also copy the per-test results (TSV) and the
#                              log there (default: tools/vm/run's OUT share,
#                              /run/sroce-out, when it exists)
#   SROCE_PYVERBS_NETDEV_HINT=1  diagnostic, not a test of the unmodified
#                              suite: find the netdev (so the IP address the
#                              RDMA CM tests need) from the GID table, not from
#                              /sys/class/infiniband/DEV/device/net/, which
#                              only a device with a parent (PCI, virtio)
#                              device has
SR_TAG=pv
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

backend=${SROCE_PYVERBS_BACKEND:-sroce}
case $backend in
sroce | rxe) ;;
*) fail "SROCE_PYVERBS_BACKEND=$backend: want sroce or rxe" ;;
esac
[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM (tools/vm/run -- selftests/run.sh)"
require_cmd ip rdma ss jq gzip timeout ibv_devices
suite_src=${SROCE_PYVERBS_SUITE:-/usr/share/doc/rdma-core/tests}
[[ -f $suite_src/run_tests.py ]] ||
	skip "the pyverbs test suite is not installed ($suite_src/run_tests.py; apt-get install python3-pyverbs)"
"$PYTHON" -c 'import pyverbs.device' 2>/dev/null || skip "$PYTHON cannot import pyverbs (python3-pyverbs)"
test_timeout=${SROCE_PYVERBS_TEST_TIMEOUT:-300}
suite_timeout=${SROCE_PYVERBS_SUITE_TIMEOUT:-1000}
read -ra only <<<"${SROCE_PYVERBS_TESTS:-}"
netdev_kind=${SROCE_PYVERBS_NETDEV:-auto}
case $netdev_kind in
auto | nic | dummy) ;;
*) fail "SROCE_PYVERBS_NETDEV=$netdev_kind: want auto, nic or dummy" ;;
esac

tmp=$(mktemp -d)
defer rm -rf "$tmp"
cp -r "$suite_src" "$tmp/tests"
gunzip -f "$tmp"/tests/*.gz
log "suite: $suite_src ($(find "$tmp/tests" -name 'test_*.py' | wc -l) test modules)," \
	"python-pyverbs $(dpkg-query -W -f '${Version}' python3-pyverbs 2>/dev/null || echo '?')"

# The runner: run_tests.py's three lines (the suite's argument parser and
# loader, unittest.main) with a result class that also writes
# "<outcome>\t<test id>\t<seconds>\t<reason>" lines to $SROCE_PYVERBS_RESULTS,
# and SIGALRM as a per-test time limit.
cat >"$tmp/tests/sroce_runner.py" <<'EOF'
import os, signal, sys, time, traceback, unittest
from importlib.machinery import SourceFileLoader
from args_parser import parser

results = open(os.environ['SROCE_PYVERBS_RESULTS'], 'w', buffering=1)
limit = int(os.environ.get('SROCE_PYVERBS_TEST_TIMEOUT', '300'))


class TestTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise TestTimeout(f'test exceeded {limit} s (sroce_runner per-test limit)')


def oneline(s):
    return ' '.join(str(s).split())[:400]


def exc_reason(err):
    """The exception, and where: the last frames in a test_*.py and in the suite."""
    etype, value, tb = err
    here = os.path.dirname(os.path.abspath(__file__))
    test_fs = suite_fs = None
    for fs in traceback.extract_tb(tb):
        if os.path.dirname(os.path.abspath(fs.filename)) == here:
            suite_fs = fs
            if os.path.basename(fs.filename).startswith('test_'):
                test_fs = fs
    where = [f'{os.path.basename(f.filename)}:{f.lineno} {f.name}'
             for f in (test_fs, suite_fs) if f is not None]
    where = list(dict.fromkeys(where))
    return oneline(f'{etype.__name__}: {value}' + (f' [{" < ".join(reversed(where))}]' if where else ''))


class Result(unittest.TextTestResult):
    def startTest(self, test):
        self._t0 = time.monotonic()
        signal.alarm(limit)
        super().startTest(test)

    def stopTest(self, test):
        signal.alarm(0)
        super().stopTest(test)

    def _rec(self, outcome, test, reason=''):
        results.write(f'{outcome}\t{test.id()}\t{time.monotonic() - getattr(self, "_t0", time.monotonic()):.1f}\t{reason}\n')

    def addSuccess(self, test):
        super().addSuccess(test)
        self._rec('pass', test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._rec('fail', test, exc_reason(err))

    def addError(self, test, err):
        super().addError(test, err)
        self._rec('error', test, exc_reason(err))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._rec('skip', test, oneline(reason))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._rec('xfail', test, exc_reason(err))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._rec('upass', test)


signal.signal(signal.SIGALRM, on_alarm)
module_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '__init__.py')
tests = SourceFileLoader('tests', module_path).load_module()

if os.environ.get('SROCE_PYVERBS_NETDEV_HINT') == '1':
    # Diagnostic only (not the unmodified suite): the suite finds a device's
    # netdev - and so its IP address, which the RDMA CM tests need - through
    # /sys/class/infiniband/DEV/device/net/, which only exists for a device
    # with a parent (PCI) device. Take it from the GID table instead.
    def _get_ip_mac(self, dev, port, idx):
        ndev = None
        try:
            with open(f'/sys/class/infiniband/{dev}/ports/{port}/gid_attrs/ndevs/{idx or 0}') as f:
                ndev = f.read().strip()
        except OSError:
            pass
        try:
            ip_addr, mac_addr = self.get_ip_mac_address(ndev) if ndev else (None, None)
        except (KeyError, IndexError):
            ip_addr = mac_addr = None
        self.args.append([dev, port, idx, ip_addr, mac_addr])
    tests.base.RDMATestCase._get_ip_mac = _get_ip_mac
    print('sroce_runner: SROCE_PYVERBS_NETDEV_HINT=1: netdev taken from gid_attrs/ndevs', file=sys.stderr)
# The vendor modules (test_mlx5_*, test_efa*) open an mlx5 or EFA context in
# each test's set-up and skip when the device is neither: under TCG that
# costs 2-5 s per test, 102 tests, about 210 s of the suite's 510 (measured
# on sroce, 2026-12-02; every one of them skipped). sroce and rxe are
# neither, so their tests are recorded as skipped, with that reason, without
# being run.
parser.parse_args()
VENDOR = ('test_mlx5_', 'test_efa')
kept = []
for mod in tests.__test_modules__:
    if mod.__name__.rsplit('.', 1)[-1].startswith(VENDOR):
        for case in unittest.TestLoader().loadTestsFromModule(mod):
            for t in case:
                results.write(f'skip\t{t.id()}\t0.0\tvendor-specific module (mlx5, EFA): not run on this device (sroce_runner)\n')
    else:
        kept.append(mod)
tests.__test_modules__[:] = kept
unittest.main(module=tests, testRunner=unittest.TextTestRunner(resultclass=Result, verbosity=2))
EOF

# --- the device -------------------------------------------------------------------
# free_virtio_nic: the name of a virtio-net netdev in the initial namespace
# that nobody uses (down, no IPv4 or global IPv6 address); returns 1 if none.
free_virtio_nic() {
	local n
	for n in /sys/class/net/*; do
		[[ "$(readlink "$n/device/driver" 2>/dev/null)" == */virtio_net ]] || continue
		n=${n##*/}
		[[ -z "$(ip -br addr show dev "$n" scope global 2>/dev/null | awk '{ print $3 }')" ]] || continue
		ip link show dev "$n" | grep -q '[<,]UP[,>]' && continue
		echo "$n"
		return 0
	done
	return 1
}

v4=192.0.2.1 v6=2001:db8::1
nic=''
if [[ $netdev_kind != dummy ]]; then
	nic=$(free_virtio_nic) || true
	[[ -n $nic || $netdev_kind != nic ]] ||
		fail "SROCE_PYVERBS_NETDEV=nic, but the guest has no free virtio-net netdev"
fi
netdev=${nic:-${SR_ID}d}
if [[ $backend == sroce ]]; then
	sr_setup
	ns=${SR_ID}
	dev=${SR_ID}s
	ns_create "$ns"
	if [[ -n $nic ]]; then
		# Back to the initial namespace (down, addresses gone) before the
		# namespace goes; deleting it would do the same, but asynchronously.
		ip link set "$nic" netns "$ns"
		defer_quiet ip -n "$ns" link set "$nic" netns 1
		ip -n "$ns" link set "$nic" up
	else
		sr_dummy "$ns" "$netdev"
	fi
	ip -n "$ns" addr add "$v4/24" dev "$netdev"
	ip -n "$ns" addr add "$v6/64" dev "$netdev" nodad
	sr_link_add "$ns" "$dev" "$netdev"
	provider_env
	log "sroce.ko $(stat -c '%y' "$(sroce_module_path)" | cut -d. -f1)," \
		"provider $(stat -c '%y' "$(provider_so)" | cut -d. -f1)" \
		"($(git -C "$SROCE_ROOT" describe --always --dirty 2>/dev/null || echo '?'))"
else
	require_module rdma_rxe
	ns=-
	dev=${SR_ID}x
	if [[ -n $nic ]]; then
		defer_quiet ip link set "$nic" down
		defer_quiet ip addr flush dev "$nic"
		ip link set "$nic" up
	else
		sr_dummy - "$netdev"
	fi
	ip addr add "$v4/24" dev "$netdev"
	ip addr add "$v6/64" dev "$netdev" nodad
	defer_quiet rdma link delete "$dev"
	rdma link add "$dev" type rxe netdev "$netdev" || fail "rdma link add $dev type rxe netdev $netdev failed"
fi
# Wait for the GIDs of both addresses (the suite reads the table once per test).
gids_ready() {
	local g
	g=$(cat "$SR_SYS/$dev"/ports/1/gids/* 2>/dev/null)
	grep -q ':ffff:c000:0201$' <<<"$g" && grep -q '^2001:0db8:' <<<"$g"
}
wait_for gids_ready 20 || fail "$dev: no GIDs for $v4 and $v6 after 20 s"
log "device $dev ($backend) on $netdev ($(if [[ -n $nic ]]; then echo virtio-net NIC; else echo dummy; fi))" \
	"in netns ${ns/#-/init}; port 1 GIDs:"
for f in "$SR_SYS/$dev"/ports/1/gids/*; do
	g=$(<"$f") 2>/dev/null || continue
	[[ $g != 0000:0000:0000:0000:0000:0000:0000:0000 ]] || continue
	log "  ${f##*/}: $g $(cat "$SR_SYS/$dev/ports/1/gid_attrs/types/${f##*/}" 2>/dev/null)"
done
log "RDMA devices visible: $(ns_exec "$ns" ibv_devices | awk 'NR > 2 { printf "%s ", $1 }')"
# What the suite's RDMA CM tests look for (in the namespace python runs in).
pnet=$(ns_exec "$ns" sh -c "ls $SR_SYS/$dev/device/net/ 2>/dev/null" || true)
log "$SR_SYS/$dev/device/net/: ${pnet:-(none: the RDMA CM tests will skip)}"

# A few tests (parent domain, ODP) need 2 MiB huge pages: reserve some, so that
# they are judged on what the device supports, not on the guest's settings.
hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [[ -w $hp ]]; then
	hp_old=$(<"$hp")
	if ((hp_old < 16)); then
		defer_quiet eval "echo $hp_old >$hp"
		echo 16 >"$hp" 2>/dev/null || true
	fi
	log "2 MiB huge pages: $(<"$hp") (were $hp_old)"
fi

# --- the run ----------------------------------------------------------------------
args=(--dev "$dev" --port 1 -v)
[[ -z "${SROCE_PYVERBS_GID:-}" ]] || args+=(--gid "$SROCE_PYVERBS_GID")
log "+ [${ns/#-/init}] $PYTHON tests/sroce_runner.py ${args[*]} ${only[*]}"
[[ $backend != sroce ]] || sr_dmesg_mark
rc=0
t0=$SECONDS
(
	cd "$tmp"
	export SROCE_PYVERBS_RESULTS=$tmp/results.tsv SROCE_PYVERBS_TEST_TIMEOUT=$test_timeout
	ns_exec "$ns" timeout -k 10 "$suite_timeout" "$PYTHON" tests/sroce_runner.py "${args[@]}" "${only[@]}"
) >"$tmp/suite.log" 2>&1 || rc=$?
log "suite exited with $rc after $((SECONDS - t0)) s"
touch "$tmp/results.tsv"

count() { awk -F'\t' -v o="$1" '$1 == o { n++ } END { print n + 0 }' "$tmp/results.tsv"; }
npass=$(count pass) nfail=$(count fail) nerr=$(count error) nskip=$(count skip)
nxfail=$(count xfail) nupass=$(count upass)
ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$tmp/suite.log" | tail -n1)

log ""
log "=== the suite's verbose log"
sed 's/^/  | /' "$tmp/suite.log"
log ""
log "=== results by outcome (outcome, test, seconds, reason)"
for o in fail error upass xfail skip pass; do
	awk -F'\t' -v o="$o" '$1 == o { printf "  %-5s %s (%ss): %s\n", $1, $2, $3, $4 }' "$tmp/results.tsv"
done
log ""
log "=== skips by reason"
awk -F'\t' '$1 == "skip" { n[$4]++ } END { for (r in n) printf "  %3d  %s\n", n[r], r }' \
	"$tmp/results.tsv" | sort -rn
if [[ $backend == sroce ]] && sr_dmesg_since | grep -qi sroce; then
	log ""
	log "=== kernel log lines about sroce during the run"
	sr_dmesg_since | grep -i sroce | tail -n 40 | sed 's/^/  dmesg| /'
fi
save=${SROCE_PYVERBS_SAVE_DIR:-/run/sroce-out}
if [[ -d $save && -w $save ]]; then
	cp "$tmp/results.tsv" "$save/pyverbs-$backend-$dev.tsv"
	cp "$tmp/suite.log" "$save/pyverbs-$backend-$dev.log"
	log ""
	log "results saved as $save/pyverbs-$backend-$dev.{tsv,log} (tools/vm/run's OUT directory)"
fi
what="$backend ($dev on $(if [[ -n $nic ]]; then echo "virtio $nic"; else echo dummy; fi)${SROCE_PYVERBS_GID:+, --gid $SROCE_PYVERBS_GID}"
[[ "${SROCE_PYVERBS_NETDEV_HINT:-}" != 1 ]] || what+=", SROCE_PYVERBS_NETDEV_HINT=1"
[[ ${#only[@]} == 0 ]] || what+=", only ${only[*]}"
log ""
log "pyverbs suite on $what): ran ${ran:-?}: $npass passed, $nfail failed, $nerr errors," \
	"$nskip skipped, $nxfail expected failures, $nupass unexpected successes"

# --- the verdicts, as sub-cases -------------------------------------------------------
expected=/dev/null
if [[ $backend == sroce ]]; then
	expected=${SROCE_PYVERBS_EXPECTED:-$SROCE_ROOT/selftests/pyverbs_expected.txt}
	[[ -r $expected ]] || fail "$expected is missing"
fi
# AWK: TAP lines from the expected list (test id, "# needs: nic") and the
# results (outcome, id, seconds, reason); "only" restricts the list to the
# tests asked for; "nic" is 1 when the device is on the virtio NIC.
awk -F'\t' -v only=" ${only[*]} " -v nic="$([[ -n $nic ]] && echo 1 || echo 0)" '
	function asked(id,   k, n, w) {
		if (only == "  ") return 1
		n = split(only, w, " ")
		for (k = 1; k <= n; k++)
			if (id == w[k] || index(id, w[k] ".") == 1) return 1
		return 0
	}
	FNR == NR {
		line = $0
		sub(/^[ \t]+/, "", line)
		if (line == "" || line ~ /^#/) next
		id = line; sub(/[ \t].*/, "", id)
		if (!asked(id)) next
		want[id] = 1; order[++n] = id
		needs[id] = (line ~ /# *needs: *nic/)
		next
	}
	{ out[$2] = $1; why[$2] = $4 }
	END {
		for (i = 1; i <= n; i++) {
			id = order[i]; o = out[id]; r = why[id]
			if (needs[id] && !nic && (o == "" || o == "skip")) {
				printf "ok - %s # SKIP needs the virtio NIC (no free one: a dummy netdev instead)\n", id
			} else if (o == "pass" || o == "upass") {
				printf "ok - %s\n", id
			} else if (o == "") {
				printf "not ok - %s # expected to pass: did not run\n", id
			} else {
				printf "not ok - %s # expected to pass: %s%s\n", id, (o == "skip" ? "skipped" : o), (r == "" ? "" : ": " r)
			}
		}
		for (id in out) {
			if (id in want) continue
			o = out[id]
			if (o == "pass" || o == "upass") {
				printf "ok - %s\n", id
				print id > "/dev/stderr"
			} else if (o == "skip") {
				ns[why[id]]++
			} else {
				printf "not ok - %s # %s: %s\n", id, o, why[id]
			}
		}
		for (r in ns)
			printf "ok - %d test%s: %s # SKIP the suite skips them on this device\n", ns[r], (ns[r] > 1 ? "s" : ""), r
	}' "$expected" "$tmp/results.tsv" >"$tmp/verdicts.tap" 2>"$tmp/unlisted" || fail "judging the results failed"
[[ -n "$ran" ]] || fail "the suite did not finish (exit $rc); see its log above"
total=$((npass + nfail + nerr + nskip + nxfail + nupass))
# The vendor modules' tests are recorded without being run (sroce_runner.py).
nvendor=$(awk -F'\t' '$1 == "skip" && $4 ~ /^vendor-specific module/ { n++ } END { print n + 0 }' "$tmp/results.tsv")
[[ $((total - nvendor)) == "$ran" ]] ||
	fail "the runner recorded $total results ($nvendor of vendor modules, not run), unittest ran $ran"
if [[ $backend == sroce && -s $tmp/unlisted ]]; then
	log ""
	log "=== NOTE: $(wc -l <"$tmp/unlisted") test(s) passed that $expected does not list; add them:"
	sed 's/^/  /' "$tmp/unlisted"
fi
log ""
log "=== verdicts"
subtests_from_tap "$tmp/verdicts.tap" pyverbs 0
log "pyverbs on $what): $(grep -c '^ok' "$tmp/verdicts.tap" || true) sub-cases ok or skipped," \
	"$(grep -c '^not ok' "$tmp/verdicts.tap" || true) failed"
