//! Which CPUs take the machine's device interrupts (`/proc/interrupts`).
//!
//! The LWK keeps its CPUs for the application and leaves devices to Linux, as McKernel and mOS
//! do: on this VM an interrupt (or IPI) for a CPU that is busy running a thread is handled only
//! after ≈ 1–5 ms, so a block device whose completions land on the LWK's CPU — where the guest
//! spins in its stub while the proxy waits for the disk — made every `fdatasync` ≈ 1.2 ms
//! instead of ≈ 0.18 ms (docs/LWK.md, "The partition's CPUs"). Managed interrupts (virtio's
//! request queues) cannot be moved from user space, so the partition moves instead: Linux's CPU
//! (the proxy's) is the one that takes the most device interrupts.

/// Device interrupts taken so far by each CPU (index = CPU number), summed over the numbered
/// lines of `/proc/interrupts` (devices; not the per-CPU lines such as LOC, RES, TLB). Empty when
/// the file cannot be read or parsed.
pub fn device_interrupts_per_cpu() -> Vec<u64> {
    std::fs::read_to_string("/proc/interrupts")
        .map(|t| parse(&t))
        .unwrap_or_default()
}

/// [`device_interrupts_per_cpu`] of the text of `/proc/interrupts`.
pub fn parse(text: &str) -> Vec<u64> {
    let mut lines = text.lines();
    let Some(head) = lines.next() else {
        return Vec::new();
    };
    let cpus: Vec<usize> = head
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    let Some(&max) = cpus.iter().max() else {
        return Vec::new();
    };
    let mut per = vec![0u64; max + 1];
    for line in lines {
        let mut words = line.split_whitespace();
        let Some(label) = words.next() else { continue };
        if label.strip_suffix(':').is_none_or(|n| n.parse::<u32>().is_err()) {
            continue;
        }
        for (&cpu, w) in cpus.iter().zip(words) {
            match w.parse::<u64>() {
                Ok(n) => per[cpu] += n,
                Err(_) => break,
            }
        }
    }
    per
}

/// The CPU of `available` that took the most device interrupts (the first of them on a tie, or
/// when nothing is known).
pub fn busiest(available: &[usize], per_cpu: &[u64]) -> Option<usize> {
    let count = |c: usize| per_cpu.get(c).copied().unwrap_or(0);
    available
        .iter()
        .copied()
        .fold(None, |best: Option<usize>, c| match best {
            Some(b) if count(b) >= count(c) => Some(b),
            _ => Some(c),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "           CPU0       CPU1       \n\
  24:          1          0  IO-APIC   5-edge      ACPI:Ged\n\
  36:          0    1575168  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
  32:       6243          0  PCI-MSIX-0000:00:01.0   4-edge      virtio0-reporting_vq\n\
 NMI:          0          0   Non-maskable interrupts\n\
 LOC:   33456789   34567890   Local timer interrupts\n\
 TLB:     123456     234567   TLB shootdowns\n\
 ERR:          0\n";

    #[test]
    fn issue_15_device_interrupts_are_counted_per_cpu_without_the_per_cpu_lines() {
        assert_eq!(parse(TEXT), vec![6244, 1575168]);
        assert_eq!(parse(""), Vec::<u64>::new());
        assert_eq!(parse("garbage\n"), Vec::<u64>::new());
    }

    #[test]
    fn issue_15_the_busiest_cpu_is_the_one_with_most_device_interrupts() {
        assert_eq!(busiest(&[0, 1], &[6244, 1575168]), Some(1));
        assert_eq!(busiest(&[0], &[6244, 1575168]), Some(0));
        // A tie, or nothing known: the first.
        assert_eq!(busiest(&[0, 1, 2], &[5, 5, 0]), Some(0));
        assert_eq!(busiest(&[2, 3], &[]), Some(2));
        assert_eq!(busiest(&[], &[1]), None);
    }
}
