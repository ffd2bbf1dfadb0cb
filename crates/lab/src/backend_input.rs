//! Where a real pair runs as a user gives it ([`BackendInput`]): a backend
//! and the kvm backend's options, checked together (a kvm option beside
//! another backend would be ignored, so it is refused) and made into a
//! [`Backend`]. What does not live here: the backends (`kicklab_testbed`).

use std::time::Duration;

use kicklab_model::{CommandLine, Flag};
use kicklab_testbed::kvm::guest::GuestMode;
use kicklab_testbed::kvm::{Direction, KvmOptions};
use kicklab_testbed::Backend;

use crate::{Input, LabError};

/// Why this machine's KVM cannot run kicklab's guests, as one line; `None`
/// where it can.
#[must_use]
pub fn kvm_unusable() -> Option<String> {
    kicklab_testbed::kvm::available()
        .err()
        .map(|why| format!("kvm is not usable here: {why}"))
}

/// Refuses the kvm backend where this machine's KVM cannot run kicklab's
/// guests: the same reason in every command, whether the flag's parser or
/// the command's own check finds it.
///
/// # Errors
///
/// [`LabError::Input`] ([`Input::Kvm`]) with the reason.
pub fn kvm_usable() -> Result<(), LabError> {
    match kvm_unusable() {
        Some(why) => Err(LabError::input(Input::Kvm, why)),
        None => Ok(()),
    }
}

/// A backend and the kvm options, as given (`None`: not given; the
/// default, tx, no halt polling and a user-mode guest, holds).
#[derive(Clone, Copy, Debug)]
pub struct BackendInput {
    /// The backend.
    pub backend: Backend,
    /// kvm: which side the guest is.
    pub direction: Option<Direction>,
    /// kvm: host halt polling.
    pub halt_poll: Option<Duration>,
    /// kvm: how the guest runs.
    pub guest: Option<GuestMode>,
}

impl BackendInput {
    /// Refuses a kvm option given with another backend, its default
    /// value too (it would be ignored).
    ///
    /// # Errors
    ///
    /// [`LabError::Input`] naming the option.
    pub fn check(&self) -> Result<(), LabError> {
        if matches!(self.backend, Backend::Kvm(_)) {
            return Ok(());
        }
        let given = [
            (Input::Direction, self.direction.is_some()),
            (Input::HaltPoll, self.halt_poll.is_some()),
            (Input::Guest, self.guest.is_some()),
        ];
        match given.iter().find(|(_, g)| *g) {
            Some(&(input, _)) => Err(LabError::input(
                input,
                format!(
                    "a kvm option; {} {} has no guest",
                    Flag::Backend,
                    self.backend.name()
                ),
            )),
            None => Ok(()),
        }
    }

    /// The backend with its options.
    #[must_use]
    pub fn get(&self) -> Backend {
        match self.backend {
            Backend::Kvm(_) => Backend::Kvm(KvmOptions {
                direction: self.direction(),
                halt_poll_ns: u32::try_from(self.halt_poll().as_nanos()).unwrap_or(u32::MAX),
                guest: self.guest(),
            }),
            other => other,
        }
    }

    fn direction(&self) -> Direction {
        self.direction.unwrap_or(Direction::Tx)
    }

    fn halt_poll(&self) -> Duration {
        self.halt_poll.unwrap_or(Duration::ZERO)
    }

    fn guest(&self) -> GuestMode {
        self.guest.unwrap_or(GuestMode::User)
    }

    /// `command` with this backend and the kvm options that differ from
    /// the defaults (a "reproduce" line).
    #[must_use]
    pub fn command_line(&self, command: &str) -> CommandLine {
        let kvm = matches!(self.backend, Backend::Kvm(_));
        let (direction, guest, halt_poll) = (self.direction(), self.guest(), self.halt_poll());
        CommandLine::new(command)
            .arg(Flag::Backend, self.backend.name())
            .arg_some(
                Flag::Direction,
                (kvm && direction != Direction::Tx).then(|| direction.name()),
            )
            .arg_some(
                Flag::Guest,
                (kvm && guest != GuestMode::User).then(|| guest.name()),
            )
            .arg_some(
                Flag::HaltPoll,
                (kvm && !halt_poll.is_zero())
                    .then(|| kicklab_model::fmt_ns(halt_poll.as_secs_f64() * 1e9)),
            )
    }
}
