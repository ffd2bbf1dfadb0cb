//! The real mechanisms behind kicklab's strategies and their settings:
//! which family of `docs/control.md` each one runs (KVM's host halt
//! polling is `halt-poll`, NAPI deferral is `defer`, ...), the grid of its
//! settings `advise` searches, how a strategy reads as that mechanism's
//! settings, and the commands that would apply them. kicklab never applies
//! them. The semantics each mapping rests on, with the source that states
//! them, are in `docs/knobs.md`. What does not live here: the search and
//! the ranking (`advise`), the strategies' rules (`kicklab_model`).

use std::fmt::Write as _;

use kicklab_model::{Estimator, WaitMode, Window};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// A real mechanism whose settings `advise` can give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// KVM's halt polling in the host (module `kvm`): a halted vCPU's
    /// thread polls before it sleeps.
    KvmHost,
    /// The guest's cpuidle-haltpoll governor: an idle vCPU polls in the
    /// guest before it halts.
    Guest,
    /// NAPI deferral: `napi_defer_hard_irqs` and `gro_flush_timeout`.
    Napi,
    /// vhost-net's busy loop (`busyloop_timeout`, QEMU's `poll-us`).
    Vhost,
    /// QEMU's IOThread adaptive polling (`poll-max-ns`, `poll-grow`,
    /// `poll-shrink`).
    Qemu,
    /// virtio-net notification coalescing (`ethtool -C`).
    VirtioNet,
    /// io_uring's polled completions (`IORING_SETUP_IOPOLL`,
    /// `IORING_SETUP_HYBRID_IOPOLL`).
    IoUring,
}

/// The mechanisms `--for` names, in its order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mechanisms(pub Vec<Mechanism>);

/// A mechanism's settings, in the order its documentation lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings(pub Vec<(&'static str, serde_json::Value)>);

impl Serialize for Settings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl Settings {
    /// `name=value name=value`, as the text output prints them.
    pub fn line(&self) -> String {
        let mut out = String::new();
        for (i, (name, value)) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            let value = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_string);
            let _ = write!(out, "{sep}{name}={value}");
        }
        out
    }
}

const US: f64 = 1000.0;

/// The mechanisms, in the order `--for all` prints them.
pub const ALL: [Mechanism; 7] = [
    Mechanism::KvmHost,
    Mechanism::Guest,
    Mechanism::Napi,
    Mechanism::Vhost,
    Mechanism::Qemu,
    Mechanism::VirtioNet,
    Mechanism::IoUring,
];

/// QEMU starts a poll window that grows from 0 at 4 us (`util/aio-posix.c`).
const QEMU_START_NS: f64 = 4000.0;
/// QEMU's IOThread default `poll-max-ns`.
const QEMU_MAX_NS: f64 = 32_768.0;

/// Whole nanoseconds, as the kernel's and QEMU's parameters take them.
fn ns(v: f64) -> serde_json::Value {
    serde_json::Value::from(v.round() as u64)
}

/// Whole microseconds, where the value is one.
fn whole_us(v: f64) -> Option<u64> {
    let us = v / US;
    (us >= 1.0 && (us - us.round()).abs() < 1e-9).then(|| us.round() as u64)
}

/// A factor the kernel takes as a whole number.
fn whole(v: f64) -> Option<serde_json::Value> {
    (v >= 0.0 && v.fract() == 0.0 && v <= 1e6).then(|| serde_json::Value::from(v as u64))
}

