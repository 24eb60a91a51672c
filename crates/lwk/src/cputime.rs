//! Where the LWK's threads spent the run (issue #13): the scheduler's own accounting of each
//! thread (`/proc/thread-self/schedstat`: time on a CPU, time runnable but waiting for one, time
//! slices), for the vCPU threads and the proxy, and how long the proxy polled and how long it
//! was parked. It separates the causes of an LWK run's extra wall time that no event count
//! shows: a vCPU that ran as long as the native program but waited for its CPU (other load on a
//! machine where the LWK occupies two CPUs and the native program one), a vCPU that ran longer
//! (its compute slowed, e.g. by the proxy polling on the sibling CPU), and the proxy's own
//! CPU time. `lwk run -v` prints it under `costs.threads`; `bench multiverse` models from it.

use std::sync::Mutex;
use std::time::Duration;

/// One thread's scheduler times (`/proc/thread-self/schedstat`), or their difference.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sched {
    /// On a CPU, seconds.
    pub run_s: f64,
    /// Runnable but waiting for a CPU (the run queue), seconds.
    pub wait_s: f64,
    /// Time slices (times the thread was put on a CPU).
    pub slices: u64,
    /// Host page faults the thread took (minor + major; KVM's faults on a vCPU thread that make
    /// the host allocate count too, as the faults of its `get_user_pages`).
    pub faults: u64,
}

impl Sched {
    /// The calling thread's times so far; zero when the kernel does not report them.
    pub fn this_thread() -> Sched {
        // Read at the start and end of the proxy and of every vCPU thread, beside the running
        // guest: the file's descriptor is a temporary in the guest's range (`sys::low_fds`).
        let faults = crate::sys::rusage_thread()
            .map(|ru| (ru.ru_minflt + ru.ru_majflt).max(0) as u64)
            .unwrap_or(0);
        let _low = crate::sys::low_fds();
        let s = crate::sys::open_proc("thread-self/schedstat", libc::O_RDONLY)
            .ok()
            .and_then(|fd| {
                use std::os::fd::FromRawFd;
                // SAFETY: `fd` was just opened and is owned by nobody else: the File closes it.
                let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
                crate::sys::widen_fd_race_for_tests();
                let mut t = String::new();
                std::io::Read::read_to_string(&mut f, &mut t).ok()?;
                Sched::parse(&t)
            })
            .unwrap_or_default();
        Sched { faults, ..s }
    }

    /// Parses a schedstat line: `run_ns wait_ns slices`.
    pub fn parse(text: &str) -> Option<Sched> {
        let mut it = text.split_whitespace().map(str::parse::<u64>);
        let (run, wait, slices) = (it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?);
        Some(Sched {
            run_s: run as f64 * 1e-9,
            wait_s: wait as f64 * 1e-9,
            slices,
            faults: 0,
        })
    }

    /// What happened since `earlier` (a reading of the same thread).
    pub fn since(self, earlier: Sched) -> Sched {
        Sched {
            run_s: (self.run_s - earlier.run_s).max(0.0),
            wait_s: (self.wait_s - earlier.wait_s).max(0.0),
            slices: self.slices.saturating_sub(earlier.slices),
            faults: self.faults.saturating_sub(earlier.faults),
        }
    }
}

/// The proxy's polling and parking, as its loop counted them.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProxyTime {
    /// Its life from its first poll to its stop, and the part of it spent parked.
    pub alive: Duration,
    pub parked: Duration,
    /// Times it parked, and times a doorbell woke it.
    pub parks: u64,
    pub wakes: u64,
    /// The longest it polled after a call before parking (`idlespin.rs`: grown by doorbells that
    /// came soon after a park).
    pub idle_peak: Duration,
    /// Its exits to the hypervisor while idle (`multios_host::hvexit`).
    pub hv_exits: u64,
    /// Its scheduler times over its life.
    pub sched: Sched,
}

