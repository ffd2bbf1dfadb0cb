//! [`Params`]: the one parameter set of the producer/consumer pair, shared by
//! the model, the simulator and the testbeds.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::cost::Cost;
use crate::param::Param;
use crate::time::{fmt_ns, to_ps};

/// One of the two parties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Party {
    /// The producer P.
    P,
    /// The consumer C.
    C,
}

impl Party {
    /// The peer.
    pub fn other(self) -> Party {
        match self {
            Party::P => Party::C,
            Party::C => Party::P,
        }
    }
}

/// The parameters of the pair (paper, Section 2; `docs/model.md`).
///
/// Costs are [`Cost`]s in nanoseconds; the closed-form model uses their
/// means, the simulator draws them per event. [`Params::default`] is the
/// paper's Fig. 4 set-up: `L = 256`, `W_P = 1 us`, `W_C = 1.1 us`,
/// `k_P = k_C = 1`, `N_P = 2.4 us`, `N_C = 0.2 us`, `S_P = 3.9 us`,
/// `S_C = 0.2 us`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Queue length L [slots], >= 1.
    pub len: u32,
    /// P notifies a sleeping C once at least `k_p` messages are available.
    pub k_p: u32,
    /// C notifies a sleeping P once at least `k_c` slots are free.
    pub k_c: u32,
    /// W_P: producer work per message (produce + enqueue) [ns].
    pub w_p: Cost,
    /// W_C: consumer work per message (dequeue + process) [ns].
    pub w_c: Cost,
    /// N_P: cost to P of notifying C [ns].
    pub n_p: Cost,
    /// N_C: cost to C of notifying P [ns].
    pub n_c: Cost,
    /// S_P: cost to P of starting after a notification [ns].
    pub s_p: Cost,
    /// S_C: cost to C of starting after a notification [ns].
    pub s_c: Cost,
    /// V_P: time from the start of P's notification until C becomes
    /// runnable [ns], at most N_P; `None` is N_P (C is woken when P's
    /// notification ends: the paper's rule). A drawn V_P above the drawn
    /// N_P is cut to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v_p: Option<Cost>,
    /// V_C: the same for C's notification of P, at most N_C; `None` is N_C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v_c: Option<Cost>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            len: 256,
            k_p: 1,
            k_c: 1,
            w_p: Cost::Const(1000.0),
            w_c: Cost::Const(1100.0),
            n_p: Cost::Const(2400.0),
            n_c: Cost::Const(200.0),
            s_p: Cost::Const(3900.0),
            s_c: Cost::Const(200.0),
            v_p: None,
            v_c: None,
        }
    }
}

/// A parameter that makes no pair. Front ends name it their way (the
/// command line as `--kp`); the message itself names only the symbol.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{}: {reason}", param.symbol())]
pub struct ParamError {
    /// The offending parameter.
    pub param: Param,
    /// What is wrong with it.
    pub reason: String,
}

impl Params {
    /// The command-line flags that make `self` from the defaults (the
    /// paper's Fig. 4 set-up), in the order L, k_P, k_C, W_P, ..., V_C:
    /// `--len 4 --vp 1.2us`; empty for the defaults. `skip`: parameters
    /// left out (a sweep's varied one, which `--vary` gives). Every command
    /// line kicklab prints for a pair is made here.
    pub fn flags(&self, skip: &[Param]) -> String {
        let d = Params::default();
        let mut out = Vec::new();
        for param in Param::ALL {
            let unset_v = match param {
                Param::Vp => self.v_p.is_none(),
                Param::Vc => self.v_c.is_none(),
                _ => false,
            };
            if skip.contains(&param) || unset_v {
                continue;
            }
            let (mut mine, mut theirs) = (*self, d);
            let value = match (param.count_mut(&mut mine), param.count_mut(&mut theirs)) {
                (Some(a), Some(b)) => (*a != *b).then(|| a.to_string()),
                _ => match (param.cost_mut(&mut mine), param.cost_mut(&mut theirs)) {
                    (Some(a), Some(b)) => (*a != *b).then(|| a.to_string()),
                    _ => None,
                },
            };
            if let Some(v) = value {
                out.push(format!("{} {v}", crate::Flag::Param(param)));
            }
        }
        out.join(" ")
    }

