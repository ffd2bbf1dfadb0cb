//! [`Param`]: the identity of each of the pair's parameters (its name, its
//! symbol, its unit), spelled once and used by [`crate::Params`], sweeps,
//! calibration profiles and errors. Front ends render it as they like (the
//! command line as `--wp`); nothing here knows about flags.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Cost, Params};

/// One parameter of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Param {
    /// Queue length L.
    Len,
    /// k_P: P notifies a sleeping C once this many messages are available.
    Kp,
    /// k_C: C notifies a sleeping P once this many slots are free.
    Kc,
    /// W_P: producer work per message.
    Wp,
    /// W_C: consumer work per message.
    Wc,
    /// N_P: cost to P of notifying C.
    Np,
    /// N_C: cost to C of notifying P.
    Nc,
    /// S_P: cost to P of starting after a notification.
    Sp,
    /// S_C: cost to C of starting after a notification.
    Sc,
    /// V_P: when C sees P's notification, from its start (<= N_P).
    Vp,
    /// V_C: when P sees C's notification, from its start (<= N_C).
    Vc,
}

/// What kind of value a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Queue slots.
    Slots,
    /// Messages.
    Messages,
    /// A duration (a [`Cost`], in nanoseconds).
    Duration,
}

impl Param {
    /// Every parameter, in the order L, k_P, k_C, W_P, W_C, N_P, N_C, S_P,
    /// S_C, V_P, V_C.
    pub const ALL: [Param; 11] = [
        Param::Len,
        Param::Kp,
        Param::Kc,
        Param::Wp,
        Param::Wc,
        Param::Np,
        Param::Nc,
        Param::Sp,
        Param::Sc,
        Param::Vp,
        Param::Vc,
    ];

    /// Short lowercase name (`len`, `kp`, `wp`, ...): what users type.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Param::Len => "len",
            Param::Kp => "kp",
            Param::Kc => "kc",
            Param::Wp => "wp",
            Param::Wc => "wc",
            Param::Np => "np",
            Param::Nc => "nc",
            Param::Sp => "sp",
            Param::Sc => "sc",
            Param::Vp => "vp",
            Param::Vc => "vc",
        }
    }

    /// The paper's symbol (`L`, `k_P`, `W_P`, ...).
    pub fn symbol(self) -> &'static str {
        match self {
            Param::Len => "L",
            Param::Kp => "k_P",
            Param::Kc => "k_C",
            Param::Wp => "W_P",
            Param::Wc => "W_C",
            Param::Np => "N_P",
            Param::Nc => "N_C",
            Param::Sp => "S_P",
            Param::Sc => "S_C",
            Param::Vp => "V_P",
            Param::Vc => "V_C",
        }
    }

    /// The kind of value.
    pub fn unit(self) -> Unit {
        match self {
            Param::Len | Param::Kc => Unit::Slots,
            Param::Kp => Unit::Messages,
            _ => Unit::Duration,
        }
    }

    /// True for L, k_P, k_C (whole numbers, not durations).
    pub fn is_count(self) -> bool {
        self.unit() != Unit::Duration
    }

    /// Axis label with the unit charts use (`W_P [us]`, `L [slots]`).
    pub fn label(self) -> &'static str {
        match self {
            Param::Len => "L [slots]",
            Param::Kp => "k_P [messages]",
            Param::Kc => "k_C [slots]",
            Param::Wp => "W_P [us]",
            Param::Wc => "W_C [us]",
            Param::Np => "N_P [us]",
            Param::Nc => "N_C [us]",
            Param::Sp => "S_P [us]",
            Param::Sc => "S_C [us]",
            Param::Vp => "V_P [us]",
            Param::Vc => "V_C [us]",
        }
    }

    /// The cost this parameter names in `p`, mutably; `None` for L, k_P,
    /// k_C. An unset V_P (V_C) is first set to N_P (N_C).
    pub fn cost_mut(self, p: &mut Params) -> Option<&mut Cost> {
        Some(match self {
            Param::Vp => {
                let n = p.n_p;
                p.v_p.get_or_insert(n)
            }
            Param::Vc => {
                let n = p.n_c;
                p.v_c.get_or_insert(n)
            }
            Param::Len | Param::Kp | Param::Kc => return None,
            Param::Wp => &mut p.w_p,
            Param::Wc => &mut p.w_c,
            Param::Np => &mut p.n_p,
            Param::Nc => &mut p.n_c,
            Param::Sp => &mut p.s_p,
            Param::Sc => &mut p.s_c,
        })
    }

    /// The count this parameter names in `p`; `None` for the costs.
    pub fn count_mut(self, p: &mut Params) -> Option<&mut u32> {
        Some(match self {
            Param::Len => &mut p.len,
            Param::Kp => &mut p.k_p,
            Param::Kc => &mut p.k_c,
            _ => return None,
        })
    }
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// A name that is no parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown parameter `{0}` (use len, kp, kc, wp, wc, np, nc, sp, sc, vp, vc)")]
pub struct UnknownParam(pub String);

impl FromStr for Param {
    type Err = UnknownParam;
    /// Accepts the name (`wp`), case-insensitively, or the symbol (`W_P`).
    fn from_str(s: &str) -> Result<Param, UnknownParam> {
        let t = s.trim().to_ascii_lowercase().replace('_', "");
        let t = if t == "l" { "len".to_string() } else { t };
        Param::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| UnknownParam(s.trim().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_symbols_parse() {
        for p in Param::ALL {
            assert_eq!(p.name().parse::<Param>().unwrap(), p);
            assert_eq!(p.symbol().parse::<Param>().unwrap(), p);
        }
        assert!("wx".parse::<Param>().is_err());
    }

    #[test]
    fn accessors_agree_with_the_fields() {
        let mut p = Params::default();
        *Param::Wp.cost_mut(&mut p).unwrap() = Cost::Const(7.0);
        *Param::Kc.count_mut(&mut p).unwrap() = 3;
        assert_eq!(p.w_p, Cost::Const(7.0));
        assert_eq!(p.k_c, 3);
        assert!(Param::Len.cost_mut(&mut p).is_none());
        assert!(Param::Sc.count_mut(&mut p).is_none());
    }
}
