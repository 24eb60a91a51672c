//! A worker's scheduling loop: what it runs next, how it idles and sleeps, and how it leaves
//! and regains its core (see the module comment of [`crate::machine`] for the pick order).
//!
//! An idle worker spins, then either sleeps or — when a machine of its Machine Manager waits for
//! its CPU — hands the CPU over (`multios_aam_sync::activation::sleep_or_hand_over`). In a machine
//! with several workers, a worker counts itself in the machine's `idle_pollers` while it spins,
//! and leaves the count before it runs what it found: a sender that finds the count zero knows no
//! worker will take its request soon and signals (a sleeping worker then takes it).

use crate::domain;
use crate::machine::{lock, Shared, WorkerCtx, CURRENT};
use crate::serve::Served;
use crate::task::TaskRef;
use crate::trace::EventKind;
use crossbeam_deque::Steal;
use multios_aam_sync::activation::{self, Idle};
use multios_host::tsc;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

fn steal_injector(ctx: &WorkerCtx) -> Option<TaskRef> {
    // Cheap test first: a steal attempt on an empty queue costs a SeqCst fence.
    if ctx.shared.injector.is_empty() {
        return None;
    }
    loop {
        match ctx.shared.injector.steal_batch_and_pop(&ctx.local) {
            Steal::Success(t) => return Some(t),
            Steal::Empty => return None,
            Steal::Retry => continue,
        }
    }
}

struct Cursor {
    tick: u32,
    queues: Vec<Arc<dyn Served>>,
    version: usize,
    next_queue: usize,
}

impl Cursor {
    fn refresh(&mut self, shared: &Shared) {
        let v = shared.served_version.load(Ordering::Acquire);
        if v != self.version {
            self.queues = lock(&shared.served).clone();
            self.version = v;
        }
    }
}

/// Runs the next piece of work in the pick order: a ready task, else up to the machine's batch
/// of requests from the next client queue that has one (run inline, see `serve`). False if
/// there was nothing.
fn step(ctx: &WorkerCtx, cur: &mut Cursor) -> bool {
    // Every 61st pick looks at the inject queue first, so remote wake-ups are not starved.
    cur.tick = if cur.tick == 0 { 60 } else { cur.tick - 1 };
    if cur.tick == 0 {
        if let Some(t) = steal_injector(ctx) {
            run_task(ctx, t);
            return true;
        }
    }
    if let Some(t) = ctx.local.pop().or_else(|| steal_injector(ctx)) {
        run_task(ctx, t);
        return true;
    }
    let shared = &ctx.shared;
    if shared.stealing {
        for (i, s) in shared.stealers.iter().enumerate() {
            if i == ctx.index {
                continue;
            }
            loop {
                match s.steal_batch_and_pop(&ctx.local) {
                    Steal::Success(t) => {
                        run_task(ctx, t);
                        return true;
                    }
                    Steal::Empty => break,
                    Steal::Retry => continue,
                }
            }
        }
    }
    cur.refresh(shared);
    let n = cur.queues.len();
    for i in 0..n {
        let k = (cur.next_queue + i) % n;
        if run_requests(ctx, &*cur.queues[k]) {
            cur.next_queue = (k + 1) % n;
            return true;
        }
    }
    false
}