/// The run's thread times, summed over its vCPU threads (`serde` for `--summary`).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Threads {
    /// vCPU threads: on a CPU and waiting for one, from their first guest entry to their end.
    pub vcpu_run_s: f64,
    pub vcpu_wait_s: f64,
    pub vcpu_slices: u64,
    /// Host page faults on the vCPU threads (KVM's faults that made the host allocate: the
    /// guest's first touches) and on the proxy (the delegated calls' own, and the pages it
    /// populated ahead: `populate.rs`), from their first guest entry / poll to their end.
    pub vcpu_faults: u64,
    pub proxy_faults: u64,
    /// The proxy: on a CPU, waiting for one, time slices.
    pub proxy_run_s: f64,
    pub proxy_wait_s: f64,
    pub proxy_slices: u64,
    /// The proxy's life split into polling (spinning or serving) and parked, its parks (a park
    /// that times out after 20 ms and parks again counts twice), and the doorbells that woke it.
    pub proxy_poll_s: f64,
    pub proxy_parked_s: f64,
    pub proxy_parks: u64,
    pub proxy_wakes: u64,
    /// The longest the proxy polled after a call before parking (`--proxy-idle-us`, grown up to
    /// 10 ms while the guest's calls came soon after parks).
    pub proxy_idle_peak_s: f64,
    /// The idle proxy's exits to the hypervisor, which let the guest's TLB-flush IPIs reach its
    /// CPU (`multios_host::hvexit`; `MULTIOS_HV_EXIT_US`).
    pub proxy_hv_exits: u64,
}

/// Collects the times of a run's threads as they end.
#[derive(Debug, Default)]
pub struct Collector(Mutex<Threads>);

impl Collector {
    /// Adds a vCPU thread's times (`since` its first guest entry).
    pub fn add_vcpu(&self, s: Sched) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        t.vcpu_run_s += s.run_s;
        t.vcpu_wait_s += s.wait_s;
        t.vcpu_slices += s.slices;
        t.vcpu_faults += s.faults;
    }

    /// Adds the proxy's times (at its end).
    pub fn add_proxy(&self, p: ProxyTime) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        t.proxy_run_s += p.sched.run_s;
        t.proxy_wait_s += p.sched.wait_s;
        t.proxy_slices += p.sched.slices;
        t.proxy_faults += p.sched.faults;
        t.proxy_poll_s += p.alive.saturating_sub(p.parked).as_secs_f64();
        t.proxy_parked_s += p.parked.as_secs_f64();
        t.proxy_parks += p.parks;
        t.proxy_wakes += p.wakes;
        t.proxy_idle_peak_s = t.proxy_idle_peak_s.max(p.idle_peak.as_secs_f64());
        t.proxy_hv_exits += p.hv_exits;
    }

    pub fn snapshot(&self) -> Threads {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_lines_parse_and_subtract() {
        let a = Sched::parse("1500000000 250000000 40\n").expect("parses");
        assert_eq!((a.run_s, a.wait_s, a.slices), (1.5, 0.25, 40));
        let b = Sched::parse("2000000000 250000000 50").expect("parses");
        let d = b.since(a);
        assert!((d.run_s - 0.5).abs() < 1e-12 && d.wait_s == 0.0 && d.slices == 10);
        assert!(Sched::parse("12 x 3").is_none() && Sched::parse("").is_none());
    }

    #[test]
    fn this_threads_times_grow_with_its_work() {
        // The VMM's procfs directory, which `run` opens first (`sys::open_proc` reads only it).
        crate::procfs::init().expect("procfs");
        let a = Sched::this_thread();
        let mut x = 1u64;
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let d = Sched::this_thread().since(a);
        // Linux reports schedstat on every kernel this project runs on: a zero is a failure.
        assert!(d.run_s > 0.0, "no schedstat from /proc/thread-self: {d:?}");
    }

    #[test]
    fn the_collector_sums_vcpus_and_splits_the_proxys_life() {
        let c = Collector::default();
        let s = Sched {
            run_s: 1.0,
            wait_s: 0.5,
            slices: 3,
            faults: 4,
        };
        c.add_vcpu(s);
        c.add_vcpu(s);
        c.add_proxy(ProxyTime {
            alive: Duration::from_secs(2),
            parked: Duration::from_millis(500),
            parks: 7,
            wakes: 5,
            idle_peak: Duration::from_millis(4),
            hv_exits: 9,
            sched: s,
        });
        let t = c.snapshot();
        assert_eq!((t.vcpu_run_s, t.vcpu_wait_s, t.vcpu_slices), (2.0, 1.0, 6));
        assert_eq!((t.vcpu_faults, t.proxy_faults), (8, 4));
        assert_eq!(
            (t.proxy_poll_s, t.proxy_parked_s, t.proxy_parks, t.proxy_wakes),
            (1.5, 0.5, 7, 5)
        );
        assert_eq!(t.proxy_idle_peak_s, 0.004);
        assert_eq!(t.proxy_hv_exits, 9);
    }
}