    /// Checks `L >= 1`, `1 <= k_P <= L`, `1 <= k_C <= L` and that every cost
    /// is a distribution of finite values >= 0.
    ///
    /// # Errors
    ///
    /// The first offending parameter, as a [`ParamError`] naming it.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.len == 0 {
            return Err(ParamError {
                param: Param::Len,
                reason: "the queue needs at least 1 slot".into(),
            });
        }
        for (param, k) in [(Param::Kp, self.k_p), (Param::Kc, self.k_c)] {
            if k == 0 || k > self.len {
                return Err(ParamError {
                    param,
                    reason: format!("{k} must be between 1 and L = {}", self.len),
                });
            }
        }
        for (param, cost) in self.costs() {
            cost.check()
                .map_err(|reason| ParamError { param, reason })?;
        }
        for (param, v, n, n_param) in [
            (Param::Vp, self.v_p, self.n_p, Param::Np),
            (Param::Vc, self.v_c, self.n_c, Param::Nc),
        ] {
            let Some(v) = v else { continue };
            v.check().map_err(|reason| ParamError { param, reason })?;
            if to_ps(v.mean_ns()) > to_ps(n.mean_ns()) {
                return Err(ParamError {
                    param,
                    reason: format!(
                        "{} must be at most {n_param} = {} (the peer cannot see a notification after it ends)",
                        fmt_ns(v.mean_ns()),
                        fmt_ns(n.mean_ns())
                    ),
                });
            }
        }
        Ok(())
    }

    /// V_P: when C sees P's notification, from its start (N_P unless set).
    pub fn vis_p(&self) -> Cost {
        self.v_p.unwrap_or(self.n_p)
    }

    /// V_C: when P sees C's notification, from its start (N_C unless set).
    pub fn vis_c(&self) -> Cost {
        self.v_c.unwrap_or(self.n_c)
    }

    /// True when a notification is seen before it ends (V_P < N_P or
    /// V_C < N_C, on the means).
    pub fn early_visibility(&self) -> bool {
        to_ps(self.vis_p().mean_ns()) < to_ps(self.n_p.mean_ns())
            || to_ps(self.vis_c().mean_ns()) < to_ps(self.n_c.mean_ns())
    }

    /// The six costs with their parameters, in the order W_P, W_C, N_P,
    /// N_C, S_P, S_C.
    pub fn costs(&self) -> [(Param, Cost); 6] {
        [
            (Param::Wp, self.w_p),
            (Param::Wc, self.w_c),
            (Param::Np, self.n_p),
            (Param::Nc, self.n_c),
            (Param::Sp, self.s_p),
            (Param::Sc, self.s_c),
        ]
    }

    /// True when every cost is a constant: the simulator is then periodic
    /// and reproduces the closed forms exactly.
    pub fn all_const(&self) -> bool {
        self.costs().iter().all(|(_, c)| c.is_const())
            && self.v_p.is_none_or(|c| c.is_const())
            && self.v_c.is_none_or(|c| c.is_const())
    }

    /// The same pair with every cost exponential with the same mean (the
    /// report's and the benchmarks' random-cost set-up).
    pub fn with_exponential_costs(&self) -> Params {
        let e = |c: Cost| Cost::Exp {
            mean_ns: c.mean_ns(),
        };
        Params {
            w_p: e(self.w_p),
            w_c: e(self.w_c),
            n_p: e(self.n_p),
            n_c: e(self.n_c),
            s_p: e(self.s_p),
            s_c: e(self.s_c),
            v_p: self.v_p.map(e),
            v_c: self.v_c.map(e),
            ..*self
        }
    }

    /// The mirror image: P and C swapped (`W_P <-> W_C`, `k_P <-> k_C`,
    /// `N_P <-> N_C`, `S_P <-> S_C`). Messages become free slots and vice
    /// versa; T and E are unchanged (`docs/model.md`, "Symmetry").
    pub fn mirrored(&self) -> Params {
        Params {
            len: self.len,
            k_p: self.k_c,
            k_c: self.k_p,
            w_p: self.w_c,
            w_c: self.w_p,
            n_p: self.n_c,
            n_c: self.n_p,
            s_p: self.s_c,
            s_c: self.s_p,
            v_p: self.v_c,
            v_c: self.v_p,
        }
    }
}

/// Costs given explicitly (command-line flags, keyword arguments), laid
/// over what a calibration profile put in: each given cost wins, and a
/// profile's V above an N given here is cut to it (V <= N).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostOverrides {
    /// N_P.
    pub n_p: Option<Cost>,
    /// N_C.
    pub n_c: Option<Cost>,
    /// S_P.
    pub s_p: Option<Cost>,
    /// S_C.
    pub s_c: Option<Cost>,
    /// V_P.
    pub v_p: Option<Cost>,
    /// V_C.
    pub v_c: Option<Cost>,
}

impl CostOverrides {
    /// Lays these costs over `p`.
    pub fn apply(&self, p: &mut Params) {
        p.n_p = self.n_p.unwrap_or(p.n_p);
        p.n_c = self.n_c.unwrap_or(p.n_c);
        p.s_p = self.s_p.unwrap_or(p.s_p);
        p.s_c = self.s_c.unwrap_or(p.s_c);
        let cut = |v: Option<Cost>, n: Cost| {
            v.map(|v| {
                if v.mean_ns() > n.mean_ns() {
                    v.with_mean(n.mean_ns())
                } else {
                    v
                }
            })
        };
        p.v_p = self.v_p.or(cut(p.v_p, p.n_p));
        p.v_c = self.v_c.or(cut(p.v_c, p.n_c));
    }
}

