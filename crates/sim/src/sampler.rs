//! Per-event cost draws: one seeded RNG stream per cost, so that changing one
//! cost's distribution leaves the draws of the others untouched (common
//! random numbers across the points of a sweep).

use kicklab_model::{to_ps, Cost};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, LogNormal, Normal, Uniform};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Draws per refill of the block buffer.
const BLOCK: usize = 256;

/// Draws one cost per call, in whole picoseconds.
///
/// Random costs are drawn in blocks of [`BLOCK`] (same stream, same order,
/// so results do not depend on it): the tight fill loop pipelines the RNG
/// and the ziggurat, where drawing inside the event loop did not.
#[derive(Debug, Clone)]
pub struct Sampler {
    kind: Kind,
    rng: Xoshiro256PlusPlus,
    buf: Box<[u64; BLOCK]>,
    pos: usize,
}

/// What a sampler draws from. The first five are the simple distributions;
/// the parts of `Phases` and `Mix` are always among them.
#[derive(Debug, Clone)]
enum Kind {
    Const(u64),
    Uniform(Uniform<f64>),
    Exp(Exp<f64>),
    Normal(Normal<f64>),
    LogNormal(LogNormal<f64>),
    /// `phases:`, boxed to keep the common kinds small.
    Phases(Box<Phased>),
    /// `mix:`.
    Mix(Box<Mixed>),
}

/// A `phases` stream: its parts, and where it is (phase `at`, with `left`
/// draws to go in it).
#[derive(Debug, Clone)]
struct Phased {
    parts: Vec<(Kind, u64)>,
    at: usize,
    left: u64,
}

/// A `mix` stream.
#[derive(Debug, Clone)]
struct Mixed {
    /// `second` is drawn when a uniform 53-bit integer is below this.
    threshold: u64,
    first: Kind,
    second: Kind,
}

/// `1.0` for [`Mixed::threshold`]: the range of a 53-bit uniform integer.
const MIX_ONE: u64 = 1 << 53;

/// SplitMix64: turns (seed, stream) into well-spread RNG seeds.
pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Sampler {
    /// A sampler for `cost`, drawing from stream `stream` of `seed`.
    ///
    /// # Panics
    ///
    /// If `cost` fails [`Cost::check`] (validate parameters first).
    pub fn new(cost: Cost, seed: u64, stream: u64) -> Sampler {
        cost.check().expect("cost validated before sampling");
        let kind = match cost {
            _ if cost.is_const() => Kind::Const(to_ps(cost.mean_ns())),
            Cost::Phases(ph) => {
                let parts: Vec<(Kind, u64)> = ph
                    .parts()
                    .iter()
                    .map(|&(c, n)| (Kind::simple(c.cost()), n))
                    .collect();
                let left = parts[0].1;
                Kind::Phases(Box::new(Phased { parts, at: 0, left }))
            }
            Cost::Mix(m) => Kind::Mix(Box::new(Mixed {
                // p in [0, 1] -> [0, 2^53] (exact: a power-of-two scale);
                // p = 1 always draws `second`, p = 0 never.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                threshold: (m.p * MIX_ONE as f64) as u64,
                first: Kind::simple(m.first.cost()),
                second: Kind::simple(m.second.cost()),
            })),
            _ => Kind::simple(cost),
        };
        let rng =
            Xoshiro256PlusPlus::seed_from_u64(splitmix(seed ^ splitmix(stream.wrapping_add(1))));
        Sampler {
            kind,
            rng,
            buf: Box::new([0; BLOCK]),
            pos: BLOCK,
        }
    }

    /// The constant value [ps] if this cost never varies.
    pub fn constant_ps(&self) -> Option<u64> {
        match self.kind {
            Kind::Const(v) => Some(v),
            _ => None,
        }
    }

    /// One draw [ps].
    #[inline(always)]
    pub fn draw_ps(&mut self) -> u64 {
        if let Kind::Const(v) = self.kind {
            return v;
        }
        if self.pos == BLOCK {
            self.refill();
        }
        let v = self.buf[self.pos];
        self.pos += 1;
        v
    }

    #[inline(never)]
    fn refill(&mut self) {
        let (buf, rng) = (&mut *self.buf, &mut self.rng);
        match &self.kind {
            Kind::Const(v) => buf.fill(*v),
            Kind::Uniform(d) => buf.iter_mut().for_each(|x| *x = to_ps(d.sample(rng))),
            Kind::Exp(d) => buf.iter_mut().for_each(|x| *x = to_ps(d.sample(rng))),
            Kind::LogNormal(d) => buf.iter_mut().for_each(|x| *x = to_ps(d.sample(rng))),
            Kind::Normal(d) => buf.iter_mut().for_each(|x| {
                *x = loop {
                    // Truncation at 0 by redrawing (mean >= 0, so each draw
                    // is accepted with probability >= 1/2).
                    let v = d.sample(rng);
                    if v >= 0.0 {
                        break to_ps(v);
                    }
                }
            }),
            Kind::Phases(_) | Kind::Mix(_) => self.refill_compound(),
        }
        self.pos = 0;
    }

    /// [`Sampler::refill`] for `phases` and `mix`, out of line.
    #[inline(never)]
    fn refill_compound(&mut self) {
        let (buf, rng) = (&mut self.buf[..], &mut self.rng);
        match &mut self.kind {
            Kind::Phases(ph) => ph.fill(rng, buf),
            Kind::Mix(m) => m.fill(rng, buf),
            _ => unreachable!("simple kinds refill in Sampler::refill"),
        }
    }
}

