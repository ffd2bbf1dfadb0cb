//! The inputs as the Python half passes them (keyword arguments as text,
//! a profile as JSON text), parsed the way the binary parses its flags:
//! durations, strategies, parameter names, counts, the pair and its
//! profile. What does not live here: the calls themselves (`lib.rs`,
//! `arrays`, `sweeps`).

use std::collections::HashMap;

use kicklab_model::{parse_duration_ns, Cost, Param, Params, Profile, UnknownParam, WaitMode};
use serde_json::Value;

use crate::errors::{bad, invalid, param_err, Fail, Res};

/// Keyword arguments as the Python half passes them: name -> text.
pub(crate) type Args = HashMap<String, String>;

/// A profile as `(JSON text, where it came from)`.
pub(crate) type ProfileText = Option<(String, String)>;

/// A JSON value as text (what the Python half `json.loads`).
pub(crate) fn text(v: &Value) -> Res<String> {
    serde_json::to_string(v).map_err(|e| Fail::Runtime(e.to_string()))
}

pub(crate) fn to_value<T: serde::Serialize>(x: &T) -> Res<Value> {
    serde_json::to_value(x).map_err(|e| Fail::Runtime(e.to_string()))
}

/// Parses a duration keyword (`gap`, ...) to nanoseconds.
pub(crate) fn duration_ns(name: &str, s: &str) -> Res<f64> {
    parse_duration_ns(s).map_err(|e| invalid(name, s, e))
}

/// Parses the `latency` keyword: a bound > 0 (the binary's `--latency`).
pub(crate) fn latency_ns(s: &str) -> Res<f64> {
    match duration_ns("latency", s)? {
        ns if ns > 0.0 => Ok(ns),
        _ => Err(invalid("latency", s, "a latency bound must be > 0")),
    }
}

/// Parses a wait strategy keyword (`mode`, `mode_p`, `strategy`, ...).
pub(crate) fn wait_mode(name: &str, s: &str) -> Res<WaitMode> {
    WaitMode::parse(s).map_err(|e| invalid(name, s, e))
}

pub(crate) fn param_named(name: &str) -> Res<Param> {
    Param::ALL
        .into_iter()
        .find(|p| p.name() == name)
        .ok_or_else(|| bad(UnknownParam(name.to_string()).to_string()))
}

pub(crate) fn parse_profile(profile: ProfileText) -> Res<Option<Profile>> {
    profile
        .map(|(text, from)| {
            let p: Profile = serde_json::from_str(&text)
                .map_err(|e| bad(format!("profile: {from} is not a kicklab profile: {e}")))?;
            p.check()
                .map_err(|e| bad(format!("profile: {from}: {e}")))?;
            Ok(p)
        })
        .transpose()
}

/// Parses a whole-number keyword (`len`, `kp`, `kc`) as the command line
/// parses a `u32` flag, with its words (no blanks around it either).
pub(crate) fn count(name: &str, value: &str) -> Res<u32> {
    kicklab_model::parse_whole(value, u64::from(u32::MAX))
        .map(|v| u32::try_from(v).expect("at most u32::MAX"))
        .map_err(|e| invalid(name, value, e))
}

/// The pair's parameters as given, before defaults and a profile.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Given {
    pub(crate) len: u32,
    pub(crate) kp: u32,
    pub(crate) kc: u32,
    pub(crate) wp: Cost,
    pub(crate) wc: Cost,
    pub(crate) np: Option<Cost>,
    pub(crate) nc: Option<Cost>,
    pub(crate) sp: Option<Cost>,
    pub(crate) sc: Option<Cost>,
    pub(crate) vp: Option<Cost>,
    pub(crate) vc: Option<Cost>,
}

impl Given {
    /// Parses the keywords (defaults: the paper's Fig. 4 set-up, as the
    /// binary's).
    pub(crate) fn parse(args: &Args) -> Res<Given> {
        let d = Params::default();
        let mut g = Given {
            len: d.len,
            kp: d.k_p,
            kc: d.k_c,
            wp: d.w_p,
            wc: d.w_c,
            np: None,
            nc: None,
            sp: None,
            sc: None,
            vp: None,
            vc: None,
        };
        // In the order of `Param::ALL`, so that the first bad one is the
        // same whatever the dict's order.
        for param in Param::ALL {
            let Some(value) = args.get(param.name()) else {
                continue;
            };
            let name = param.name();
            if param.is_count() {
                g.set_count(param, count(name, value)?);
            } else {
                let c = Cost::parse(value).map_err(|e| invalid(name, value, e))?;
                g.set_cost(param, c);
            }
        }
        if let Some(name) = args.keys().find(|k| param_named(k).is_err()) {
            return Err(bad(UnknownParam(name.clone()).to_string()));
        }
        Ok(g)
    }

