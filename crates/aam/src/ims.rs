//! Inter-machine signaling (IMS): how a sender wakes a machine whose workers sleep.
//!
//! The protocol lives in `multios_aam_sync::parker` (checked by loom there): an idle worker
//! polls for its machine's configured spin time, then announces sleep, clears the "receiver is
//! polling" flag of every client queue when the machine's last poller leaves, fences, re-checks
//! every source of work and sleeps on its futex only if all were empty; a sender publishes its
//! request (a SeqCst fence after it), reads the queue's flag, and if clear wakes a sleeping
//! worker (`SLEEPING → NOTIFIED`, `FUTEX_WAKE`).
//!
//! The paper's Machine Manager performs this wake-up with a system call; here the sender does,
//! which is the same system call (`futex`) without the manager's bookkeeping. The manager's own
//! notifications (core moves) are machine signals, buffered and handled between tasks.

pub use multios_aam_sync::parker::{
    notify_unless_polling, sleep_unless, Parker, NOTIFIED, RUNNING, SLEEPING,
};
