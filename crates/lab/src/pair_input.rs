//! A pair as a user gives it: the parameter values given ([`GivenParams`])
//! and the calibration profile named, if any ([`PairInput`]), made into
//! the validated [`Params`] of a model, a simulation or a real run, and
//! the profile file read with care ([`read_profile`]). Errors name the
//! input at fault: a parameter, or the profile. What does not live here:
//! the defaults and the rules of the parameters (`kicklab_model`).

use std::path::{Path, PathBuf};

use kicklab_model::{GivenParams, Params, Profile};

use crate::{Input, LabError};

/// The largest profile file read.
const MAX_PROFILE_BYTES: u64 = 16 << 20;

/// The parameters given and the profile named.
#[derive(Clone, Debug)]
pub struct PairInput {
    /// The values given (the defaults where none was).
    pub given: GivenParams,
    /// The calibration profile named, if any.
    pub profile: Option<PathBuf>,
}

impl PairInput {
    /// The profile named, if any ([`read_profile`]).
    ///
    /// # Errors
    ///
    /// [`Input::Profile`]: it cannot be read or is not a profile.
    pub fn load_profile(&self) -> Result<Option<Profile>, LabError> {
        self.profile.as_deref().map(read_profile).transpose()
    }

    /// The parameters of a real run: L, k and W as given (W is what the
    /// parties spin; the ring's own cost per message comes on top by
    /// itself), N, V and S from the profile (means) where not given.
    ///
    /// # Errors
    ///
    /// The parameter, or the profile, at fault.
    pub fn params(&self) -> Result<Params, LabError> {
        self.params_from(self.load_profile()?.as_ref())
    }

    /// [`PairInput::params`] with `profile`'s costs, whether or not it
    /// was named (a real run calibrates when none is).
    ///
    /// # Errors
    ///
    /// The parameter, or the profile, at fault.
    pub fn params_from(&self, profile: Option<&Profile>) -> Result<Params, LabError> {
        self.build(profile, |f, p| f.apply_costs(p, false))
    }

    /// The parameters for the model (`spread` false: the profile's means)
    /// or the simulator (`spread`: distributions with the measured
    /// spread): with a profile, its N, V and S, and W plus the ring's cost
    /// per message that the profile measured, as measured with the peer
    /// asleep for a pair whose parties both wait by `notify`
    /// (`Profile::apply_notify`), else the polling pair's
    /// (`Profile::apply`).
    ///
    /// # Errors
    ///
    /// The parameter, or the profile, at fault.
    pub fn params_for(
        &self,
        profile: Option<&Profile>,
        spread: bool,
        notify: bool,
    ) -> Result<Params, LabError> {
        if notify {
            self.build(profile, |f, p| f.apply_notify(p, spread))
        } else {
            self.build(profile, |f, p| f.apply(p, spread))
        }
    }

    fn build(
        &self,
        profile: Option<&Profile>,
        apply: impl Fn(&Profile, &mut Params),
    ) -> Result<Params, LabError> {
        self.given.build(profile, apply).map_err(|e| {
            match profile.and(self.given.profile_at_fault(&e)) {
                Some(why) => LabError::input(Input::Profile, why),
                None => LabError::Param(e),
            }
        })
    }
}

/// The calibration profile at `path`: a regular file, read up to a bound
/// (a FIFO would block for ever, in the open itself, so it is looked at
/// first and opened without blocking; /dev/zero never ends), parsed and
/// checked.
///
/// # Errors
///
/// [`Input::Profile`]: it cannot be read, or is not a sound profile.
pub fn read_profile(path: &Path) -> Result<Profile, LabError> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let bad = |why: String| LabError::input(Input::Profile, why);
    let cannot = |e: &dyn std::fmt::Display| bad(format!("cannot read {}: {e}", path.display()));
    if !std::fs::metadata(path).map_err(|e| cannot(&e))?.is_file() {
        return Err(cannot(&"not a regular file"));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| cannot(&e))?;
    if !file.metadata().map_err(|e| cannot(&e))?.is_file() {
        return Err(cannot(&"not a regular file"));
    }
    let mut text = String::new();
    file.take(MAX_PROFILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| cannot(&e))?;
    if text.len() as u64 > MAX_PROFILE_BYTES {
        return Err(cannot(&format_args!(
            "larger than {} MiB (a profile is tens of KiB)",
            MAX_PROFILE_BYTES >> 20
        )));
    }
    let profile: Profile = serde_json::from_str(&text)
        .map_err(|e| bad(format!("{} is not a kicklab profile: {e}", path.display())))?;
    profile
        .check()
        .map_err(|e| bad(format!("{}: {e}", path.display())))?;
    Ok(profile)
}
