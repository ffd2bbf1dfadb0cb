//! Which two threads of a trace are the pair ([`Pair`]): named by the
//! user (a thread id or a name), or found. A vCPU is a thread whose guest
//! wrote to a device (its notifications); its partner is the thread it
//! exchanged the most wake-ups with (an I/O thread, a vhost worker). Two
//! host threads are the two that woke each other most. Where two pairs
//! compete (two VMs, several busy vCPUs), the user must name one.

use kicklab_model::Flag;
use serde::Serialize;

use crate::survey::Survey;
use crate::TraceError;

/// A thread named on the command line: its id, or its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// A thread id.
    Tid(u32),
    /// A thread's name, as the trace prints it.
    Comm(String),
}

impl std::str::FromStr for Who {
    type Err = String;
    fn from_str(s: &str) -> Result<Who, String> {
        if s.is_empty() {
            return Err("empty: give a thread id or a thread name".into());
        }
        Ok(s.parse()
            .map_or_else(|_| Who::Comm(s.to_string()), Who::Tid))
    }
}

/// One party of the pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Thread {
    /// Its id.
    pub tid: u32,
    /// Its name.
    pub comm: String,
}

/// The pair the estimates are for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pair {
    /// P.
    pub producer: Thread,
    /// C.
    pub consumer: Thread,
    /// Which of them is a vCPU (runs a guest), if either.
    pub guest: Option<kicklab_model::Party>,
}

/// What the user said about the pair.
#[derive(Debug, Clone, Default)]
pub struct Naming {
    /// `--producer`.
    pub producer: Option<Who>,
    /// `--consumer`.
    pub consumer: Option<Who>,
    /// With a vCPU found: whether the guest consumes (`rx`) rather than
    /// produces (`tx`).
    pub guest_consumes: bool,
}

/// A vCPU whose writes are at least this share of the busiest one's
/// competes with it.
const RIVAL_SHARE: f64 = 0.1;

/// Chooses the pair.
pub fn choose(s: &Survey, naming: &Naming) -> Result<Pair, TraceError> {
    let (by_p, by_c) = (Flag::Producer.to_string(), Flag::Consumer.to_string());
    let producer = naming
        .producer
        .as_ref()
        .map(|w| resolve(s, w, &by_p))
        .transpose()?;
    let consumer = naming
        .consumer
        .as_ref()
        .map(|w| resolve(s, w, &by_c))
        .transpose()?;
    let (p, c) = match (producer, consumer) {
        (Some(p), Some(c)) if p == c => {
            return Err(TraceError::Pair(format!(
                "{by_p} and {by_c} name the same thread ({p})"
            )))
        }
        (Some(p), Some(c)) => (p, c),
        (Some(p), None) => (p, partner(s, p, &by_p)?),
        (None, Some(c)) => (partner(s, c, &by_c)?, c),
        (None, None) => found(s, naming)?,
    };
    let is_vcpu = |t: u32| s.threads.get(&t).is_some_and(|t| t.kvm_writes > 0);
    let guest = match (is_vcpu(p), is_vcpu(c)) {
        (true, false) => Some(kicklab_model::Party::P),
        (false, true) => Some(kicklab_model::Party::C),
        _ => None,
    };
    let thread = |tid: u32| Thread {
        tid,
        comm: s
            .threads
            .get(&tid)
            .map(|t| t.comm.clone())
            .unwrap_or_default(),
    };
    Ok(Pair {
        producer: thread(p),
        consumer: thread(c),
        guest,
    })
}

fn resolve(s: &Survey, who: &Who, flag: &str) -> Result<u32, TraceError> {
    match who {
        Who::Tid(t) if s.threads.contains_key(t) => Ok(*t),
        Who::Tid(t) => Err(TraceError::Pair(format!(
            "{flag}: thread {t} has no event in the trace"
        ))),
        Who::Comm(name) => {
            let mut tids: Vec<u32> = s
                .threads
                .iter()
                .filter(|(_, t)| t.comm == *name)
                .map(|(tid, _)| *tid)
                .collect();
            tids.sort_unstable();
            match tids.as_slice() {
                [t] => Ok(*t),
                [] => Err(TraceError::Pair(format!(
                    "{flag}: no thread named `{name}` in the trace"
                ))),
                many => Err(TraceError::Pair(format!(
                    "{flag}: {} threads are named `{name}` ({}): give a thread id",
                    many.len(),
                    list(many)
                ))),
            }
        }
    }
}

/// The thread that exchanged the most wake-ups with `t`.
fn partner(s: &Survey, t: u32, flag: &str) -> Result<u32, TraceError> {
    s.threads
        .keys()
        .filter(|&&o| o != t && o != 0)
        .map(|&o| (s.exchanged(t, o), o))
        .filter(|&(n, _)| n > 0)
        .max()
        .map(|(_, o)| o)
        .ok_or_else(|| {
            TraceError::Pair(format!(
                "{flag}: thread {t} woke no other thread and was woken by none: the trace needs sched:sched_waking or sched:sched_wakeup, or name both parties"
            ))
        })
}

fn found(s: &Survey, naming: &Naming) -> Result<(u32, u32), TraceError> {
    let mut vcpus: Vec<(u64, u32)> = s
        .threads
        .iter()
        .filter(|(_, t)| t.kvm_writes > 0)
        .map(|(&tid, t)| (t.kvm_writes, tid))
        .collect();
    vcpus.sort_unstable_by(|a, b| b.cmp(a));
    if let Some(&(top, vcpu)) = vcpus.first() {
        #[allow(clippy::cast_precision_loss)]
        let rivals: Vec<u32> = vcpus[1..]
            .iter()
            .filter(|(n, _)| *n as f64 >= RIVAL_SHARE * top as f64)
            .map(|&(_, t)| t)
            .collect();
        if !rivals.is_empty() {
            let mut all = vec![vcpu];
            all.extend(rivals);
            return Err(TraceError::Pair(format!(
                "{} vCPU threads notify their devices ({}): two VMs or a VM with several busy vCPUs; name the pair with {} and {} (thread ids)",
                all.len(),
                list(&all),
                Flag::Producer,
                Flag::Consumer
            )));
        }
        let host = partner(s, vcpu, "the vCPU")?;
        return Ok(if naming.guest_consumes {
            (host, vcpu)
        } else {
            (vcpu, host)
        });
    }
    let mut pairs: Vec<(u64, u32, u32)> = Vec::new();
    for &(a, b) in s.wakes.keys() {
        let (a, b) = (a.min(b), a.max(b));
        if a != 0 && a != b && !pairs.iter().any(|&(_, x, y)| (x, y) == (a, b)) {
            pairs.push((s.exchanged(a, b), a, b));
        }
    }
    pairs.sort_unstable_by(|x, y| y.cmp(x));
    let Some(&(_, a, b)) = pairs.first() else {
        return Err(TraceError::Pair(
            "no two threads woke each other: the trace needs sched:sched_waking (or sched_wakeup) and sched:sched_switch".into(),
        ));
    };
    Err(TraceError::Pair(format!(
        "threads {a} ({}) and {b} ({}) wake each other most; say which produces with {} (or consumes with {})",
        s.threads.get(&a).map_or("", |t| t.comm.as_str()),
        s.threads.get(&b).map_or("", |t| t.comm.as_str()),
        Flag::Producer,
        Flag::Consumer,
    )))
}

fn list(tids: &[u32]) -> String {
    tids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
