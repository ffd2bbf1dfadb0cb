//! Per-event cost draws: one seeded RNG stream per cost, so that changing one
//! cost's distribution leaves the draws of the others untouched (common
//! random numbers across the points of a sweep).

use kicklab_model::{to_ps, Cost};
use rand::SeedableRng;
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

#[derive(Debug, Clone)]
enum Kind {
    Const(u64),
    Uniform(Uniform<f64>),
    Exp(Exp<f64>),
    Normal(Normal<f64>),
    LogNormal(LogNormal<f64>),
}

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
        let kind = if cost.is_const() {
            Kind::Const(to_ps(cost.mean_ns()))
        } else {
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
            }
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
        }
        self.pos = 0;
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
}
