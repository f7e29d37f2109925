#!/bin/bash
# `make bench`: boot ONE QEMU guest (tools/vm/run), run tools/bench/guest.sh
# in it - perftest on sroce (two namespaces over a veth pair, and one device
# looping back), on rdma_rxe (one device looping back) and iperf3 TCP over the
# same veth pair - and print one table with sroce/rxe and sroce/TCP ratios;
# the same as JSON in build/bench/results.json.
#
# usage: tools/bench/run.sh [--quick] [--lossy | --insn] [--out DIR] [-- tools/vm/run options]
#   --quick    shorter runs (a few minutes less; noisier)
#   --lossy    goodput under netem instead (`make bench-lossy`,
#              tools/bench/lossy.sh): sroce go-back-N, rxe and TCP per
#              setting; lossy.json instead of results.json
#   --insn     executed guest instructions instead (`make bench-insn`,
#              tools/bench/insn_guest.sh): QEMU runs with the counting
#              plugin build/bench/sroce_insn.so; instructions per byte and
#              per message, sroce and rxe; insn.json instead of results.json
#   --out DIR  default build/bench: results.json there, the VM run in DIR/vm
#
# The guest is QEMU TCG (no KVM on the development machines): absolute
# figures mean nothing for real hardware, only ratios between stacks
# measured in the same boot do. Benchmarks are not tests: there are no
# pass/fail thresholds; the exit status is non-zero only if the run itself
# broke (VM failure, kernel splat, no results).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

out=$root/build/bench guest_args=() vm_args=() lossy=0 insn=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--quick) guest_args+=(--quick); shift ;;
	--lossy) lossy=1; shift ;;
	--insn) insn=1; shift ;;
	--out) out=$2; shift 2 ;;
	--) shift; vm_args=("$@"); break ;;
	-h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench: unknown argument $1" >&2; exit 2 ;;
	esac
done
((lossy + insn < 2)) || { echo "bench: --lossy and --insn exclude each other" >&2; exit 2; }
# SROCE_KO: another build of the module (selftests/lib.sh loads it in the guest).
for f in "${SROCE_KO:-$root/kernel/sroce.ko}" "$root/build/user/libsroce-rdmav"*.so; do
	[[ -f "$f" ]] || { echo "bench: $f is not built (run make)" >&2; exit 1; }
done
if ((insn)); then
	for f in "$root/build/bench/sroce_insn.so" "$root/build/bench/insn_mark"; do
		[[ -f "$f" ]] || { echo "bench: $f is not built (run make bench-insn-tools)" >&2; exit 1; }
	done
fi
mkdir -p "$out"
out=$(realpath "$out")
# The guest script, its raw results and their report: make bench's,
# make bench-lossy's or make bench-insn's.
report_args=()
if ((lossy)); then
	script=lossy.sh raw=lossy-raw.jsonl report=lossy_report.py json=lossy.json vm_out=$out/vm-lossy
elif ((insn)); then
	script=insn_guest.sh raw=insn-raw.jsonl report=insn_report.py json=insn.json vm_out=$out/vm-insn
	# The plugin writes its marks straight to the host, next to the
	# guest's raw results (QEMU's option syntax: no commas in the paths).
	marks=$vm_out/insn-marks.txt
	[[ "$root$marks" != *,* ]] || { echo "bench: --insn needs paths without commas" >&2; exit 1; }
	mkdir -p "$vm_out"
	rm -f "$marks"
	vm_args=(--qemu-arg -plugin --qemu-arg "file=$root/build/bench/sroce_insn.so,arg=out=$marks" "${vm_args[@]}")
	# The counts depend on the guest CPU model (--cpu) and kernel: recorded.
	report_args=(--marks "$marks" --meta "vm_args=${vm_args[*]:4}")
else
	script=guest.sh raw=bench-raw.jsonl report=report.py json=results.json vm_out=$out/vm
fi
rm -f "$vm_out/$raw" "$out/$json"

# The guest sees $vm_out as /run/sroce-out (tools/vm/guest-init.sh): the
# only place it can write to that the host sees.
rc=0
"$root/tools/vm/run" --timeout 2400 --out "$vm_out" "${vm_args[@]}" -- \
	"tools/bench/$script" --out /run/sroce-out "${guest_args[@]}" || rc=$?
if [[ ! -s "$vm_out/$raw" ]]; then
	echo "bench: the guest produced no results (vm exit $rc); see $vm_out" >&2
	exit 1
fi
[[ $rc == 0 ]] || echo "bench: WARNING: the VM run exited with $rc (results may be partial; see $vm_out)" >&2
echo
python3 "$here/$report" "$vm_out/$raw" "$out/$json" "${report_args[@]}" \
	--meta "kernel=$("$root/tools/kver.sh")" \
	--meta "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
	--meta "git=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)" \
	--meta "host_cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')" \
	--meta "vm_exit=$rc"
exit "$rc"