impl Kind {
    /// The kind for a simple `cost` (degenerate ones as constants).
    fn simple(cost: Cost) -> Kind {
        if cost.is_const() {
            return Kind::Const(to_ps(cost.mean_ns()));
        }
        match cost {
            Cost::Const(v) => Kind::Const(to_ps(v)),
            Cost::Uniform { lo_ns, hi_ns } => {
                Kind::Uniform(Uniform::new_inclusive(lo_ns, hi_ns).expect("lo <= hi"))
            }
            Cost::Exp { mean_ns } => Kind::Exp(Exp::new(1.0 / mean_ns).expect("mean > 0")),
            Cost::Normal { mu_ns, sd_ns } => {
                Kind::Normal(Normal::new(mu_ns, sd_ns).expect("sd >= 0"))
            }
            Cost::LogNormal { mean_ns, sigma } => {
                // mean = exp(mu + sigma^2 / 2)
                let mu = mean_ns.ln() - 0.5 * sigma * sigma;
                Kind::LogNormal(LogNormal::new(mu, sigma).expect("sigma >= 0"))
            }
            Cost::Phases(_) | Cost::Mix(_) => unreachable!("not a simple distribution"),
        }
    }
}

/// Fills `buf` with draws of a simple `kind`, in order: the same draws as
/// [`Sampler::refill`] makes for it.
///
/// It draws through `&mut Xoshiro256PlusPlus` (an RNG too, forwarding to
/// the same stream), so its samplers are their own instances: a second
/// caller of the instances in [`Sampler::refill`] made the compiler stop
/// inlining them there, and the plain exponential 20% slower.
fn fill_part(kind: &Kind, mut rng: &mut Xoshiro256PlusPlus, buf: &mut [u64]) {
    let rng = &mut rng;
    match kind {
        Kind::Const(v) => buf.fill(*v),
        Kind::Uniform(d) => buf.iter_mut().for_each(|x| *x = to_ps(d.sample(rng))),
        Kind::Exp(d) => buf.iter_mut().for_each(|x| *x = to_ps(d.sample(rng))),
        Kind::LogNormal(d) => buf.iter_mut().for_each(|x| *x = to_ps(d.sample(rng))),
        Kind::Normal(d) => buf.iter_mut().for_each(|x| {
            *x = loop {
                let v = d.sample(rng);
                if v >= 0.0 {
                    break to_ps(v);
                }
            }
        }),
        Kind::Phases(_) | Kind::Mix(_) => unreachable!("parts are simple distributions"),
    }
}