/// What a front end (the command line, the Python package) was given for
/// a pair: L, k and W, and the costs given explicitly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GivenParams {
    /// L.
    pub len: u32,
    /// k_P.
    pub k_p: u32,
    /// k_C.
    pub k_c: u32,
    /// W_P.
    pub w_p: Cost,
    /// W_C.
    pub w_c: Cost,
    /// N, S and V where given.
    pub costs: CostOverrides,
}

impl GivenParams {
    /// The validated pair: L, k and W as given, the paper's N, S and V,
    /// replaced by what `apply` takes from `profile` (if any), then by the
    /// costs given.
    ///
    /// # Errors
    ///
    /// The first parameter that makes no pair.
    pub fn build(
        &self,
        profile: Option<&crate::Profile>,
        apply: impl Fn(&crate::Profile, &mut Params),
    ) -> Result<Params, ParamError> {
        let mut p = Params {
            len: self.len,
            k_p: self.k_p,
            k_c: self.k_c,
            w_p: self.w_p,
            w_c: self.w_c,
            ..Params::default()
        };
        if let Some(profile) = profile {
            apply(profile, &mut p);
        }
        self.costs.apply(&mut p);
        p.validate()?;
        Ok(p)
    }

    /// Where [`GivenParams::build`] with a profile failed on W_P or W_C
    /// that are valid as given: what the profile added to them (its ring
    /// cost per message) is at fault, and a front end names the profile,
    /// not the flag. The message says so, with `e`'s reason.
    pub fn profile_at_fault(&self, e: &ParamError) -> Option<String> {
        let given = match e.param {
            crate::Param::Wp => self.w_p,
            crate::Param::Wc => self.w_c,
            _ => return None,
        };
        given.check().ok()?;
        Some(format!(
            "its ring cost per message, added to {sym} ({}), takes {sym} out of range: {} \
             (a ring cost that large is no calibration of a ring: calibrate again)",
            crate::fmt_ns(given.mean_ns()),
            e.reason,
            sym = e.param.symbol(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_name_what_differs_from_the_defaults_and_parse_back() {
        let d = Params::default();
        assert_eq!(d.flags(&[]), "");
        let p = Params {
            len: 4,
            v_p: Some(Cost::Const(1200.0)),
            w_p: Cost::Exp { mean_ns: 2000.0 },
            ..d
        };
        assert_eq!(p.flags(&[]), "--len 4 --wp exp:2us --vp 1.2us");
        assert_eq!(p.flags(&[Param::Wp]), "--len 4 --vp 1.2us");
        // An N changed with V unset: V follows N, no --vp of its own.
        let n = Params {
            n_p: Cost::Const(5000.0),
            ..d
        };
        assert_eq!(n.flags(&[]), "--np 5us");
        // Each value parses back to the same cost.
        for part in p.flags(&[]).split("--").filter(|s| !s.is_empty()) {
            let (name, value) = part.trim().split_once(' ').unwrap();
            let param: Param = name.parse().unwrap();
            let mut q = p;
            if let Some(c) = param.cost_mut(&mut q) {
                assert_eq!(Cost::parse(value).unwrap(), *c, "{part}");
            }
        }
    }

    #[test]
    fn default_is_valid_and_is_fig4() {
        let p = Params::default();
        p.validate().unwrap();
        assert_eq!(p.len, 256);
        assert_eq!(p.w_c, Cost::Const(1100.0));
        assert_eq!(p.s_p, Cost::Const(3900.0));
    }

    #[test]
    fn rejects_thresholds_and_costs() {
        let mut p = Params {
            k_p: 257,
            ..Params::default()
        };
        assert_eq!(p.validate().unwrap_err().param, Param::Kp);
        p.k_p = 1;
        p.k_c = 0;
        assert_eq!(p.validate().unwrap_err().param, Param::Kc);
        p.k_c = 1;
        p.len = 0;
        assert_eq!(p.validate().unwrap_err().param, Param::Len);
        p.len = 4;
        p.n_c = Cost::Const(f64::NAN);
        assert_eq!(p.validate().unwrap_err().param, Param::Nc);
        p.n_c = Cost::Const(-1.0);
        assert_eq!(p.validate().unwrap_err().param, Param::Nc);
        p.n_c = Cost::Const(crate::MAX_DURATION_NS * 2.0);
        let e = p.validate().unwrap_err();
        assert_eq!(e.param, Param::Nc);
        assert!(!e.to_string().contains("--"), "{e}");
    }

    #[test]
    fn mirror_is_an_involution() {
        let p = Params {
            k_p: 3,
            ..Params::default()
        };
        assert_eq!(p.mirrored().mirrored(), p);
        assert_eq!(p.mirrored().k_c, 3);
    }
}
