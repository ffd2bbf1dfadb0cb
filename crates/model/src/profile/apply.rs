//! What the model and the simulator take from a profile: visibilities,
//! start-ups, the costs as distributions or medians, the ring's cost added
//! to W, and the in-run kicks and wake-ups. What does not live here:
//! checking (`check`), start-ups against idle time (`idle`).

use crate::{Cost, Party};

use super::*;

impl Profile {
    /// V of `party`'s notification (V_P for P: when C becomes runnable),
    /// where the calibration derived one together with the matching S.
    pub fn visibility(&self, party: Party) -> Option<&Stat> {
        match party {
            Party::P => self.vp.as_ref().filter(|_| self.sc_v.is_some()),
            Party::C => self.vc.as_ref().filter(|_| self.sp_v.is_some()),
        }
    }

    /// The start-up of `party` as the model takes it: from becoming
    /// runnable to running (S_P after V_C where V was derived, else the
    /// wall S_P, from the end of the notification).
    pub fn start(&self, party: Party) -> &Stat {
        match party {
            Party::P => self
                .sp_v
                .as_ref()
                .filter(|_| self.vc.is_some())
                .unwrap_or(&self.sp),
            Party::C => self
                .sc_v
                .as_ref()
                .filter(|_| self.vp.is_some())
                .unwrap_or(&self.sc),
        }
    }

