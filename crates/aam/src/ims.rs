//! Inter-machine signaling (IMS): how a sender reaches a machine whose workers sleep, or that
//! holds no core at all.
//!
//! IMS is a synchronous call into the Machine Manager made by the sender, on the sender's thread
//! (the paper's system call, §3.3: no thread in between). A sender publishes its request or task
//! (a SeqCst fence after it), reads the queue's "receiver is polling" flag (and, for a machine
//! with several workers, whether any is idle), and if no worker will pick the work up it calls
//! the manager (`domain::ims`), which
//!
//! 1. stores a machine signal in the destination's buffer (`MachineSignal::Messages`, coalesced,
//!    handled between two tasks), and
//! 2. activates the destination: wakes one of its sleeping workers that holds its core
//!    (`SLEEPING → NOTIFIED`, `FUTEX_WAKE`); or, if the machine holds no core at that moment and
//!    belongs to a [`MachineManager`](crate::manager::MachineManager) with a moving policy,
//!    grants it one — a CPU no machine holds, or one whose holder's worker sleeps — or queues
//!    it for the next holder whose worker runs out of work (that worker hands its CPU over
//!    instead of sleeping) or for the policy's next period.
//!
//! The sleep/wake protocol lives in `multios_aam_sync::parker` and the grant/hand-over handshake
//! in `multios_aam_sync::activation` (both checked by loom there): an idle worker polls for its
//! machine's configured spin time, then announces sleep, clears the "receiver is polling" flag of
//! every client queue when the machine's last poller leaves, fences, re-checks every source of
//! work, hands its CPU to a waiting machine if one wants it, and sleeps on its futex only if
//! nothing arrived.

pub use multios_aam_sync::parker::{
    notify_unless_polling, sleep_unless, Parker, NOTIFIED, RUNNING, SLEEPING,
};
