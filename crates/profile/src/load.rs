//! Reading, validating and writing profile files.

use crate::error::ProfileError;
use crate::format::{Profile, SCHEMA_VERSION};
use std::path::Path;

/// The largest profile file read: far above any real profile (a merged profile of thousands of ranks is a
/// few MiB), small enough that a mistaken `--profile /dev/zero` or a huge file stops at once.
pub const MAX_PROFILE_BYTES: u64 = 64 << 20;

/// Reads and validates the profile at `path` (at most [`MAX_PROFILE_BYTES`]; a pipe or device is read up to
/// that bound).
pub fn load(path: &Path) -> Result<Profile, ProfileError> {
    let text = read_bounded(path)?;
    from_json_str(&path.display().to_string(), &text)
}

/// Reads the text file at `path` (a profile, or a `strace -c` summary to import), refusing more than
/// [`MAX_PROFILE_BYTES`] with an error naming the file instead of growing without bound.
pub fn read_bounded(path: &Path) -> Result<String, ProfileError> {
    use std::io::Read;
    let read_err = |source| ProfileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let too_large = || ProfileError::TooLarge {
        path: path.to_path_buf(),
        max_mib: MAX_PROFILE_BYTES >> 20,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let meta = file.metadata().map_err(read_err)?;
    if meta.is_dir() {
        return Err(read_err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory, give a profile file",
        )));
    }
    if meta.is_file() && meta.len() > MAX_PROFILE_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(MAX_PROFILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_PROFILE_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| {
        read_err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        ))
    })
}

/// Checks, before a run, that a profile can be written at `path`
/// (`multios_host::output::check_writable`), so that a long run does not end with an unwritable
/// output.
pub fn check_writable(path: &Path) -> Result<(), ProfileError> {
    multios_host::output::check_writable(path).map_err(|e| ProfileError::Unwritable {
        path: path.to_path_buf(),
        why: e.why,
    })
}