    /// The start-up costs the model cannot take as measured, by name: a
    /// mean that stays negative after V has absorbed what it can (the
    /// woken party ran before its notification started, or, in a profile
    /// without V, before the notifier's call returned). The model takes
    /// them as 0 (`docs/kvm.md`).
    pub fn negative_starts(&self) -> Vec<&'static str> {
        [("S_P", Party::P), ("S_C", Party::C)]
            .into_iter()
            .filter(|(_, party)| self.start(*party).mean_ns < 0.0)
            .map(|(n, _)| n)
            .collect()
    }

    /// The four costs as (N_P, N_C, S_P, S_C) for the model and simulator
    /// (S as [`Profile::start`]).
    pub fn costs(&self) -> [Cost; 4] {
        [
            self.np.as_cost(),
            self.nc.as_cost(),
            self.start(Party::P).as_cost(),
            self.start(Party::C).as_cost(),
        ]
    }

    /// The means of N_P, N_C, S_P, S_C over the paper's (Rizzo et al.'s
    /// QEMU/KVM prototype, the costs of [`crate::Params::default`]). S is
    /// the wall start-up (after the notification ends), as in the paper.
    pub fn means_over_paper(&self) -> [f64; 4] {
        let d = crate::Params::default();
        let paper = [d.n_p, d.n_c, d.s_p, d.s_c];
        let ours = [self.np, self.nc, self.sp, self.sc];
        std::array::from_fn(|i| ours[i].mean_ns / paper[i].mean_ns())
    }

    /// Puts the calibrated costs into `params` (distributions with the
    /// measured spread if `spread`, else their means): N, V and S
    /// ([`Profile::apply_costs`]), and the ring's cost per message
    /// ([`Profile::overhead`]) added to W_P and W_C: the model's W is the
    /// work a real party spins plus what the ring costs it per message.
    pub fn apply(&self, params: &mut crate::Params, spread: bool) {
        self.apply_costs(params, spread);
        let [o_p, o_c] = self.overheads(false);
        params.w_p = params.w_p.plus(o_p);
        params.w_c = params.w_c.plus(o_c);
    }

    /// As [`Profile::apply`], for a pair whose parties wait by `notify`:
    /// the ring's cost per message to each party is the one measured with
    /// its peer asleep ([`Profile::overhead_p`], [`Profile::overhead_c`]),
    /// where the profile has both; else [`Profile::overhead`].
    pub fn apply_notify(&self, params: &mut crate::Params, spread: bool) {
        self.apply_costs(params, spread);
        let [o_p, o_c] = self.overheads(true);
        params.w_p = params.w_p.plus(o_p);
        params.w_c = params.w_c.plus(o_c);
    }

    /// The ring's cost per message added to W_P and W_C: with `notify` the
    /// peer-asleep ones where the profile has both, else the polling
    /// pair's; 0 without. Their medians: a run taken off its CPU by
    /// another process only ever adds to a sample (one such run of five
    /// put a KVM polling pair's mean at 120 ns, its median at 65 ns).
    pub fn overheads(&self, notify: bool) -> [f64; 2] {
        match (notify, &self.overhead_p, &self.overhead_c, &self.overhead) {
            (true, Some(p), Some(c), _) => [p.median_ns.max(0.0), c.median_ns.max(0.0)],
            (_, _, _, Some(o)) => [o.median_ns.max(0.0); 2],
            _ => [0.0; 2],
        }
    }

    /// Puts the calibrated N, V and S into `params`, leaving W alone (a
    /// real run's parameters: its W is what the parties spin). V is cut to
    /// N where a profile has it larger (`Params::validate`'s rule).
    pub fn apply_costs(&self, params: &mut crate::Params, spread: bool) {
        let [np, nc, sp, sc] = self.costs();
        let f = |c: Cost| if spread { c } else { Cost::Const(c.mean_ns()) };
        (params.n_p, params.n_c, params.s_p, params.s_c) = (f(np), f(nc), f(sp), f(sc));
        let vis = |party: Party, n: Cost| {
            self.visibility(party).map(|v| {
                let v = f(v.as_cost());
                if v.mean_ns() > n.mean_ns() {
                    v.with_mean(n.mean_ns())
                } else {
                    v
                }
            })
        };
        params.v_p = vis(Party::P, params.n_p);
        params.v_c = vis(Party::C, params.n_c);
        if let Some(r) = &self.in_run {
            let mean = |s: &Option<Stat>| s.map(|s| s.mean_ns);
            self.apply_in_run(params, r, &mean, |s| s.mean_ns, |c, v| c.with_mean(v));
        }
    }

    /// Puts what `r` timed into `params`: N where timed; the wake-up R,
    /// where timed, split as calibration splits it (V = R - S cpu within
    /// [0, N], S = R - V). `pick` reads a statistic (mean or median) and
    /// `set` gives a cost that value.
    fn apply_in_run(
        &self,
        params: &mut crate::Params,
        r: &InRunCosts,
        pick: &dyn Fn(&Option<Stat>) -> Option<f64>,
        cpu: impl Fn(&Stat) -> f64,
        set: impl Fn(Cost, f64) -> Cost,
    ) {
        if let Some(n) = pick(&r.np) {
            params.n_p = set(params.n_p, n.max(0.0));
        }
        if let Some(n) = pick(&r.nc) {
            params.n_c = set(params.n_c, n.max(0.0));
        }
        let split = |n: f64, r: f64, s_cpu: f64| {
            let (v, s) = split_wake_up(n, r, s_cpu);
            (v, s.max(0.0))
        };
        if let Some(rc) = pick(&r.rc) {
            let (v, s) = split(params.n_p.mean_ns(), rc, cpu(&self.sc_cpu));
            params.s_c = set(params.s_c, s);
            params.v_p = Some(Cost::Const(v));
        }
        if let Some(rp) = pick(&r.rp) {
            let (v, s) = split(params.n_c.mean_ns(), rp, cpu(&self.sp_cpu));
            params.s_p = set(params.s_p, s);
            params.v_c = Some(Cost::Const(v));
        }
        // A V set before from an N that the runs replaced stays within it.
        for (v, n) in [(&mut params.v_p, params.n_p), (&mut params.v_c, params.n_c)] {
            if let Some(c) = v {
                if c.mean_ns() > n.mean_ns() {
                    *c = c.with_mean(n.mean_ns());
                }
            }
        }
    }

    /// Puts the calibrated medians into `params` as constants: the typical
    /// cost, insensitive to the rare very slow wake-ups that dominate the
    /// means here (`docs/calibration.md`), for a pair that waits by
    /// `notify`; the overheads' medians are added to W_P and W_C as in
    /// [`Profile::apply_notify`].
    pub fn apply_medians(&self, params: &mut crate::Params) {
        let c = |s: &Stat| Cost::Const(s.median_ns.max(0.0));
        (params.n_p, params.n_c, params.s_p, params.s_c) = (
            c(&self.np),
            c(&self.nc),
            c(self.start(Party::P)),
            c(self.start(Party::C)),
        );
        let vis = |party: Party, n: &Stat| {
            self.visibility(party)
                .map(|v| Cost::Const(v.median_ns.clamp(0.0, n.median_ns.max(0.0))))
        };
        params.v_p = vis(Party::P, &self.np);
        params.v_c = vis(Party::C, &self.nc);
        if let Some(r) = &self.in_run {
            // As in `apply_costs`, on the medians.
            let median = |s: &Option<Stat>| s.map(|s| s.median_ns);
            self.apply_in_run(params, r, &median, |s| s.median_ns, |_, v| Cost::Const(v));
        }
        let [o_p, o_c] = self.overheads(true);
        params.w_p = params.w_p.plus(o_p);
        params.w_c = params.w_c.plus(o_c);
    }
}
