#!/usr/bin/env bash
# The alternatives benchmark's "kicklab vs rtrb" ratio over several code
# layouts of the same source.
#
# Why: in one benchmark binary every function sits at one address for the
# whole run, and on this machine that alone moves a spinning ring's time per
# message by 10% or more (the same rtrb source compiled twice measured 0.99x
# and 1.15x rtrb in two binaries, minutes apart). Averaging over runs of one
# binary does not remove that; averaging over binaries does (Mytkowicz et
# al., "Producing wrong data without doing anything obviously wrong!",
# ASPLOS 2009). Each layout here is the same code linked in another order
# (lld's --shuffle-sections with a seed; layout 0 is the default order), so
# the hot loops land at other addresses.
#
# Usage: crates/testbed/benches/layouts.sh [MINUTES] [LAYOUTS] [OUT_DIR]
#   MINUTES  how long to keep running the layouts round-robin (default 30)
#   LAYOUTS  how many link orders, counting the default one (default 8)
#   OUT_DIR  where the binaries and results.tsv go (default
#            target/layouts)
# Each round runs every layout once, in a shuffled order, with
# KICKLAB_BENCH_ONLY (default "ring, poll"), KICKLAB_BENCH_WORK_NS (default
# 0), KICKLAB_BENCH_MESSAGES (default 5000000) and KICKLAB_BENCH_REPS
# (default 21) passed on. The summary (`alternatives --summarize FILE`)
# splits the repetitions by rtrb's time per message, as the machine's state
# changes: fast below 3 ns, slow 5-14 ns.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/../../.."
minutes=${1:-30}
layouts=${2:-8}
out=${3:-target/layouts}
mkdir -p "$out"
tsv="$out/results.tsv"
: >"$tsv"

for ((seed = 0; seed < layouts; seed++)); do
    flags=()
    if ((seed > 0)); then
        flags=(-C "link-arg=-Wl,--shuffle-sections=.text*=$seed")
    fi
    exe=$(cargo rustc --quiet --release -p kicklab-testbed --bench alternatives \
        --message-format=json -- "${flags[@]}" |
        grep -o '"executable":"[^"]*"' | tail -1 | cut -d'"' -f4)
    cp "$exe" "$out/alternatives-$seed"
    echo "layout $seed: $out/alternatives-$seed"
done

export KICKLAB_BENCH_ONLY=${KICKLAB_BENCH_ONLY:-"ring, poll"}
export KICKLAB_BENCH_WORK_NS=${KICKLAB_BENCH_WORK_NS:-0}
export KICKLAB_BENCH_MESSAGES=${KICKLAB_BENCH_MESSAGES:-5000000}
export KICKLAB_BENCH_REPS=${KICKLAB_BENCH_REPS:-21}
export KICKLAB_BENCH_TSV=$tsv
end=$((SECONDS + 60 * minutes))
round=0
while ((SECONDS < end)); do
    round=$((round + 1))
    for seed in $(seq 0 $((layouts - 1)) | shuf); do
        KICKLAB_BENCH_LAYOUT=$seed "$out/alternatives-$seed" --bench >/dev/null
    done
    echo "round $round done ($(((end - SECONDS) / 60)) min left)"
done

echo
"$out/alternatives-0" --summarize "$tsv"