/// Writes `profile` as pretty JSON to `path`.
pub fn save(profile: &Profile, path: &Path) -> Result<(), ProfileError> {
    let mut versioned;
    let mut profile = profile;
    if profile.schema_version != profile.written_version() {
        versioned = profile.clone();
        versioned.schema_version = versioned.written_version();
        profile = &versioned;
    }
    let mut text = serde_json::to_string_pretty(profile).map_err(|e| ProfileError::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    text.push('\n');
    std::fs::write(path, text).map_err(|source| ProfileError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[derive(serde::Deserialize)]
struct VersionOnly {
    schema_version: Option<serde_json::Value>,
}

/// Parses and validates a profile from JSON text; `origin` names the file in errors.
pub fn from_json_str(origin: &str, text: &str) -> Result<Profile, ProfileError> {
    // Look at the version first, so a newer file is refused with the right message rather than
    // with whatever field it added.
    let head: VersionOnly = serde_json::from_str(text).map_err(|e| malformed(origin, &e, "(document)"))?;
    match head.schema_version {
        None => {
            return Err(ProfileError::Invalid {
                path: origin.into(),
                field: "schema_version".into(),
                msg: format!("missing: a multios profile starts with \"schema_version\": {SCHEMA_VERSION}"),
            })
        }
        Some(v) => match v.as_u64() {
            Some(n) if n > u64::from(SCHEMA_VERSION) => {
                return Err(ProfileError::NewerSchema {
                    path: origin.into(),
                    found: n,
                    supported: SCHEMA_VERSION,
                })
            }
            Some(n) if n >= 1 => {}
            _ => {
                return Err(ProfileError::Invalid {
                    path: origin.into(),
                    field: "schema_version".into(),
                    msg: format!(
                        "must be a positive integer (this multios writes {SCHEMA_VERSION}), found {v}"
                    ),
                })
            }
        },
    }
    let de = &mut serde_json::Deserializer::from_str(text);
    let profile: Profile = serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        malformed(origin, e.inner(), &field)
    })?;
    validate(origin, &profile)?;
    Ok(profile)
}

fn malformed(origin: &str, e: &serde_json::Error, field: &str) -> ProfileError {
    ProfileError::Malformed {
        path: origin.into(),
        line: e.line(),
        column: e.column(),
        field: field.into(),
        msg: e
            .to_string()
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

fn invalid(origin: &str, field: String, msg: impl Into<String>) -> ProfileError {
    ProfileError::Invalid {
        path: origin.into(),
        field,
        msg: msg.into(),
    }
}

fn check_time(origin: &str, field: String, v: f64) -> Result<(), ProfileError> {
    if !v.is_finite() || v < 0.0 {
        return Err(invalid(
            origin,
            field,
            format!("must be a finite time ≥ 0 in seconds, found {v}"),
        ));
    }
    Ok(())
}

/// Checks the invariants the models rely on.
pub(crate) fn validate(origin: &str, p: &Profile) -> Result<(), ProfileError> {
    if p.schema_version < 2 && p.collection.coverage.is_some() {
        return Err(invalid(
            origin,
            "collection.coverage".into(),
            format!(
                "first written by schema_version 2, but the file says {}: set \"schema_version\": 2",
                p.schema_version
            ),
        ));
    }
    if p.schema_version < 3 && !p.processes.is_empty() {
        return Err(invalid(
            origin,
            "processes".into(),
            format!(
                "first written by schema_version 3, but the file says {}: set \"schema_version\": 3",
                p.schema_version
            ),
        ));
    }
    if p.schema_version < 4 && p.memory_bytes.is_some() {
        return Err(invalid(
            origin,
            "memory_bytes".into(),
            format!(
                "first written by schema_version 4, but the file says {}: set \"schema_version\": 4",
                p.schema_version
            ),
        ));
    }
    if p.schema_version < 5 && p.has_images() {
        return Err(invalid(
            origin,
            "processes[].images".into(),
            format!(
                "first written by schema_version 5, but the file says {}: set \"schema_version\": 5",
                p.schema_version
            ),
        ));
    }
    if p.schema_version < 6 && p.has_anon_maps() {
        return Err(invalid(
            origin,
            "processes[].anon_maps".into(),
            format!(
                "first written by schema_version 6, but the file says {}: set \"schema_version\": 6",
                p.schema_version
            ),
        ));
    }
    check_time(origin, "wall_time_s".into(), p.wall_time_s)?;
    check_time(origin, "compute_time_s".into(), p.compute_time_s)?;
    check_processes(origin, p)?;
    let mut seen = std::collections::HashSet::new();
    let mut calls = 0u64;
    for (i, s) in p.syscalls.iter().enumerate() {
        let f = |name: &str| format!("syscalls[{i}].{name}");
        calls = calls.checked_add(s.count).ok_or_else(|| {
            invalid(
                origin,
                f("count"),
                format!(
                    "{}: the counts of all system calls add up past 2^64 - 1 (the largest count a profile \
                     can hold): the file is corrupt",
                    s.count
                ),
            )
        })?;
        match multios_syscalls::by_name(&s.name) {
            None => {
                return Err(invalid(
                    origin,
                    f("name"),
                    multios_syscalls::UnknownSyscall::new(&s.name).to_string(),
                ))
            }
            Some(nr) if nr != s.nr => {
                return Err(invalid(
                    origin,
                    f("nr"),
                    format!("'{}' is number {nr} on x86_64, not {}", s.name, s.nr),
                ))
            }
            _ => {}
        }
        if !seen.insert(s.name.as_str()) {
            return Err(invalid(
                origin,
                f("name"),
                format!("'{}' appears twice: merge the entries", s.name),
            ));
        }
        check_time(origin, f("total_s"), s.total_s)?;
        for (name, v) in [("min_s", s.min_s), ("median_s", s.median_s), ("max_s", s.max_s)] {
            if let Some(v) = v {
                check_time(origin, f(name), v)?;
            }
        }
        if let (Some(lo), Some(hi)) = (s.min_s, s.max_s) {
            if lo > hi {
                return Err(invalid(origin, f("min_s"), format!("min {lo} exceeds max {hi}")));
            }
        }
        if s.errors > s.count {
            return Err(invalid(
                origin,
                f("errors"),
                format!("{} errors but only {} calls", s.errors, s.count),
            ));
        }
        for (name, h) in [
            ("hist_log2_ns", &s.hist_log2_ns),
            ("gap_hist_log2_ns", &s.gap_hist_log2_ns),
        ] {
            let n = h.checked_total().ok_or_else(|| {
                invalid(
                    origin,
                    f(name),
                    "the buckets add up past 2^64 - 1: the file is corrupt",
                )
            })?;
            if n != 0 && n != s.count {
                return Err(invalid(
                    origin,
                    f(name),
                    format!("histogram holds {n} calls but count is {}", s.count),
                ));
            }
        }
    }
    check_ranks(origin, p)?;
    let mut thread_calls = 0u64;
    for (i, t) in p.threads.iter().enumerate() {
        thread_calls = thread_calls.checked_add(t.syscalls).ok_or_else(|| {
            invalid(
                origin,
                format!("threads[{i}].syscalls"),
                format!(
                    "{}: the threads' calls add up past 2^64 - 1: the file is corrupt",
                    t.syscalls
                ),
            )
        })?;
        check_time(origin, format!("threads[{i}].lifetime_s"), t.lifetime_s)?;
        check_time(origin, format!("threads[{i}].syscall_time_s"), t.syscall_time_s)?;
    }
    Ok(())
}

/// Checks `ranks[]` (of a merged profile): finite times ≥ 0, each rank once.
fn check_ranks(origin: &str, p: &Profile) -> Result<(), ProfileError> {
    let mut seen = std::collections::HashSet::new();
    for (i, r) in p.ranks.iter().enumerate() {
        let f = |name: &str| format!("ranks[{i}].{name}");
        for (name, v) in [
            ("wall_time_s", r.wall_time_s),
            ("compute_time_s", r.compute_time_s),
            ("syscall_time_s", r.syscall_time_s),
        ] {
            check_time(origin, f(name), v)?;
        }
        if !seen.insert(r.rank) {
            return Err(invalid(
                origin,
                f("rank"),
                format!(
                    "rank {} appears twice: each rank's summary is listed once",
                    r.rank
                ),
            ));
        }
    }
    Ok(())
}

/// Checks `processes[]`: times, known call names, each name once per process.
fn check_processes(origin: &str, p: &Profile) -> Result<(), ProfileError> {
    for (i, q) in p.processes.iter().enumerate() {
        let f = |name: &str| format!("processes[{i}].{name}");
        for (name, v) in [
            ("start_s", q.start_s),
            ("end_s", q.end_s),
            ("lifetime_s", q.lifetime_s),
            ("compute_time_s", q.compute_time_s),
        ] {
            check_time(origin, f(name), v)?;
        }
        if q.start_s > q.end_s {
            return Err(invalid(
                origin,
                f("start_s"),
                format!("start {} is after end {}", q.start_s, q.end_s),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (j, c) in q.syscalls.iter().enumerate() {
            let g = |name: &str| format!("processes[{i}].syscalls[{j}].{name}");
            if multios_syscalls::by_name(&c.name).is_none() {
                return Err(invalid(
                    origin,
                    g("name"),
                    multios_syscalls::UnknownSyscall::new(&c.name).to_string(),
                ));
            }
            if !seen.insert(c.name.as_str()) {
                return Err(invalid(
                    origin,
                    g("name"),
                    format!("'{}' appears twice in this process: merge the entries", c.name),
                ));
            }
            check_time(origin, g("total_s"), c.total_s)?;
        }
        if let Some(why) = q.anon_maps.as_ref().and_then(|a| a.inconsistency()) {
            return Err(invalid(origin, f("anon_maps"), why));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::SyscallStats;

    fn sample() -> Profile {
        let mut p = Profile::new(vec!["true".into()], "test", "high");
        p.wall_time_s = 1.0;
        p.compute_time_s = 0.9;
        p.syscalls.push(SyscallStats {
            name: "read".into(),
            nr: 0,
            count: 10,
            total_s: 0.1,
            ..Default::default()
        });
        p
    }

    fn err(text: &str) -> String {
        from_json_str("p.json", text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn round_trip() {
        let p = sample();
        let text = serde_json::to_string_pretty(&p).unwrap_or_default();
        let back = from_json_str("p.json", &text).ok();
        assert_eq!(back.as_ref(), Some(&p));
        assert!((p.p() - 0.1 / 1.0).abs() < 1e-12);
    }

    #[test]
    fn newer_schema_is_refused_by_name() {
        let text = serde_json::to_string(&sample())
            .unwrap_or_default()
            .replace("\"schema_version\":2", "\"schema_version\":8");
        assert_eq!(
            err(&text),
            "p.json: schema_version 8 is newer than this multios reads (up to 7): upgrade multios"
        );
    }

    #[test]
    fn malformed_names_line_and_field() {
        let text = serde_json::to_string_pretty(&sample())
            .unwrap_or_default()
            .replace("\"count\": 10", "\"count\": -3");
        let e = err(&text);
        assert!(e.starts_with("p.json:"), "{e}");
        assert!(e.contains("syscalls[0].count"), "{e}");
    }

    #[test]
    fn unknown_syscall_suggests() {
        let text = serde_json::to_string(&sample())
            .unwrap_or_default()
            .replace("\"read\"", "\"raed\"");
        assert!(err(&text)
            .contains("field 'syscalls[0].name': unknown system call 'raed' (did you mean 'read'?)"));
    }

    #[test]
    fn negative_time_is_refused() {
        let text = serde_json::to_string(&sample())
            .unwrap_or_default()
            .replace("\"compute_time_s\":0.9", "\"compute_time_s\":-1.0");
        assert!(
            err(&text).contains("field 'compute_time_s': must be a finite time ≥ 0"),
            "{}",
            err(&text)
        );
    }

    #[test]
    fn issue_16_counts_that_add_up_past_u64_are_refused() {
        let mut p = sample();
        p.syscalls[0].count = u64::MAX - 1;
        p.syscalls.push(SyscallStats {
            name: "write".into(),
            nr: 1,
            count: 65,
            total_s: 0.1,
            ..Default::default()
        });
        let text = serde_json::to_string(&p).unwrap_or_default();
        let e = err(&text);
        assert!(
            e.contains("field 'syscalls[1].count'") && e.contains("2^64"),
            "{e}"
        );
    }

    #[test]
    fn issue_16_histogram_past_u64_is_refused() {
        let mut p = sample();
        p.syscalls[0].count = 10;
        p.syscalls[0].hist_log2_ns = crate::Log2Histogram(vec![u64::MAX, 11]);
        let e = err(&serde_json::to_string(&p).unwrap_or_default());
        assert!(e.contains("field 'syscalls[0].hist_log2_ns'"), "{e}");
    }

    /// Gaps must add up to the call's count, as its times do; a profile without them still loads.
    #[test]
    fn issue_15_gaps_that_do_not_add_up_are_refused_by_name() {
        let mut p = sample();
        let n = p.syscalls[0].count;
        p.syscalls[0].gap_hist_log2_ns = crate::Log2Histogram(vec![0, n + 1]);
        let e = err(&serde_json::to_string(&p).unwrap_or_default());
        assert!(
            e.contains("field 'syscalls[0].gap_hist_log2_ns'") && e.contains(&format!("count is {n}")),
            "{e}"
        );
        p.syscalls[0].gap_hist_log2_ns = crate::Log2Histogram(vec![0, n]);
        let text = serde_json::to_string(&p).unwrap_or_default();
        let back = from_json_str("p.json", &text).expect("gaps that add up load");
        assert_eq!(back.written_version(), crate::SCHEMA_VERSION);
        assert_eq!(sample().written_version(), 2);
    }

    #[test]
    fn issue_16_endless_input_is_refused_by_name() {
        let e = load(Path::new("/dev/zero"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("/dev/zero") && e.contains("MiB"), "{e}");
        let e = load(Path::new("/"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("directory"), "{e}");
    }

    #[test]
    fn issue_16_check_writable_names_the_path_and_leaves_nothing() {
        let e = check_writable(Path::new("/nonexistent-dir-multios/p.json"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("/nonexistent-dir-multios/p.json") && e.contains("-o"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("multios-test-{}-writable", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let f = dir.join("p.json");
        assert!(check_writable(&f).is_ok());
        assert!(!f.exists(), "the probe file must be removed");
        assert!(check_writable(&dir).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn issue_16_coverage_round_trips_and_version_1_reads_without_it() {
        let mut p = sample();
        p.collection.coverage = Some(crate::Coverage::partial(
            &["calls before the preload library's constructor"],
            &["syscalls[].errors", "threads"],
        ));
        let text = serde_json::to_string(&p).unwrap_or_default();
        assert!(text.contains("\"coverage\":{\"complete\":false"), "{text}");
        assert_eq!(from_json_str("p.json", &text).ok().as_ref(), Some(&p));
        // a version-1 file (no coverage) still reads, as coverage unknown
        let v1 = serde_json::to_string(&sample())
            .unwrap_or_default()
            .replace("\"schema_version\":2", "\"schema_version\":1");
        let back = from_json_str("v1.json", &v1).ok();
        assert_eq!(
            back.map(|p| (p.schema_version, p.collection.coverage)),
            Some((1, None))
        );
        // but a version-1 file cannot carry the version-2 field
        let bad = text.replace("\"schema_version\":2", "\"schema_version\":1");
        assert!(err(&bad).contains("collection.coverage"), "{}", err(&bad));
    }

    #[test]
    fn issue_15_processes_need_version_3_and_are_checked() {
        let mut p = sample();
        p.schema_version = 3;
        p.processes.push(crate::ProcessStats {
            pid: 7,
            ppid: None,
            rank: None,
            name: "sh".into(),
            start_s: 0.0,
            end_s: 1.0,
            threads: 1,
            lifetime_s: 1.0,
            compute_time_s: 0.9,
            syscalls: vec![crate::ProcessCall {
                name: "read".into(),
                count: 10,
                total_s: 0.1,
            }],
            ..Default::default()
        });
        let text = serde_json::to_string(&p).unwrap_or_default();
        assert_eq!(from_json_str("p.json", &text).ok().as_ref(), Some(&p));
        assert_eq!(p.written_version(), 3);
        assert_eq!(sample().written_version(), 2);
        let old = text.replace("\"schema_version\":3", "\"schema_version\":2");
        assert!(
            err(&old).contains("processes") && err(&old).contains("3"),
            "{}",
            err(&old)
        );
        let bad = text.replace("\"name\":\"read\"", "\"name\":\"raed\"");
        assert!(
            err(&bad).contains("processes[0].syscalls[0].name"),
            "{}",
            err(&bad)
        );
        let late = text.replace("\"start_s\":0.0", "\"start_s\":2.0");
        assert!(err(&late).contains("processes[0].start_s"), "{}", err(&late));
    }

    #[test]
    fn issue_15_memory_bytes_need_version_4_and_round_trip() {
        let mut p = sample();
        p.schema_version = 4;
        p.memory_bytes = Some(crate::MemoryBytes {
            mmap: 9 << 20,
            munmap: 4 << 20,
            mremap_old: 3 << 20,
            mremap_new: 6 << 20,
            mmap_file_calls: 12,
            mmap_file: 2 << 20,
        });
        assert_eq!(p.written_version(), 4);
        let text = serde_json::to_string(&p).unwrap_or_default();
        assert_eq!(from_json_str("p.json", &text).ok().as_ref(), Some(&p));
        let old = text.replace("\"schema_version\":4", "\"schema_version\":3");
        assert!(
            err(&old).contains("memory_bytes") && err(&old).contains("4"),
            "{}",
            err(&old)
        );
        // A profile without lengths is still written as version 2 (or 3 with processes).
        assert_eq!(sample().written_version(), 2);
        let typo = text.replace("\"mremap_old\"", "\"mremap_olds\"");
        assert!(err(&typo).contains("mremap_olds"), "{}", err(&typo));
    }

    #[test]
    fn issue_15_images_need_version_5_and_older_profiles_still_load() {
        let mut p = sample();
        p.schema_version = 5;
        p.memory_bytes = Some(crate::MemoryBytes::default());
        p.processes.push(crate::ProcessStats {
            pid: 7,
            name: "cc1".into(),
            start_s: 0.0,
            end_s: 1.0,
            threads: 1,
            lifetime_s: 1.0,
            images: vec![crate::ExecImage {
                at_s: 0.25,
                image: crate::ImageFile {
                    path: "/usr/lib/gcc/x86_64-linux-gnu/12/cc1".into(),
                    sizes: Some(crate::ImageSizes {
                        loaded_bytes: 33 << 20,
                        memory_bytes: 34 << 20,
                        exec_bytes: 20 << 20,
                    }),
                    unknown: None,
                },
                interp: Some(crate::ImageFile {
                    path: "./gone".into(),
                    sizes: None,
                    unknown: Some("relative to a directory the profiler does not know".into()),
                }),
            }],
            code_mappings: Some(crate::CodeMappings {
                calls: 4,
                bytes: 3 << 20,
            }),
            ..Default::default()
        });
        assert_eq!(p.written_version(), 5);
        let text = serde_json::to_string(&p).unwrap_or_default();
        assert_eq!(from_json_str("p.json", &text).ok().as_ref(), Some(&p));
        let old = text.replace("\"schema_version\":5", "\"schema_version\":4");
        assert!(
            err(&old).contains("images") && err(&old).contains("5"),
            "{}",
            err(&old)
        );
        // A version-4 profile (memory_bytes, processes without images) still loads as it was.
        let mut v4 = p.clone();
        v4.processes[0].images.clear();
        v4.processes[0].code_mappings = None;
        v4.schema_version = 4;
        assert_eq!(v4.written_version(), 4);
        let text4 = serde_json::to_string(&v4).unwrap_or_default();
        assert!(
            !text4.contains("images") && !text4.contains("code_mappings"),
            "{text4}"
        );
        assert_eq!(from_json_str("p.json", &text4).ok().as_ref(), Some(&v4));
        let typo = text.replace("\"exec_bytes\"", "\"exe_bytes\"");
        assert!(err(&typo).contains("exe_bytes"), "{}", err(&typo));
    }

    #[test]
    fn issue_15_anon_maps_say_version_6_and_older_profiles_still_load() {
        let mut p = sample();
        p.schema_version = 6;
        let mut anon = crate::AnonMaps::default();
        for len in [132 << 10, 2 << 20, 64 << 20] {
            anon.record(len);
        }
        p.processes.push(crate::ProcessStats {
            pid: 9,
            name: "sort".into(),
            start_s: 0.0,
            end_s: 1.0,
            threads: 1,
            lifetime_s: 1.0,
            anon_maps: Some(anon),
            ..Default::default()
        });
        assert_eq!(p.written_version(), 6);
        let text = serde_json::to_string(&p).unwrap_or_default();
        assert_eq!(from_json_str("p.json", &text).ok().as_ref(), Some(&p));
        let old = text.replace("\"schema_version\":6", "\"schema_version\":5");
        assert!(
            err(&old).contains("anon_maps") && err(&old).contains("6"),
            "{}",
            err(&old)
        );
        // Tables that do not add up are named.
        let bad = text.replace("\"calls\":3", "\"calls\":4");
        assert!(err(&bad).contains("processes[0].anon_maps"), "{}", err(&bad));
        // A version-5 profile (processes without anon_maps) loads as it was.
        let mut v5 = p.clone();
        v5.processes[0].anon_maps = None;
        v5.schema_version = 3;
        assert_eq!(v5.written_version(), 3);
        let text5 = serde_json::to_string(&v5).unwrap_or_default();
        assert!(!text5.contains("anon_maps"), "{text5}");
        let back = from_json_str("p.json", &text5).ok();
        assert!(back.as_ref().is_some_and(|b| !b.has_anon_maps()), "{back:?}");
    }

    #[test]
    fn issue_15_save_writes_the_version_of_what_it_holds() {
        let dir = std::env::temp_dir().join(format!("multios-issue15-save-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let f = dir.join("p.json");
        let mut p = sample();
        p.processes.push(crate::ProcessStats {
            name: "a".into(),
            ..Default::default()
        });
        save(&p, &f).ok();
        let back = crate::load(&f).ok();
        assert_eq!(back.map(|b| b.schema_version), Some(3));
        save(&sample(), &f).ok();
        assert_eq!(crate::load(&f).ok().map(|b| b.schema_version), Some(2));
        std::fs::remove_dir_all(&dir).ok();
    }
}
