//! Simulated messages per second: kicklab's two-party loop against a generic
//! priority-queue simulator of the same rules (`kicklab_sim::reference`),
//! with constant and exponential costs (the paper's Fig. 4 set-up, notify).
//!
//! Run: `cargo bench -p kicklab-sim --features bench`. `kicklab sim --bench` prints the same
//! comparison as ratios measured in one run.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kicklab_model::{Params, WaitMode};
use kicklab_sim::reference::simulate_reference;
use kicklab_sim::{simulate, SimConfig};

fn bench(c: &mut Criterion) {
    let messages = 200_000;
    let mut g = c.benchmark_group("simulate");
    for (name, params) in [
        ("const", Params::default()),
        ("exp", Params::default().with_exponential_costs()),
    ] {
        let cfg = SimConfig::new(params, WaitMode::Notify, messages);
        g.throughput(Throughput::Elements(cfg.messages + cfg.warmup));
        g.bench_with_input(BenchmarkId::new("kicklab", name), &cfg, |b, cfg| {
            b.iter(|| simulate(cfg).unwrap())
        });
        let no_lat = SimConfig {
            latency: false,
            ..cfg
        };
        g.bench_with_input(
            BenchmarkId::new("kicklab-no-latency", name),
            &no_lat,
            |b, cfg| b.iter(|| simulate(cfg).unwrap()),
        );
        g.bench_with_input(
            BenchmarkId::new("generic-priority-queue", name),
            &cfg,
            |b, cfg| {
                b.iter(|| simulate_reference(cfg).unwrap());
            },
        );
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
