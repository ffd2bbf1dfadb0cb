//! Reading a profile safely: what a profile file may hold, checked before
//! anything uses it, and a profile of means for tests and examples. What
//! does not live here: what the model takes from it (`apply`), start-ups
//! against idle time (`idle`).

use crate::IdleScale;

use super::*;

impl Profile {
    /// Checks what a profile file may hold before anything uses it: every
    /// statistic finite and within [`crate::MAX_DURATION_NS`] (1 h) either
    /// way; the notification costs N (a call's duration on one clock), the
    /// visibilities V (every sample held within [0, N]), the polling
    /// pair's ring cost and the naps' CPU >= 0, as calibration measures
    /// them (a start-up, an in-run wake-up, a CPU part or a pace-setter's
    /// ring cost less its kicks may come out negative, timed across two
    /// clocks or as a difference, and the model takes such as 0); spreads
    /// of at least 0; an idle curve of at most [`IdleScale::MAX_POINTS`]
    /// points at increasing gaps above 0. A V above its N (kicks timed
    /// apart from the ones that set V) is cut to N where the model takes
    /// it.
    ///
    /// # Errors
    ///
    /// The first value out of range, named as the profile's JSON names it.
    pub fn check(&self) -> Result<(), String> {
        let max = crate::MAX_DURATION_NS;
        let stat = |name: &str, st: &Stat, signed: bool| -> Result<(), String> {
            for (what, v) in [
                ("median_ns", st.median_ns),
                ("mean_ns", st.mean_ns),
                ("p10_ns", st.p10_ns),
                ("p90_ns", st.p90_ns),
            ] {
                let low = if signed { -max } else { 0.0 };
                if !(v.is_finite() && (low..=max).contains(&v)) {
                    return Err(format!(
                        "{name}.{what} = {v:e}: must be {} (calibration measures it so)",
                        if signed {
                            "finite and within 1h either way"
                        } else {
                            "from 0 to 1h"
                        }
                    ));
                }
            }
            if st.p10_ns > st.p90_ns {
                return Err(format!(
                    "{name}: p10_ns = {:e} above p90_ns = {:e} (a 10th percentile is never above the 90th)",
                    st.p10_ns, st.p90_ns
                ));
            }
            if !(st.sigma_log.is_finite() && st.sigma_log >= 0.0) {
                return Err(format!(
                    "{name}.sigma_log = {:e}: must be >= 0",
                    st.sigma_log
                ));
            }
            Ok(())
        };
        let opt = |name: &str, st: &Option<Stat>, signed: bool| {
            st.as_ref().map_or(Ok(()), |st| stat(name, st, signed))
        };
        for (name, st, signed) in [
            ("NP", &self.np, false),
            ("NC", &self.nc, false),
            ("SP", &self.sp, true),
            ("SC", &self.sc, true),
            ("NP_cpu", &self.np_cpu, true),
            ("NC_cpu", &self.nc_cpu, true),
            ("SP_cpu", &self.sp_cpu, true),
            ("SC_cpu", &self.sc_cpu, true),
        ] {
            stat(name, st, signed)?;
        }
        for (name, st, signed) in [
            ("VP", &self.vp, false),
            ("VC", &self.vc, false),
            ("SP_V", &self.sp_v, true),
            ("SC_V", &self.sc_v, true),
            ("kick_visible", &self.kick_visible, true),
            ("overhead", &self.overhead, false),
            ("overhead_p", &self.overhead_p, true),
            ("overhead_c", &self.overhead_c, true),
            ("nap_P", &self.nap_p, true),
            ("nap_C", &self.nap_c, true),
            ("nap_P_cpu", &self.nap_p_cpu, false),
            ("nap_C_cpu", &self.nap_c_cpu, false),
        ] {
            opt(name, st, signed)?;
        }
        if let Some(r) = &self.in_run {
            opt("in_run.np", &r.np, false)?;
            opt("in_run.nc", &r.nc, false)?;
            opt("in_run.rp", &r.rp, true)?;
            opt("in_run.rc", &r.rc, true)?;
            opt("in_run.sleep_P_cpu", &r.sleep_p_cpu, true)?;
            opt("in_run.sleep_C_cpu", &r.sleep_c_cpu, true)?;
        }
        if !BACKENDS.contains(&self.backend.as_str()) {
            return Err(format!(
                "backend = `{}`: one of {} (the backend the calibration ran on)",
                crate::shown(&self.backend),
                BACKENDS.join(", ")
            ));
        }
        if !(self.tsc_ghz.is_finite() && self.tsc_ghz >= 0.0) {
            return Err(format!(
                "tsc_ghz = {:e}: must be finite and >= 0 (0: not measured)",
                self.tsc_ghz
            ));
        }
        // A wall start-up may come out negative (the peer runs before the
        // notifier's call returns: a kick seen half-way through it), never
        // by more than the call itself: the peer cannot run before the
        // notification began.
        for (name, s, n, by) in [
            ("SP", &self.sp, &self.nc, "NC"),
            ("SC", &self.sc, &self.np, "NP"),
        ] {
            if s.median_ns < -n.median_ns {
                return Err(format!(
                    "{name}.median_ns = {:e}: a start-up may be negative by at most the \
                     notification it follows ({by}.median_ns = {:e}): the peer cannot run before \
                     the notification began",
                    s.median_ns, n.median_ns
                ));
            }
        }
        if let Some(o) = self.others_cpu {
            if !(o.is_finite() && (0.0..=1e4).contains(&o)) {
                return Err(format!(
                    "others_cpu = {o:e}: must be from 0 to 10000 (CPUs' worth of other processes' work)"
                ));
            }
        }
        if !(self.gap_ns.is_finite() && self.gap_ns >= 0.0 && self.gap_ns <= max) {
            return Err(format!("gap_ns = {:e}: must be from 0 to 1h", self.gap_ns));
        }
        if self.idle_curve.len() > IdleScale::MAX_POINTS {
            return Err(format!(
                "idle_curve: at most {} points (calibrate measures no more), got {}",
                IdleScale::MAX_POINTS,
                self.idle_curve.len()
            ));
        }
        let mut last = 0.0;
        for (i, q) in self.idle_curve.iter().enumerate() {
            if !(q.gap_ns.is_finite() && q.gap_ns > last && q.gap_ns <= max) {
                return Err(format!(
                    "idle_curve[{i}].gap_ns = {:e}: gaps must be > 0, at most 1h and increase",
                    q.gap_ns
                ));
            }
            last = q.gap_ns;
            let at = |n: &str| format!("idle_curve[{i}].{n}");
            stat(&at("NP"), &q.np, false)?;
            stat(&at("NC"), &q.nc, false)?;
            stat(&at("SP"), &q.sp, true)?;
            stat(&at("SC"), &q.sc, true)?;
            opt(&at("VP"), &q.vp, false)?;
            opt(&at("VC"), &q.vc, false)?;
        }
        Ok(())
    }

    /// A profile of constant costs (N_P, N_C, S_P, S_C) [ns] and nothing
    /// else: for tests and for costs known from elsewhere.
    pub fn of_means(backend: &str, [np, nc, sp, sc]: [f64; 4]) -> Profile {
        let c = Stat::constant;
        Profile {
            backend: backend.into(),
            np: c(np),
            nc: c(nc),
            sp: c(sp),
            sc: c(sc),
            np_cpu: c(np),
            nc_cpu: c(nc),
            sp_cpu: c(sp),
            sc_cpu: c(sc),
            gap_ns: 0.0,
            rounds: 1,
            stable: true,
            tsc_ghz: 0.0,
            cpus: 0,
            direction: None,
            guest: None,
            clock_sync_ns: None,
            clock_drift_ns: None,
            kick_visible: None,
            vp: None,
            vc: None,
            sp_v: None,
            sc_v: None,
            overhead: None,
            overhead_p: None,
            overhead_c: None,
            idle_curve: Vec::new(),
            in_run: None,
            nap_p: None,
            nap_p_cpu: None,
            nap_c_cpu: None,
            nap_c: None,
            others_cpu: None,
        }
    }
}
