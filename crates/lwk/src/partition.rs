//! The LWK partition chosen from `--cpus` and `--proxy-cpu`: which CPUs run the guest's vCPUs and
//! which one the proxy (Linux's side) polls on. CPUs must be available to this process.

use crate::config::{partition_by_interrupts, Backend, Config};
use multios_host::cpus::format_list;
use multios_host::{CpuListError, CpuSet};

/// A `--cpus` or `--proxy-cpu` value the partition cannot use.
#[derive(Debug, thiserror::Error)]
pub enum PartitionError {
    #[error("--cpus: {source}")]
    List { source: CpuListError },
    #[error("{flag}: CPU {cpu} is not available to this process (available: {available}); pick CPUs from that list")]
    Unavailable {
        flag: &'static str,
        cpu: usize,
        available: String,
    },
}

/// Where the LWK's vCPUs and the proxy run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// The LWK's CPUs in vCPU order (vCPU k runs on `cpus[k % len]`).
    pub cpus: Vec<usize>,
    /// The proxy thread's CPU.
    pub proxy: Option<usize>,
    /// The proxy's CPU when it is the LWK's only CPU too (the exit backend is then preferable).
    pub shared: Option<usize>,
    /// The proxy's CPU when it is also one of several LWK CPUs: it was moved last, so vCPU 0
    /// (the main thread) gets a CPU of its own, and threads placed there compete with the proxy.
    pub doubled: Option<usize>,
}

impl Partition {
    /// Chooses the partition among `available` CPUs. `cpus` is `--cpus` (a CPU list; default:
    /// every available CPU but Linux's, the one that takes the most device interrupts), `proxy`
    /// is `--proxy-cpu` (default: the first available CPU that is not the LWK's, else Linux's).
    pub fn choose(
        available: &[usize],
        cpus: Option<&str>,
        proxy: Option<usize>,
    ) -> Result<Partition, PartitionError> {
        let irqs = multios_host::irqs::device_interrupts_per_cpu();
        Self::choose_with(available, cpus, proxy, &irqs)
    }

