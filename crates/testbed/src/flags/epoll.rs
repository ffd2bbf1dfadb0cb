//! One epoll instance over many sources, shared by the threads' and the
//! guest's consumer.

use std::os::fd::OwnedFd;

use rustix::event::epoll;

use crate::TestbedError;

/// An epoll instance watching each of `fds` for input, its index as the
/// event's data.
///
/// # Errors
///
/// The system calls failed.
pub(crate) fn epoll_over<F: std::os::fd::AsFd>(
    fds: impl Iterator<Item = F>,
) -> Result<OwnedFd, TestbedError> {
    let ep = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(std::io::Error::from)?;
    for (i, fd) in fds.enumerate() {
        epoll::add(
            &ep,
            fd,
            epoll::EventData::new_u64(i as u64),
            epoll::EventFlags::IN,
        )
        .map_err(std::io::Error::from)?;
    }
    Ok(ep)
}
