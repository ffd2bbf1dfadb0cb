#!/usr/bin/env bash
# Build a fuzz target and run it under libFuzzer, as `cargo fuzz run TARGET`
# does with cargo-fuzz 0.13's defaults (address sanitizer, coverage counters
# with compare tracing, --cfg fuzzing, one codegen unit, release with line
# tables), for machines without cargo-fuzz: installing it compiles about a
# hundred crates (47 s on 2 cores), where the build below is the target alone.
# `cargo +nightly fuzz run TARGET` remains the developer's command; both build
# the same binary into fuzz/target and use fuzz/corpus and fuzz/artifacts.
#
# usage: fuzz/run.sh TARGET [libFuzzer flags...]   (needs the nightly toolchain)
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: fuzz/run.sh TARGET [libFuzzer flags...]" >&2
    exit 2
fi
target=$1
shift
cd "$(dirname "$0")"
triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
RUSTFLAGS="-Cpasses=sancov-module \
 -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
 -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares \
 --cfg fuzzing \
 -Cllvm-args=-simplifycfg-branch-fold-threshold=0 \
 -Zsanitizer=address \
 -Cllvm-args=-sanitizer-coverage-stack-depth \
 -Ccodegen-units=1 ${RUSTFLAGS:-}" \
    cargo +nightly build -q --manifest-path Cargo.toml --target "$triple" --release \
    --config 'profile.release.debug="line-tables-only"' --bin "$target"
mkdir -p "corpus/$target" "artifacts/$target"
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_odr_violation=0" \
    exec "target/$triple/release/$target" "-artifact_prefix=artifacts/$target/" "$@" "corpus/$target"
