//! The thread backend's integration tests, one binary (each is linked
//! whole: one link instead of four): in-run costs (`in_run`), hardening
//! and limits (`limits`), several VMs sharing a device (`qos`), long runs
//! with sequence numbers (`stress`). The KVM backend's are a binary of
//! their own (`tests/kvm.rs`): its resource checks count the process's
//! threads and file descriptors.

mod in_run;
mod limits;
mod qos;
mod stress;
