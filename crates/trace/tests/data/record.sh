#!/usr/bin/env bash
# Records the traces in this folder: a kicklab run under `perf record -a`,
# printed with `perf script --ns` and compressed, beside the run's own
# `--json` output (its measured costs: what `kicklab trace` is checked
# against). Needs perf with the sched, syscalls and kvm tracepoints, root
# (or perf_event_paranoid <= -1) and, for the kvm cases, /dev/kvm.
#
#   bash crates/trace/tests/data/record.sh target/release/kicklab OUTDIR
set -euo pipefail
kicklab=$(realpath "$1")
out=${2:-.}
mkdir -p "$out"
cd "$out"
events=(-e sched:sched_switch -e sched:sched_waking
        -e kvm:kvm_exit -e kvm:kvm_entry -e kvm:kvm_pio -e kvm:kvm_mmio
        -e kvm:kvm_emulate_insn -e kvm:kvm_userspace_exit
        -e syscalls:sys_enter_futex -e syscalls:sys_exit_futex
        -e syscalls:sys_enter_read -e syscalls:sys_exit_read
        -e syscalls:sys_enter_write --exclude-perf -e syscalls:sys_exit_write --exclude-perf)
record() { # name, then the run's arguments
  local name=$1; shift
  perf record -q -a -m 8192 -o "$name.data" "${events[@]}" -- "$kicklab" run "$@" --json > "$name.run.json"
  perf script -i "$name.data" --ns 2>/dev/null | gzip -9 > "$name.txt.gz"
  rm -f "$name.data"
}
"$kicklab" calibrate --backend futex --save futex.profile.json > /dev/null
record futex --backend futex --profile futex.profile.json --messages 50000 --wp 2us
# The same pair in ftrace's own text (/sys/kernel/tracing/trace: the line
# layout trace-cmd report prints, with system calls as sys_futex(...)),
# where tracefs is writable. trace-cmd itself may refuse to start where
# /proc/sys/kernel/ftrace_enabled cannot be written (containers).
T=/sys/kernel/tracing
if [ -w "$T/tracing_on" ]; then
  ev="sched/sched_switch sched/sched_waking syscalls/sys_enter_futex syscalls/sys_exit_futex"
  # Before the buffer was first used it reads "7 (expanded: 1408)": the
  # size to give back is the expanded one.
  size=$(sed -E 's/.*expanded: ([0-9]+).*/\1/; s/^([0-9]+).*/\1/' "$T/buffer_size_kb")
  echo 0 > "$T/tracing_on"; echo > "$T/trace"; echo 20000 > "$T/buffer_size_kb"
  for e in $ev; do echo 1 > "$T/events/$e/enable"; done
  echo 1 > "$T/tracing_on"
  "$kicklab" run --backend futex --profile futex.profile.json --messages 50000 --wp 2us --json > futex-ftrace.run.json
  echo 0 > "$T/tracing_on"
  # Through a pipe: tracefs gives the file no size, and gzip reading it
  # directly warns that its size changed.
  cat "$T/trace" | gzip -9 > futex-ftrace.txt.gz
  for e in $ev; do echo 0 > "$T/events/$e/enable"; done
  echo > "$T/trace"; echo "$size" > "$T/buffer_size_kb"; echo 1 > "$T/tracing_on"
fi
if [ -c /dev/kvm ]; then
  "$kicklab" calibrate --backend kvm --direction tx --save kvm-tx.profile.json > /dev/null
  record kvm-tx --backend kvm --direction tx --profile kvm-tx.profile.json --messages 20000 --wp 2us
  "$kicklab" calibrate --backend kvm --direction rx --save kvm-rx.profile.json > /dev/null
  record kvm-rx --backend kvm --direction rx --profile kvm-rx.profile.json --messages 20000 --wc 2us
fi