    pub(crate) fn set_count(&mut self, param: Param, n: u32) {
        match param {
            Param::Len => self.len = n,
            Param::Kp => self.kp = n,
            _ => self.kc = n,
        }
    }

    pub(crate) fn set_cost(&mut self, param: Param, c: Cost) {
        match param {
            Param::Wp => self.wp = c,
            Param::Wc => self.wc = c,
            Param::Np => self.np = Some(c),
            Param::Nc => self.nc = Some(c),
            Param::Sp => self.sp = Some(c),
            Param::Sc => self.sc = Some(c),
            Param::Vp => self.vp = Some(c),
            _ => self.vc = Some(c),
        }
    }

    /// The validated parameters (the binary's `ParamArgs::build`): with a
    /// profile, what `apply` puts in, then the costs given by keyword.
    pub(crate) fn build(
        &self,
        profile: Option<&Profile>,
        apply: impl Fn(&Profile, &mut Params),
    ) -> Res<Params> {
        let given = kicklab_model::GivenParams {
            len: self.len,
            k_p: self.kp,
            k_c: self.kc,
            w_p: self.wp,
            w_c: self.wc,
            costs: kicklab_model::CostOverrides {
                n_p: self.np,
                n_c: self.nc,
                s_p: self.sp,
                s_c: self.sc,
                v_p: self.vp,
                v_c: self.vc,
            },
        };
        given
            .build(profile, apply)
            .map_err(|e| match profile.and(given.profile_at_fault(&e)) {
                Some(why) => bad(format!("profile: {why}")),
                None => param_err(&e),
            })
    }
}

/// The pair and its profile, parsed.
pub(crate) struct Pair {
    pub(crate) given: Given,
    pub(crate) profile: Option<Profile>,
}

impl Pair {
    pub(crate) fn parse(args: &Args, profile: ProfileText) -> Res<Pair> {
        Ok(Pair {
            given: Given::parse(args)?,
            profile: parse_profile(profile)?,
        })
    }

    /// A real run's, a sweep's or the control study's parameters (the
    /// binary's `ParamArgs::params`): a profile's N, V and S (means)
    /// where not given; W as given.
    pub(crate) fn params(&self) -> Res<Params> {
        self.given
            .build(self.profile.as_ref(), |pr, p| pr.apply_costs(p, false))
    }

    /// The model's (`spread` false) or the simulator's (`spread`)
    /// parameters (the binary's `ParamArgs::params_with`): with a
    /// profile, its N, V and S and W plus the ring's cost per message.
    pub(crate) fn params_with(&self, spread: bool) -> Res<Params> {
        self.given
            .build(self.profile.as_ref(), |pr, p| pr.apply(p, spread))
    }

    /// [`Pair::params_with`] for a pair whose parties both wait by
    /// `notify`: the ring's cost per message as measured with the peer
    /// asleep (the binary's `ParamArgs::params_for`).
    pub(crate) fn params_for(&self, spread: bool, notify: bool) -> Res<Params> {
        if notify {
            self.given
                .build(self.profile.as_ref(), |pr, p| pr.apply_notify(p, spread))
        } else {
            self.params_with(spread)
        }
    }

    /// How start-ups scale with idle time and what naps cost, per party,
    /// from the profile.
    pub(crate) fn sim_costs(
        &self,
    ) -> (
        [Option<kicklab_model::IdleScale>; 2],
        [Option<kicklab_model::Cost>; 2],
    ) {
        self.profile
            .as_ref()
            .map_or(([None, None], [None, None]), Profile::sim_costs)
    }
}

/// The model's mode: notify, poll, or a strategy with no closed form.
pub(crate) fn model_mode(mode: &str) -> Res<WaitMode> {
    let m = wait_mode("mode", mode)?;
    if let WaitMode::Spin { .. } = m {
        return Err(bad(
            "mode: the model covers notify and poll; simulate spin:<budget> with kicklab.sim()",
        ));
    }
    Ok(m)
}
