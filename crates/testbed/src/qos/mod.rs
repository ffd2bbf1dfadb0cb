//! Several VMs sharing one device, for real (Lakshmi and Nandy):
//! the system of `kicklab_model::qos` as threads over kicklab rings with
//! futex notifications.
//!
//! ```text
//!   device thread --ring--> shared stage thread --ring--> VM 1 stage thread
//!   (arrivals of every VM,   (backend or hypervisor:   \--ring--> VM 2 stage thread ...
//!    ingress policer)         busy work, post policer)
//! ```
//!
//! The device makes every VM's arrivals (evenly spaced, or Poisson) and
//! sleeps between them; a request over a VM's limit is dropped there when
//! limits are policed at ingress. The shared stage serves all VMs in
//! arrival order (FIFO), spends its service time as busy work, then polices
//! (post) and hands the request to its VM's stage, which spends the VM's
//! service time and completes it. Each ring holds `buffer` requests
//! waiting (drop-tail: a request that finds it full is dropped); a stage
//! takes a request off its ring before serving it, as the simulator's
//! stages do. A stage with nothing to do sleeps on its futex after
//! registering for a kick in the ring; a hand-off kicks it only then.
//!
//! Service times are busy work of the thread's own CPU time: a stage that
//! is preempted does not get its work done meanwhile (TSC spinning that
//! leaves out the gaps in which the thread did not run), so stages that
//! share CPUs share them as the model's CPU-bound stages would.
//!
//! Every request carries its VM and a sequence number: at the end each
//! VM's requests are accounted for (completed in order, or dropped at a
//! counted place); lost and duplicated ones are counted.
//!//!
//! What lives here: the run ([`run_qos`]) and a quick calibration of its
//! costs ([`calibrate_qos`]), in `config` (inputs, results, limits),
//! `stages` (what each thread does), `run` (starting, measuring, joining)
//! and `calibrate`. What does not: scaling the paper's times, the model,
//! printing (`kicklab-lab`, the binary).

mod calibrate;
mod config;
mod run;
pub(crate) mod stages;
#[cfg(test)]
mod tests;

pub use calibrate::*;
pub use config::*;
pub use run::*;
