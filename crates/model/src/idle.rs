//! [`IdleScale`]: how a start-up cost S grows with the time its party
//! slept (a halted CPU wakes slower than one that was polling in its idle
//! loop; `docs/calibration.md`). Calibration measures S at several idle
//! gaps; the simulator multiplies each drawn S by the factor at the
//! sleeper's actual idle time. A plain value type (at most
//! [`IdleScale::MAX_POINTS`] points, `Copy`), so run configurations stay
//! `Copy`.

use serde::{Deserialize, Serialize};

/// A piecewise-linear factor over log(idle time), clamped at both ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<(f64, f64)>", into = "Vec<(f64, f64)>")]
pub struct IdleScale {
    points: [(f64, f64); IdleScale::MAX_POINTS],
    len: usize,
}

impl IdleScale {
    /// The most points a curve holds.
    pub const MAX_POINTS: usize = 16;

    /// A curve through `(idle_ns, factor)` points, idle times strictly
    /// increasing and > 0, factors finite and > 0.
    ///
    /// # Errors
    ///
    /// What is wrong with the points.
    pub fn new(points: &[(f64, f64)]) -> Result<IdleScale, String> {
        if points.is_empty() || points.len() > Self::MAX_POINTS {
            return Err(format!(
                "an idle curve needs 1 to {} points, got {}",
                Self::MAX_POINTS,
                points.len()
            ));
        }
        for (i, &(idle, f)) in points.iter().enumerate() {
            if !(idle.is_finite() && idle > 0.0 && f.is_finite() && f > 0.0) {
                return Err(format!(
                    "idle curve point ({idle} ns, x{f}): both must be finite and > 0"
                ));
            }
            if i > 0 && idle <= points[i - 1].0 {
                return Err("idle curve: idle times must increase".into());
            }
        }
        let mut a = [(0.0, 0.0); Self::MAX_POINTS];
        a[..points.len()].copy_from_slice(points);
        Ok(IdleScale {
            points: a,
            len: points.len(),
        })
    }

    /// The points.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points[..self.len]
    }

    /// The factor after `idle_ns` of sleep: linear in log(idle) between
    /// points, the end values outside them.
    pub fn factor(&self, idle_ns: f64) -> f64 {
        let p = self.points();
        let (first, last) = (p[0], p[p.len() - 1]);
        if idle_ns.is_nan() || idle_ns <= first.0 {
            return first.1;
        }
        if idle_ns >= last.0 {
            return last.1;
        }
        let i = p.partition_point(|&(x, _)| x <= idle_ns);
        let ((x0, y0), (x1, y1)) = (p[i - 1], p[i]);
        let u = (idle_ns.ln() - x0.ln()) / (x1.ln() - x0.ln());
        y0 + u * (y1 - y0)
    }
}

impl TryFrom<Vec<(f64, f64)>> for IdleScale {
    type Error = String;
    fn try_from(v: Vec<(f64, f64)>) -> Result<IdleScale, String> {
        IdleScale::new(&v)
    }
}

impl From<IdleScale> for Vec<(f64, f64)> {
    fn from(s: IdleScale) -> Vec<(f64, f64)> {
        s.points().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_in_log_idle_and_clamps() {
        let s = IdleScale::new(&[(1000.0, 1.0), (100_000.0, 5.0)]).unwrap();
        assert_eq!(s.factor(10.0), 1.0);
        assert_eq!(s.factor(1e9), 5.0);
        // 10 us is half-way in log between 1 us and 100 us.
        assert!((s.factor(10_000.0) - 3.0).abs() < 1e-12);
        assert_eq!(s.factor(f64::NAN), 1.0);
    }

    #[test]
    fn refuses_bad_curves_and_round_trips() {
        assert!(IdleScale::new(&[]).is_err());
        assert!(IdleScale::new(&[(2.0, 1.0), (1.0, 1.0)]).is_err());
        assert!(IdleScale::new(&[(1.0, -1.0)]).is_err());
        assert!(IdleScale::new(&[(1.0, 1.0); 17]).is_err());
        let s = IdleScale::new(&[(1.0, 1.0), (2.0, 3.0)]).unwrap();
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<IdleScale>(&j).unwrap(), s);
        assert!(serde_json::from_str::<IdleScale>("[[2.0,1.0],[1.0,1.0]]").is_err());
    }
}