impl Mechanism {
    /// Its name on the command line (`--for`) and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::KvmHost => "kvm-host",
            Mechanism::Guest => "guest",
            Mechanism::Napi => "napi",
            Mechanism::Vhost => "vhost",
            Mechanism::Qemu => "qemu",
            Mechanism::VirtioNet => "virtio-net",
            Mechanism::IoUring => "io-uring",
        }
    }

    /// What it is, in a few words.
    pub fn what(self) -> &'static str {
        match self {
            Mechanism::KvmHost => "KVM halt polling in the host (module kvm)",
            Mechanism::Guest => "the guest's cpuidle-haltpoll governor",
            Mechanism::Napi => "NAPI deferral of a device's interrupts",
            Mechanism::Vhost => "vhost-net's busy loop",
            Mechanism::Qemu => "QEMU IOThread adaptive polling",
            Mechanism::VirtioNet => "virtio-net notification coalescing",
            Mechanism::IoUring => "io_uring polled completions",
        }
    }

    /// The kicklab family it runs, as `--strategy` writes it.
    pub fn family(self) -> &'static str {
        match self {
            Mechanism::KvmHost | Mechanism::Qemu => "halt-poll",
            Mechanism::Guest => "haltpoll",
            Mechanism::Napi => "defer",
            Mechanism::Vhost => "spin",
            Mechanism::VirtioNet => "coalesce",
            Mechanism::IoUring => "hybrid:min",
        }
    }

    /// Parses `--for`: names separated by commas, `all` or `none`.
    ///
    /// # Errors
    ///
    /// The accepted names.
    pub fn parse(s: &str) -> Result<Mechanisms, String> {
        let names: Vec<&str> = s.split(',').collect();
        if names.len() > 1 && names.iter().any(|n| *n == "all" || *n == "none") {
            return Err(format!(
                "`all` and `none` stand alone, got {}",
                kicklab_model::shown(s)
            ));
        }
        let mut out = Vec::new();
        for name in names {
            let found = match name {
                "all" => ALL.to_vec(),
                "none" => Vec::new(),
                _ => vec![*ALL.iter().find(|m| m.name() == name).ok_or_else(|| {
                    let names: Vec<&str> = ALL.iter().map(|m| m.name()).collect();
                    format!(
                        "no mechanism '{}': {}, all or none",
                        kicklab_model::shown(name),
                        names.join(", ")
                    )
                })?],
            };
            for m in found {
                if out.contains(&m) {
                    return Err(format!("{} is named twice", m.name()));
                }
                out.push(m);
            }
        }
        Ok(Mechanisms(out))
    }

    /// Its setting as shipped, as the strategy it runs.
    pub fn default_mode(self) -> WaitMode {
        match self {
            Mechanism::KvmHost => WaitMode::HostHaltPoll(Window::HALT_POLL),
            Mechanism::Guest => WaitMode::GuestHaltpoll(Window::HALTPOLL),
            Mechanism::Qemu => WaitMode::HostHaltPoll(qemu_window(QEMU_MAX_NS)),
            // Off by default: the interrupt or kick at every wait.
            Mechanism::Napi | Mechanism::Vhost | Mechanism::VirtioNet | Mechanism::IoUring => {
                WaitMode::Notify
            }
        }
    }

    /// The settings `advise` searches for it, as strategies: its default,
    /// off (`notify`), and a grid of its own parameters.
    pub fn grid(self) -> Vec<WaitMode> {
        let mut out = vec![self.default_mode(), WaitMode::Notify];
        match self {
            Mechanism::KvmHost => {
                for max in [25.0, 50.0, 100.0, 200.0, 400.0] {
                    for shrink in [2.0, 0.0] {
                        out.push(WaitMode::HostHaltPoll(Window {
                            max_ns: max * US,
                            start_ns: Window::HALT_POLL.start_ns.min(max * US),
                            shrink,
                            ..Window::HALT_POLL
                        }));
                    }
                }
            }
            Mechanism::Guest => {
                for max in [25.0, 50.0, 100.0, 200.0, 400.0] {
                    out.push(WaitMode::GuestHaltpoll(Window {
                        max_ns: max * US,
                        start_ns: Window::HALTPOLL.start_ns.min(max * US),
                        ..Window::HALTPOLL
                    }));
                }
            }
            Mechanism::Napi => {
                for timeout in [10.0, 20.0, 50.0, 100.0] {
                    for count in [2, 10, 20] {
                        out.push(WaitMode::Defer {
                            timeout_ns: timeout * US,
                            count,
                        });
                    }
                }
            }
            Mechanism::Vhost => {
                for b in [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0] {
                    out.push(WaitMode::Spin { budget_ns: b * US });
                }
            }
            Mechanism::Qemu => {
                for max in [8.0, 16.0, 64.0, 128.0, 256.0] {
                    out.push(WaitMode::HostHaltPoll(qemu_window(max * US)));
                }
            }
            Mechanism::VirtioNet => {
                for n in [4, 16, 64] {
                    for t in [10.0, 50.0, 100.0] {
                        out.push(WaitMode::Coalesce { n, t_ns: t * US });
                    }
                }
            }
            Mechanism::IoUring => {
                out.push(WaitMode::Poll);
                out.push(WaitMode::Hybrid(Estimator::Min));
            }
        }
        out
    }

    /// `mode` as this mechanism's settings; `None` where it cannot run it.
    pub fn settings(self, mode: &WaitMode) -> Option<Settings> {
        let s = |v: Vec<(&'static str, serde_json::Value)>| Some(Settings(v));
        let text = |t: &str| serde_json::Value::from(t);
        match (self, mode) {
            (Mechanism::KvmHost, WaitMode::Notify) => s(vec![("halt_poll_ns", ns(0.0))]),
            (Mechanism::KvmHost, WaitMode::HostHaltPoll(w)) => s(vec![
                ("halt_poll_ns", ns(w.max_ns)),
                ("halt_poll_ns_grow", whole(w.grow)?),
                ("halt_poll_ns_grow_start", ns(w.start_ns)),
                ("halt_poll_ns_shrink", whole(w.shrink)?),
            ]),
            (Mechanism::Guest, WaitMode::Notify) => s(vec![("guest_halt_poll_ns", ns(0.0))]),
            (Mechanism::Guest, WaitMode::GuestHaltpoll(w)) if w.shrink >= 1.0 => s(vec![
                ("guest_halt_poll_ns", ns(w.max_ns)),
                ("guest_halt_poll_grow", whole(w.grow)?),
                ("guest_halt_poll_grow_start", ns(w.start_ns)),
                ("guest_halt_poll_shrink", whole(w.shrink)?),
                (
                    "guest_halt_poll_allow_shrink",
                    text(if w.shrink > 1.0 { "Y" } else { "N" }),
                ),
            ]),
            (Mechanism::Napi, WaitMode::Notify) => s(vec![
                ("napi_defer_hard_irqs", 0.into()),
                ("gro_flush_timeout", ns(0.0)),
            ]),
            (Mechanism::Napi, WaitMode::Defer { timeout_ns, count }) => s(vec![
                ("napi_defer_hard_irqs", (*count).into()),
                ("gro_flush_timeout", ns(*timeout_ns)),
            ]),
            (Mechanism::Vhost, WaitMode::Notify) => s(vec![("busyloop_timeout_us", 0.into())]),
            (Mechanism::Vhost, WaitMode::Spin { budget_ns }) => {
                s(vec![("busyloop_timeout_us", whole_us(*budget_ns)?.into())])
            }
            (Mechanism::Qemu, WaitMode::Notify) => s(vec![("poll-max-ns", ns(0.0))]),
            (Mechanism::Qemu, WaitMode::HostHaltPoll(w))
                if (w.start_ns - QEMU_START_NS).abs() < 0.5 && w.max_ns >= QEMU_START_NS =>
            {
                s(vec![
                    ("poll-max-ns", ns(w.max_ns)),
                    ("poll-grow", whole(w.grow)?),
                    ("poll-shrink", whole(w.shrink)?),
                ])
            }
            (Mechanism::VirtioNet, WaitMode::Notify) => {
                s(vec![("rx-frames", 0.into()), ("rx-usecs", 0.into())])
            }
            (Mechanism::VirtioNet, WaitMode::Coalesce { n, t_ns }) => s(vec![
                ("rx-frames", (*n).into()),
                ("rx-usecs", whole_us(*t_ns)?.into()),
            ]),
            (Mechanism::IoUring, WaitMode::Notify) => s(vec![("setup_flags", text("0"))]),
            (Mechanism::IoUring, WaitMode::Poll) => {
                s(vec![("setup_flags", text("IORING_SETUP_IOPOLL"))])
            }
            (Mechanism::IoUring, WaitMode::Hybrid(Estimator::Min)) => s(vec![(
                "setup_flags",
                text("IORING_SETUP_IOPOLL|IORING_SETUP_HYBRID_IOPOLL"),
            )]),
            _ => None,
        }
    }

    /// The commands that would apply `settings` (kicklab runs none of
    /// them): `IFACE`, `IOTHREAD` and `TAP` stand for the user's own
    /// names.
    pub fn commands(self, settings: &Settings) -> Vec<String> {
        let value = |name: &str| {
            settings
                .0
                .iter()
                .find(|(n, _)| *n == name)
                .map_or_else(String::new, |(_, v)| {
                    v.as_str().map_or_else(|| v.to_string(), str::to_string)
                })
        };
        let tee = |dir: &str| -> Vec<String> {
            settings
                .0
                .iter()
                .map(|(name, _)| format!("echo {} | sudo tee {dir}/{name}", value(name)))
                .collect()
        };
        match self {
            Mechanism::KvmHost => {
                let mut c = vec![
                    "# as shipped here is x86 from Linux 6.11 (other architectures and older kernels differ): grep . /sys/module/kvm/parameters/halt_poll_ns*"
                        .to_string(),
                ];
                c.extend(tee("/sys/module/kvm/parameters"));
                c.push(format!(
                    "# one VM only: ioctl(vm_fd, KVM_ENABLE_CAP, {{.cap = KVM_CAP_HALT_POLL, .args[0] = {}}}) (the window's maximum; grow and shrink stay the module's)",
                    value("halt_poll_ns")
                ));
                c
            }
            Mechanism::Guest => {
                let mut c = vec![
                    "# in the guest: sudo modprobe cpuidle-haltpoll force=1 (x86 loads it unforced only where the host sets KVM_HINTS_REALTIME); it turns the host's halt polling off for that vCPU"
                        .to_string(),
                ];
                c.extend(tee("/sys/module/haltpoll/parameters"));
                c
            }
            Mechanism::Napi => {
                let mut c = tee("/sys/class/net/IFACE");
                c.push(
                    "# with epoll busy polling (prefer_busy_poll through EPIOCSPARAMS, Linux 6.13), IRQs may also be suspended: ynl --do napi-set --json '{\"id\": NAPI_ID, \"irq-suspend-timeout\": NS}', NS the longest hold you can bear (not simulated)"
                        .to_string(),
                );
                c
            }
            Mechanism::Vhost => vec![
                format!(
                    "qemu-system-x86_64 ... -netdev tap,id=TAP,vhost=on,poll-us={}",
                    value("busyloop_timeout_us")
                ),
                "# (QEMU passes it to vhost-net with VHOST_SET_VRING_BUSYLOOP_TIMEOUT; its unit is 1024 ns)".to_string(),
            ],
            Mechanism::Qemu => {
                let props: Vec<String> = settings
                    .0
                    .iter()
                    .map(|(name, _)| format!("{name}={}", value(name)))
                    .collect();
                let mut c = vec![format!(
                    "qemu-system-x86_64 ... -object iothread,id=IOTHREAD,{}",
                    props.join(",")
                )];
                c.extend(
                    settings
                        .0
                        .iter()
                        .map(|(name, _)| format!("(qemu) qom-set /objects/IOTHREAD {name} {}", value(name))),
                );
                c
            }
            Mechanism::VirtioNet => vec![
                format!(
                    "sudo ethtool -C IFACE rx-frames {} rx-usecs {}   # in the guest",
                    value("rx-frames"),
                    value("rx-usecs")
                ),
                "# needs a device that offers VIRTIO_NET_F_NOTF_COAL (else EOPNOTSUPP); it holds the device's notifications to the guest (tx-frames / tx-usecs its tx completions), never the guest's kicks".to_string(),
            ],
            Mechanism::IoUring => {
                let flags = value("setup_flags");
                vec![format!(
                    "io_uring_queue_init(ENTRIES, &ring, {flags});   /* liburing; HYBRID_IOPOLL needs Linux 6.13 */"
                )]
            }
        }
    }

    /// Why it cannot run `pick` (a strategy of another family).
    pub fn cannot(self, pick: &WaitMode) -> String {
        let why = match pick {
            WaitMode::Adaptive { .. } => {
                "sizes its pauses from the ring's fill and the peer's pace, which no kernel or QEMU mechanism reads"
            }
            WaitMode::Sleep { .. } => "sleeps on a timer and never blocks; this mechanism blocks once its poll ends",
            WaitMode::Poll => "polls without end; this mechanism's poll is bounded",
            _ => "is another family's rule",
        };
        format!(
            "cannot run the pick: {pick} {why}; this is {}'s best ({} only)",
            self.name(),
            self.family()
        )
    }
}