impl Phased {
    /// Fills `buf` in runs of the same phase: draw `i` of the stream lies in
    /// the phase of `i mod (sum of counts)`, whatever the block size.
    fn fill(&mut self, rng: &mut Xoshiro256PlusPlus, buf: &mut [u64]) {
        let mut i = 0;
        while i < buf.len() {
            let room = buf.len() - i;
            let take = usize::try_from(self.left).map_or(room, |l| l.min(room));
            fill_part(&self.parts[self.at].0, rng, &mut buf[i..i + take]);
            i += take;
            self.left -= take as u64;
            if self.left == 0 {
                self.at = (self.at + 1) % self.parts.len();
                self.left = self.parts[self.at].1;
            }
        }
    }
}

impl Mixed {
    /// Fills `buf`: per draw the choice first (a uniform from the stream),
    /// then the draw from the chosen part, from the same stream.
    fn fill(&self, rng: &mut Xoshiro256PlusPlus, buf: &mut [u64]) {
        for x in buf.chunks_exact_mut(1) {
            let part = if rng.next_u64() >> 11 < self.threshold {
                &self.second
            } else {
                &self.first
            };
            fill_part(part, rng, x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_of(cost: Cost) -> f64 {
        let mut s = Sampler::new(cost, 7, 0);
        let n = 200_000;
        #[allow(clippy::cast_precision_loss)]
        let sum: f64 = (0..n).map(|_| s.draw_ps() as f64 / 1000.0).sum();
        sum / f64::from(n)
    }

    #[test]
    fn sample_means_match_model_means() {
        for cost in [
            Cost::Uniform {
                lo_ns: 800.0,
                hi_ns: 1200.0,
            },
            Cost::Exp { mean_ns: 1000.0 },
            Cost::Normal {
                mu_ns: 100.0,
                sd_ns: 200.0,
            },
            Cost::LogNormal {
                mean_ns: 1000.0,
                sigma: 0.5,
            },
            Cost::parse("phases:exp:1us@1000+2us@3000").unwrap(),
            Cost::parse("mix:0.1:exp:1us+uniform:2us,4us").unwrap(),
        ] {
            let (got, want) = (mean_of(cost), cost.mean_ns());
            // 200k draws: the standard error is below 0.5% for all of these.
            assert!(
                (got - want).abs() / want < 0.01,
                "{cost}: sample mean {got}, model mean {want}"
            );
        }
    }

    #[test]
    fn streams_are_independent_and_reproducible() {
        let e = Cost::Exp { mean_ns: 1000.0 };
        let a: Vec<u64> = {
            let mut s = Sampler::new(e, 1, 0);
            (0..8).map(|_| s.draw_ps()).collect()
        };
        let b: Vec<u64> = {
            let mut s = Sampler::new(e, 1, 0);
            (0..8).map(|_| s.draw_ps()).collect()
        };
        let c: Vec<u64> = {
            let mut s = Sampler::new(e, 1, 1);
            (0..8).map(|_| s.draw_ps()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    fn draws(spec: &str, seed: u64, n: usize) -> Vec<u64> {
        let mut s = Sampler::new(Cost::parse(spec).unwrap(), seed, 3);
        (0..n).map(|_| s.draw_ps()).collect()
    }

    #[test]
    fn phases_switch_exactly_at_the_counts() {
        let d = draws("phases:1ns@3+2ns@2", 1, 20);
        assert_eq!(
            d[..10],
            [1000, 1000, 1000, 2000, 2000, 1000, 1000, 1000, 2000, 2000]
        );
        assert_eq!(d[10], 1000, "draw 10: 10 mod 5 = 0, the first phase");
        assert_eq!(d[13], 2000);
        // Constant phases draw exact picoseconds.
        let d = draws("phases:0.5us@5000+3us@5000", 1, 30_000);
        for (i, &v) in d.iter().enumerate() {
            let want = if (i / 5000) % 2 == 0 {
                500_000
            } else {
                3_000_000
            };
            assert_eq!(v, want, "draw {i}");
        }
        // Counts that do not divide the block, phases shorter and longer
        // than it, four phases, one of them random.
        let cost = Cost::parse("phases:1ns@100+2ns@557+exp:1us@1+4ns@256").unwrap();
        let Cost::Phases(ph) = cost else {
            unreachable!()
        };
        let mut s = Sampler::new(cost, 5, 0);
        assert_eq!(s.constant_ps(), None);
        for i in 0..20_000u64 {
            let v = s.draw_ps();
            match ph.phase_of(i) {
                0 => assert_eq!(v, 1000, "draw {i}"),
                1 => assert_eq!(v, 2000, "draw {i}"),
                2 => assert!(![1000, 2000, 4000].contains(&v), "draw {i}: {v}"),
                _ => assert_eq!(v, 4000, "draw {i}"),
            }
        }
    }

    #[test]
    fn phases_draw_the_stream_in_order() {
        // Phases of the same distribution draw exactly what the plain one
        // does from the same stream: runs across blocks consume the RNG in
        // draw order.
        let plain = draws("exp:1us", 9, 5000);
        assert_eq!(
            draws("phases:exp:1us@300+exp:1us@77+exp:1us@1", 9, 5000),
            plain
        );
        let plain = draws("normal:1us,2us", 9, 5000);
        assert_eq!(
            draws("phases:normal:1us,2us@255+normal:1us,2us@258", 9, 5000),
            plain
        );
        // A phase's draws are its own distribution's.
        let d = draws("phases:uniform:1us,2us@10+lognormal:5us,0.1@10", 2, 1000);
        for (i, &v) in d.iter().enumerate() {
            if (i / 10) % 2 == 0 {
                assert!((1_000_000..=2_000_000).contains(&v), "draw {i}: {v}");
            } else {
                assert!(v > 2_000_000, "draw {i}: {v}");
            }
        }
    }

    #[test]
    fn mix_frequency_and_determinism() {
        let n = 1_000_000;
        for (p, spec) in [(0.01, "mix:0.01:1us+50us"), (0.5, "mix:0.5:1us+50us")] {
            let d = draws(spec, 11, n);
            assert!(d.iter().all(|&v| v == 1_000_000 || v == 50_000_000));
            #[allow(clippy::cast_precision_loss)]
            let (long, n) = (
                d.iter().filter(|&&v| v == 50_000_000).count() as f64,
                n as f64,
            );
            let sd = (n * p * (1.0 - p)).sqrt();
            assert!(
                (long - n * p).abs() < 5.0 * sd,
                "{spec}: {long} long draws, expected {} +- {sd}",
                n * p
            );
            assert_eq!(draws(spec, 11, 1000), d[..1000], "same seed, same draws");
            assert_ne!(draws(spec, 12, 1000), d[..1000], "another seed");
        }
        // The extremes take one side only.
        assert!(draws("mix:0:uniform:2us,3us+1us", 1, 10_000)
            .iter()
            .all(|v| (2_000_000..=3_000_000).contains(v)));
        assert!(draws("mix:1:1us+uniform:2us,3us", 1, 10_000)
            .iter()
            .all(|v| (2_000_000..=3_000_000).contains(v)));
        // Degenerate mixes and phases are constants.
        for spec in [
            "mix:0.5:1us+1000ns",
            "mix:0:1us+exp:2us",
            "phases:1us@2+const:1us@3",
        ] {
            let s = Sampler::new(Cost::parse(spec).unwrap(), 1, 0);
            assert_eq!(s.constant_ps(), Some(1_000_000), "{spec}");
        }
    }
}