    /// [`Self::choose`] with the device interrupts each CPU took (index = CPU).
    pub fn choose_with(
        available: &[usize],
        cpus: Option<&str>,
        proxy: Option<usize>,
        irqs: &[u64],
    ) -> Result<Partition, PartitionError> {
        let check = |flag: &'static str, cpu: usize| {
            if available.contains(&cpu) {
                Ok(())
            } else {
                Err(PartitionError::Unavailable {
                    flag,
                    cpu,
                    available: format_list(available),
                })
            }
        };
        let (default_proxy, default_cpus) = partition_by_interrupts(available, irqs);
        let mut lwk = match cpus {
            Some(text) => {
                let v = CpuSet::parse(text)
                    .map_err(|source| PartitionError::List { source })?
                    .to_vec();
                for &c in &v {
                    check("--cpus", c)?;
                }
                v
            }
            None => default_cpus,
        };
        let proxy = match proxy {
            Some(c) => {
                check("--proxy-cpu", c)?;
                Some(c)
            }
            None if cpus.is_some() => available
                .iter()
                .copied()
                .find(|c| !lwk.contains(c))
                .or(default_proxy),
            None => default_proxy,
        };
        let (mut shared, mut doubled) = (None, None);
        if let Some(p) = proxy.filter(|p| lwk.contains(p)) {
            if lwk.len() == 1 {
                shared = Some(p);
            } else {
                lwk.retain(|&c| c != p);
                lwk.push(p);
                doubled = Some(p);
            }
        }
        Ok(Partition {
            cpus: lwk,
            proxy,
            shared,
            doubled,
        })
    }

    /// Puts the partition into `cfg`: its CPUs, and the ring backend with the proxy's CPU.
    pub fn apply(&self, cfg: &mut Config) {
        cfg.cpus = self.cpus.clone();
        cfg.backend = Backend::Ring {
            proxy_cpu: self.proxy,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_linux_keeps_the_cpu_that_takes_the_device_interrupts() {
        // The block device's completions land on CPU 1 (this VM): the proxy gets it.
        let p = Partition::choose_with(&[0, 1], None, None, &[6244, 1_575_168]).expect("default");
        assert_eq!((p.proxy, p.cpus.clone()), (Some(1), vec![0]));
        let p = Partition::choose_with(&[0, 1, 2, 3], None, None, &[0, 10, 900, 10]).expect("default");
        assert_eq!((p.proxy, p.cpus.clone()), (Some(2), vec![0, 1, 3]));
        // --cpus names the LWK's CPUs: the proxy takes another one, as before.
        let p = Partition::choose_with(&[0, 1], Some("1"), None, &[0, 99]).expect("--cpus 1");
        assert_eq!((p.proxy, p.cpus), (Some(0), vec![1]));
    }

    #[test]
    fn issue_17_default_gives_the_first_cpu_to_the_proxy() {
        let p = Partition::choose_with(&[0, 1, 2, 3], None, None, &[]).expect("default");
        assert_eq!(p.cpus, vec![1, 2, 3]);
        assert_eq!(p.proxy, Some(0));
        assert_eq!((p.shared, p.doubled), (None, None));
    }

    #[test]
    fn issue_17_a_single_cpu_is_shared() {
        let p = Partition::choose_with(&[5], None, None, &[]).expect("one CPU");
        assert_eq!(p.cpus, vec![5]);
        assert_eq!(p.proxy, Some(5));
        assert_eq!(p.shared, Some(5));
    }

    #[test]
    fn issue_17_listed_cpus_leave_the_proxy_the_first_other_cpu() {
        let p = Partition::choose_with(&[0, 1, 2, 3], Some("0-1"), None, &[]).expect("--cpus 0-1");
        assert_eq!(p.cpus, vec![0, 1]);
        assert_eq!(p.proxy, Some(2));
        assert_eq!((p.shared, p.doubled), (None, None));
    }

    #[test]
    fn issue_17_all_cpus_listed_fall_back_to_the_default_proxy() {
        let p = Partition::choose_with(&[0, 1], Some("0,1"), None, &[]).expect("--cpus 0,1");
        // The proxy (CPU 0) goes last so vCPU 0 has a CPU of its own.
        assert_eq!(p.cpus, vec![1, 0]);
        assert_eq!(p.proxy, Some(0));
        assert_eq!(p.doubled, Some(0));
        assert_eq!(p.shared, None);
    }

    #[test]
    fn issue_17_proxy_on_the_only_lwk_cpu_is_shared() {
        let p = Partition::choose_with(&[0, 1], Some("1"), Some(1), &[]).expect("--cpus 1 --proxy-cpu 1");
        assert_eq!(p.cpus, vec![1]);
        assert_eq!(p.shared, Some(1));
    }

    #[test]
    fn issue_17_unavailable_cpus_name_the_flag() {
        let e = Partition::choose_with(&[0, 1], Some("0-2"), None, &[]).expect_err("CPU 2");
        assert_eq!(
            e.to_string(),
            "--cpus: CPU 2 is not available to this process (available: 0-1); pick CPUs from that list"
        );
        let e = Partition::choose_with(&[0, 1], None, Some(7), &[]).expect_err("CPU 7");
        assert!(e.to_string().starts_with("--proxy-cpu: CPU 7 "), "{e}");
    }

    #[test]
    fn issue_17_a_bad_list_names_the_flag_and_the_text() {
        let e = Partition::choose_with(&[0, 1], Some("x"), None, &[]).expect_err("syntax");
        assert!(e.to_string().starts_with("--cpus: CPU list 'x'"), "{e}");
        let e = Partition::choose_with(&[0, 1], Some(""), None, &[]).expect_err("empty");
        assert_eq!(
            e.to_string(),
            "--cpus: the CPU list is empty (write e.g. 0, 2-3 or 0,2-3)"
        );
    }

    #[test]
    fn issue_17_apply_sets_cpus_and_ring_backend() {
        let p = Partition::choose_with(&[0, 1, 2], None, None, &[]).expect("default");
        let mut cfg = Config::new("/bin/true", &[]);
        p.apply(&mut cfg);
        assert_eq!(cfg.cpus, vec![1, 2]);
        assert_eq!(cfg.backend, Backend::Ring { proxy_cpu: Some(0) });
    }
}
