//! The lab's integration tests, one binary (each is linked whole: one
//! link instead of four): the controller's targets in the simulator
//! (`control`), recorded control studies replayed (`control_replay`), the
//! several-VM targets in the model and the simulator (`qos`), and recorded
//! validations replayed (`replay`). Nothing here times anything.

mod control;
mod control_replay;
mod qos;
mod replay;
