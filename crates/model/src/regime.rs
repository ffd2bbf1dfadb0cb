//! The regimes of paper Table 1 (`docs/model.md`) and the two predicates
//! that separate them: the types that the model, the simulator's reports
//! and the testbeds share. The classifier that computes them from a pair's
//! costs lives with the exact cycle it reads them from (`cycle`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Operating regime of the pair (paper Section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Regime {
    /// Greedy polling: both parties spin, `T = max(W_P, W_C)` (for L >= 2).
    GP,
    /// Fast consumer: C drains the queue and sleeps; P never blocks.
    FC,
    /// Fast producer: P fills the queue and sleeps; C never blocks.
    FP,
    /// Slow consumer startup: C is faster, but P fills the queue while C wakes.
    SCS,
    /// Slow producer startup: P is faster, but C drains the queue while P wakes.
    SPS,
    /// Slow startups on both sides: P and C alternate, `L` messages a round.
    SS,
    /// Early-woken consumer (kick visibility, V_P < N_P): C is not the
    /// faster party (`W_C >= W_P`), but it is woken inside P's kick, takes
    /// the k_P waiting messages and sleeps again before P's next one, so
    /// every k_P messages cost a kick: `T = W_P + N_P / k_P`.
    #[serde(rename = "EWC")]
    EWC,
    /// Early-woken producer, the mirror of EWC (V_C < N_C, `W_P >= W_C`):
    /// `T = W_C + N_C / k_C`.
    #[serde(rename = "EWP")]
    EWP,
    /// `W_P == W_C`: after at most one round, P and C run in lockstep and
    /// never notify again; `T = W_P`.
    #[serde(rename = "lockstep")]
    Lockstep,
}

impl Regime {
    /// The name used in output and JSON (`GP`, `FC`, ..., `lockstep`).
    pub fn name(self) -> &'static str {
        match self {
            Regime::GP => "GP",
            Regime::FC => "FC",
            Regime::FP => "FP",
            Regime::SCS => "SCS",
            Regime::SPS => "SPS",
            Regime::SS => "SS",
            Regime::EWC => "EWC",
            Regime::EWP => "EWP",
            Regime::Lockstep => "lockstep",
        }
    }

    /// Every regime: the paper's, in its order, then the two that kick
    /// visibility adds, then lockstep.
    pub const ALL: [Regime; 9] = [
        Regime::GP,
        Regime::FC,
        Regime::FP,
        Regime::SCS,
        Regime::SPS,
        Regime::SS,
        Regime::EWC,
        Regime::EWP,
        Regime::Lockstep,
    ];

    /// One line saying what the regime means (`kicklab model`'s text, the
    /// report's explorer).
    pub fn meaning(self) -> &'static str {
        match self {
            Regime::GP => "greedy polling: both spin; T = max(W_P, W_C), E = 2T",
            Regime::FC => "fast consumer: C drains the queue and sleeps, P never blocks",
            Regime::FP => "fast producer: P fills the queue and sleeps, C never blocks",
            Regime::SCS => {
                "slow consumer start-up: C is faster, but P fills the queue while C wakes up"
            }
            Regime::SPS => {
                "slow producer start-up: P is faster, but C drains the queue while P wakes up"
            }
            Regime::SS => "slow start-up on both sides: P and C take turns, L messages a round",
            Regime::EWC => {
                "early-woken consumer: C wakes inside P's kick, drains and sleeps again; a kick every k_P messages"
            }
            Regime::EWP => {
                "early-woken producer: P wakes inside C's notification, fills and sleeps again; one every k_C slots"
            }
            Regime::Lockstep => {
                "W_P == W_C: after at most one round P and C run in lockstep, no more notifications"
            }
        }
    }

    /// Who sleeps in this regime: `none`, `P`, `C` or `both` (what a
    /// measurement's notification counts show).
    pub fn sleeper(self) -> &'static str {
        match self {
            Regime::GP | Regime::Lockstep => "none",
            Regime::FP | Regime::EWP => "P",
            Regime::FC | Regime::EWC => "C",
            Regime::SCS | Regime::SPS | Regime::SS => "both",
        }
    }
}

impl fmt::Display for Regime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The two inequalities that separate long-queue from short-queue regimes,
/// evaluated exactly on costs rounded to picoseconds. With kick visibility
/// the start-up is the effective one, `S + V - N`: when the woken party
/// acts, counted from the end of the notification (`docs/model.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Predicates {
    /// `S_C + V_P - N_P + W_C > (L - k_P) W_P`: after P wakes C, P fills
    /// the queue before C frees its first slot.
    pub slow_consumer_startup: bool,
    /// `S_P + V_C - N_C + W_P > (L - k_C) W_C`: after C wakes P, C drains
    /// the queue before P publishes its first message.
    pub slow_producer_startup: bool,
}
