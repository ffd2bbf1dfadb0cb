//! Command-line arguments shared by the subcommands: the pair's parameters
//! and wait modes.

use clap::Args;
use kicklab_model::{parse_duration_ns, Cost, Params, WaitMode};

use crate::Usage;

/// The pair's parameters. Defaults: the paper's Fig. 4 set-up.
#[derive(Debug, Clone, Args)]
pub struct ParamArgs {
    /// Queue length L [slots].
    #[arg(
        long,
        default_value_t = 256,
        allow_hyphen_values = true,
        help_heading = "Parameters"
    )]
    pub len: u32,
    /// k_P: P wakes a sleeping C once this many messages are queued.
    #[arg(
        long,
        default_value_t = 1,
        allow_hyphen_values = true,
        help_heading = "Parameters"
    )]
    pub kp: u32,
    /// k_C: C wakes a sleeping P once this many slots are free.
    #[arg(
        long,
        default_value_t = 1,
        allow_hyphen_values = true,
        help_heading = "Parameters"
    )]
    pub kc: u32,
    /// W_P: producer work per message. A duration (1us, 250ns; bare = ns) or
    /// a distribution: const:1us, uniform:0.8us,1.2us, exp:1us (mean),
    /// normal:1us,0.1us (truncated at 0), lognormal:1us,0.2 (mean, sigma).
    #[arg(long, default_value = "1us", value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub wp: Cost,
    /// W_C: consumer work per message (duration or distribution).
    #[arg(long, default_value = "1.1us", value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub wc: Cost,
    /// N_P: P's cost of notifying C (a kick).
    #[arg(long, default_value = "2.4us", value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub np: Cost,
    /// N_C: C's cost of notifying P (an interrupt).
    #[arg(long, default_value = "0.2us", value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub nc: Cost,
    /// S_P: P's cost of starting after a notification (wake-up).
    #[arg(long, default_value = "3.9us", value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub sp: Cost,
    /// S_C: C's cost of starting after a notification (wake-up).
    #[arg(long, default_value = "0.2us", value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub sc: Cost,
}

fn cost(s: &str) -> Result<Cost, String> {
    Cost::parse(s).map_err(|e| e.to_string())
}

/// Parses `notify`, `poll` or `spin:<duration>`.
pub fn mode(s: &str) -> Result<WaitMode, String> {
    match s.trim() {
        "notify" => Ok(WaitMode::Notify),
        "poll" => Ok(WaitMode::Poll),
        other => match other.strip_prefix("spin:") {
            Some(b) => parse_duration_ns(b)
                .map(|budget_ns| WaitMode::Spin { budget_ns })
                .map_err(|e| e.to_string()),
            None => Err(format!(
                "unknown mode `{other}` (use notify, poll or spin:<duration>, e.g. spin:5us)"
            )),
        },
    }
}

impl ParamArgs {
    /// The validated parameters.
    ///
    /// # Errors
    ///
    /// A [`Usage`] error naming the flag.
    pub fn params(&self) -> Result<Params, Usage> {
        let p = Params {
            len: self.len,
            k_p: self.kp,
            k_c: self.kc,
            w_p: self.wp,
            w_c: self.wc,
            n_p: self.np,
            n_c: self.nc,
            s_p: self.sp,
            s_c: self.sc,
        };
        p.validate().map_err(|e| Usage(e.to_string()))?;
        Ok(p)
    }
}