/// QEMU's window: grows from 4 us by 2, shrinks to 0 (`poll-shrink` 0).
fn qemu_window(max_ns: f64) -> Window {
    Window {
        max_ns,
        grow: 2.0,
        start_ns: QEMU_START_NS,
        shrink: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_in_a_grid_reads_as_settings_and_its_default_is_in_it() {
        for m in ALL {
            let grid = m.grid();
            assert!(grid.contains(&m.default_mode()), "{}", m.name());
            for mode in grid {
                let s = m.settings(&mode);
                assert!(s.is_some(), "{} cannot read its own {mode}", m.name());
                assert!(!m.commands(&s.unwrap()).is_empty());
            }
        }
    }

    #[test]
    fn the_shipped_defaults_read_as_the_kernels_and_qemus_numbers() {
        let line = |m: Mechanism| m.settings(&m.default_mode()).unwrap().line();
        assert_eq!(
            line(Mechanism::KvmHost),
            "halt_poll_ns=200000 halt_poll_ns_grow=2 halt_poll_ns_grow_start=10000 halt_poll_ns_shrink=2"
        );
        assert_eq!(
            line(Mechanism::Guest),
            "guest_halt_poll_ns=200000 guest_halt_poll_grow=2 guest_halt_poll_grow_start=50000 \
             guest_halt_poll_shrink=2 guest_halt_poll_allow_shrink=Y"
        );
        assert_eq!(
            line(Mechanism::Qemu),
            "poll-max-ns=32768 poll-grow=2 poll-shrink=0"
        );
        assert_eq!(
            line(Mechanism::Napi),
            "napi_defer_hard_irqs=0 gro_flush_timeout=0"
        );
    }

    #[test]
    fn a_strategy_of_another_family_or_off_the_units_is_not_a_setting() {
        let parse = |s: &str| WaitMode::parse(s).unwrap();
        assert!(Mechanism::KvmHost.settings(&parse("sleep:20us")).is_none());
        assert!(Mechanism::KvmHost
            .settings(&parse("halt-poll:grow=1.5"))
            .is_none());
        assert!(Mechanism::Vhost.settings(&parse("spin:500ns")).is_none());
        assert!(Mechanism::VirtioNet
            .settings(&parse("coalesce:8,2500ns"))
            .is_none());
        assert!(Mechanism::Qemu.settings(&parse("halt-poll")).is_none());
        assert!(Mechanism::IoUring.settings(&parse("hybrid")).is_none());
        assert_eq!(
            Mechanism::Napi
                .settings(&parse("defer:timeout=50us,count=4"))
                .unwrap()
                .line(),
            "napi_defer_hard_irqs=4 gro_flush_timeout=50000"
        );
    }

    #[test]
    fn for_takes_names_all_or_none() {
        assert_eq!(Mechanism::parse("all").unwrap().0, ALL.to_vec());
        assert_eq!(Mechanism::parse("none").unwrap().0, vec![]);
        assert_eq!(
            Mechanism::parse("napi,kvm-host").unwrap().0,
            vec![Mechanism::Napi, Mechanism::KvmHost]
        );
        for bad in ["napi,kvm-host,napi", "all,none", "none,napi", "napi,all"] {
            assert!(Mechanism::parse(bad).is_err(), "{bad}");
        }
        let e = Mechanism::parse("napi,nap").unwrap_err();
        assert!(e.contains("kvm-host") && e.contains("all"), "{e}");
    }
}