/// One visit of a client queue: up to `batch` requests back to back (FlexSC-style), stopping
/// early for a machine signal or a stop.
fn run_requests(ctx: &WorkerCtx, q: &dyn Served) -> bool {
    let shared = &ctx.shared;
    let trace = shared.traces.get(ctx.index);
    if ctx.idle.get() {
        if !q.has_takeable() {
            return false;
        }
        leave_idle(ctx);
    }
    if !q.run_one(shared, trace) {
        return false;
    }
    let mut n = 1u64;
    while (n as usize) < shared.batch
        && !shared.signals_pending.load(Ordering::Relaxed)
        && !shared.stopped.load(Ordering::Relaxed)
        && q.run_one(shared, trace)
    {
        n += 1;
    }
    let c = &shared.worker_counters[ctx.index];
    c.batches
        .store(c.batches.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    c.requests
        .store(c.requests.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    if q.is_closed() {
        shared.sweep_closed();
    }
    true
}

/// The worker starts spinning idle (counted only in machines with several workers).
fn enter_idle(ctx: &WorkerCtx) {
    if *ctx.shared.multi_worker {
        ctx.idle.set(true);
        ctx.shared.idle_pollers.fetch_add(1, Ordering::SeqCst);
    }
}

/// The worker found work (or stops spinning): it no longer counts as idle.
fn leave_idle(ctx: &WorkerCtx) {
    if ctx.idle.get() {
        ctx.idle.set(false);
        ctx.shared.idle_pollers.fetch_sub(1, Ordering::SeqCst);
    }
}

fn has_work(ctx: &WorkerCtx, cur: &mut Cursor) -> bool {
    let shared = &ctx.shared;
    cur.refresh(shared);
    !ctx.local.is_empty()
        || !shared.injector.is_empty()
        || (shared.stealing && shared.stealers.iter().any(|s| !s.is_empty()))
        || cur.queues.iter().any(|q| q.has_takeable())
        || shared.signals_pending.load(Ordering::SeqCst)
        || shared.stopped.load(Ordering::SeqCst)
        || !shared.active[ctx.index].load(Ordering::SeqCst)
        || shared.grants[ctx.index].load(Ordering::SeqCst) != shared.acks[ctx.index].load(Ordering::SeqCst)
}

pub(crate) fn worker_loop(ctx: &WorkerCtx) {
    let shared = &ctx.shared;
    let mut cur = Cursor {
        tick: 0,
        queues: Vec::new(),
        version: usize::MAX,
        next_queue: 0,
    };
    let mut acked = 0u64;
    let index = ctx.index;
    'serve: loop {
        if shared.signals_pending.load(Ordering::Relaxed) {
            shared.handle_signals();
        }
        if shared.stopped.load(Ordering::Relaxed) {
            break;
        }
        if !shared.active[ctx.index].load(Ordering::Relaxed) {
            dormant(ctx);
            continue;
        }
        let grant = shared.grants[index].load(Ordering::Relaxed);
        if grant != acked {
            acked = grant;
            shared.acks[index].store(grant, Ordering::SeqCst);
            domain::complete_move(shared, index);
        }
        if step(ctx, &mut cur) {
            continue;
        }
        let start = tsc::now();
        enter_idle(ctx);
        let mut round = 0u32;
        loop {
            std::hint::spin_loop();
            if shared.signals_pending.load(Ordering::Relaxed) || shared.stopped.load(Ordering::Relaxed) {
                leave_idle(ctx);
                continue 'serve;
            }
            if step(ctx, &mut cur) {
                leave_idle(ctx);
                continue 'serve;
            }
            // A machine waits for this CPU: stop spinning, hand it over (in `sleep`).
            if ctx.wanted.load(Ordering::Relaxed) > 0 {
                break;
            }
            // The clock is read every 16th round only: a round is the idle worker's reaction
            // time to a request, and `rdtsc` is a good part of it. A machine that does not spin
            // (`idle_spin(ZERO)`) still goes to sleep after its first round.
            round = round.wrapping_add(1);
            if (shared.spin_ticks == 0 || round.is_multiple_of(16))
                && tsc::now().wrapping_sub(start) >= shared.spin_ticks
            {
                break;
            }
        }
        leave_idle(ctx);
        sleep(ctx, &mut cur);
    }
    while let Some(t) = ctx.local.pop() {
        t.cancel();
    }
}

/// Whether work is queued for the machine (ready tasks or requests a worker could take).
fn queued_work(shared: &Shared) -> bool {
    !shared.injector.is_empty() || lock(&shared.served).iter().any(|q| q.has_takeable())
}

/// The worker's core was taken from the machine: hand its ready tasks to the machine's other
/// workers, stop counting as a poller, and sleep until the core is given back (or the machine
/// stops). If work is queued, the machine is activated (a sibling that holds a core is woken, or
/// the manager is asked for a core): a sender may have skipped IMS while this worker still
/// counted as polling, and a wake-up meant for the machine may land here.
fn dormant(ctx: &WorkerCtx) {
    let shared = &ctx.shared;
    let start = tsc::now();
    if let Some(ring) = shared.traces.get(ctx.index) {
        ring.mark(EventKind::Switch, "machine switch: left");
    }
    while let Some(t) = ctx.local.pop() {
        shared.injector.push(t);
    }
    shared.set_polling(false);
    shared.serving[ctx.index].store(false, Ordering::SeqCst);
    activation::dormant_until(&shared.parkers[ctx.index], || {
        if shared.active[ctx.index].load(Ordering::SeqCst) || shared.stopped.load(Ordering::SeqCst) {
            return true;
        }
        if queued_work(shared) {
            domain::activate(shared);
        }
        false
    });
    if let Some(ring) = shared.traces.get(ctx.index) {
        ring.record(EventKind::Dormant, "no core", start);
        if !shared.stopped.load(Ordering::SeqCst) {
            ring.mark(EventKind::Switch, "machine switch: entered");
        }
    }
    shared.serving[ctx.index].store(true, Ordering::SeqCst);
    shared.set_polling(true);
}

fn run_task(ctx: &WorkerCtx, t: TaskRef) {
    leave_idle(ctx);
    let c = &ctx.shared.worker_counters[ctx.index];
    c.tasks_run
        .store(c.tasks_run.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    match ctx.shared.traces.get(ctx.index) {
        None => t.run(),
        Some(ring) => {
            let name = t.name();
            let start = tsc::now();
            t.run();
            ring.record(EventKind::Task, name, start);
        }
    }
}

/// The receiver side of IMS: announce sleep, re-check every source of work, then hand the CPU
/// to a machine waiting for it, or sleep unless something arrived (see [`crate::ims`] and
/// `multios_aam_sync::activation` for why no wake-up or activation is lost).
fn sleep(ctx: &WorkerCtx, cur: &mut Cursor) {
    let shared = &ctx.shared;
    if cur.queues.iter().any(|q| q.is_closed()) {
        shared.sweep_closed();
    }
    let start = tsc::now();
    let idle = activation::sleep_or_hand_over(
        &shared.parkers[ctx.index],
        || shared.set_polling(false),
        || has_work(ctx, cur),
        || ctx.wanted.load(Ordering::SeqCst) > 0,
        || {
            shared
                .membership()
                .is_some_and(|m| m.domain.hand_over(shared, ctx.index))
        },
        || shared.set_polling(true),
    );
    if idle == Idle::Slept {
        let c = &shared.worker_counters[ctx.index];
        c.sleeps
            .store(c.sleeps.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        if let Some(ring) = shared.traces.get(ctx.index) {
            ring.record(EventKind::Sleep, "sleep", start);
        }
    }
}

/// The client side of an active machine call: the task awaiting a result polls `done` (a read
/// of the result's own slot) while its worker has nothing else to run, for at most the
/// machine's call spin. Returns whether `done` became true. While it polls, the result needs no
/// wake-up: the server's completion finds no registered waker, so the client task is not pushed
/// through the inject queue and the call costs the request's lines and the result's line.
/// Anything else for this worker (a ready task, a remote wake-up, a signal, a request for this
/// machine, a stop, losing the core) ends the poll; the caller then registers its waker as
/// usual, so nothing is lost.
pub(crate) fn poll_result(mut done: impl FnMut() -> bool) -> bool {
    CURRENT
        .try_with(|c| {
            let Ok(b) = c.try_borrow() else { return false };
            let Some(ctx) = b.as_ref() else { return false };
            let s = &ctx.shared;
            if s.call_spin_ticks == 0 {
                return false;
            }
            let start = tsc::now();
            let mut round = 0u32;
            loop {
                if done() {
                    return true;
                }
                if !ctx.local.is_empty()
                    || !s.injector.is_empty()
                    || s.signals_pending.load(Ordering::Relaxed)
                    || s.stopped.load(Ordering::Relaxed)
                    || !s.active[ctx.index].load(Ordering::Relaxed)
                {
                    return false;
                }
                round = round.wrapping_add(1);
                if round.is_multiple_of(64) {
                    if lock(&s.served).iter().any(|q| q.has_takeable()) {
                        return false;
                    }
                    if tsc::now().wrapping_sub(start) >= s.call_spin_ticks {
                        return false;
                    }
                }
                std::hint::spin_loop();
            }
        })
        .unwrap_or(false)
}

/// Runs `f`, a call that may block its thread (a system call waiting for a peer), with the
/// current worker counted as not polling: its machine's clients then signal (IMS) instead of
/// relying on this worker, and a sleeping sibling is woken if work is already queued. Without
/// this a worker blocked in `accept` or `recv` would still count as the machine's poller and
/// requests queued behind it would wait for it.
pub(crate) fn blocking<R>(f: impl FnOnce() -> R) -> R {
    let shared = CURRENT
        .try_with(|c| {
            c.try_borrow()
                .ok()
                .and_then(|b| b.as_ref().map(|ctx| ctx.shared.clone()))
        })
        .ok()
        .flatten();
    let Some(shared) = shared else { return f() };
    shared.set_polling(false);
    fence(Ordering::SeqCst);
    if queued_work(&shared) {
        domain::activate(&shared);
    }
    let r = f();
    shared.set_polling(true);
    r
}
