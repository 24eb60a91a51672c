//! CPython's regression-test results: the JUnit XML `python -m test --junit-xml FILE` writes, and,
//! when a run died before writing it, the lines `-v` prints per test (`test_x (mod.Class.test_x)
//! ... ok`), so a crashed or killed module still shows how far it got.

use serde::Serialize;

/// What became of one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
    Skipped,
    /// Not in this side's results (the run died before reaching it, or the test does not exist here).
    Missing,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
            Outcome::Missing => "missing",
        }
    }
}

/// One test: its id (`test.test_os.FileTests.test_access`) and outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Case {
    pub id: String,
    pub outcome: Outcome,
}

#[derive(Debug, thiserror::Error)]
pub enum JunitError {
    #[error("{file}: not JUnit XML ({source}); a run that died writing it leaves it truncated")]
    Xml { file: String, source: roxmltree::Error },
    #[error("{file}: <testcase> without a name attribute at byte {pos}")]
    NoName { file: String, pos: usize },
}

/// Parses the JUnit XML of one `python -m test` run; `file` names it in errors. A test with
/// `<failure>` or `<error>` failed, one with `<skipped>` (or an `expectedFailure`, which CPython's
/// writer reports as skipped) was skipped, any other ran and passed.
pub fn parse(xml: &str, file: &str) -> Result<Vec<Case>, JunitError> {
    let doc = roxmltree::Document::parse(xml).map_err(|source| JunitError::Xml {
        file: file.to_string(),
        source,
    })?;
    let mut cases = Vec::new();
    for tc in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        let id = tc.attribute("name").ok_or_else(|| JunitError::NoName {
            file: file.to_string(),
            pos: tc.range().start,
        })?;
        let tags: Vec<&str> = tc
            .children()
            .filter(|c| c.is_element())
            .map(|c| c.tag_name().name())
            .collect();
        let outcome = if tags.iter().any(|t| *t == "failure" || *t == "error") {
            Outcome::Failed
        } else if tags.contains(&"skipped") || tc.attribute("status") == Some("notrun") {
            Outcome::Skipped
        } else {
            Outcome::Passed
        };
        cases.push(Case {
            id: id.to_string(),
            outcome,
        });
    }
    Ok(cases)
}

/// The per-test lines of `python -m test -v` output: `name (module.Class.name) ... RESULT`, with
/// RESULT `ok`, `FAIL`, `ERROR`, `skipped '…'`, `expected failure` or `unexpected success` (a
/// test's own output can come between the `...` and the result; such lines are not counted).
/// Subtest failures print a second line for the same id; the worst outcome wins.
pub fn parse_verbose(text: &str) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    for line in text.lines() {
        let Some((head, result)) = line.split_once(" ... ") else {
            continue;
        };
        let Some(id) = head
            .strip_suffix(')')
            .and_then(|h| h.rsplit_once(" ("))
            .map(|(_, id)| id)
            .filter(|id| id.contains('.') && !id.contains(' '))
        else {
            continue;
        };
        let result = result.trim();
        let outcome = if result == "ok" || result == "unexpected success" {
            Outcome::Passed
        } else if result == "FAIL" || result == "ERROR" {
            Outcome::Failed
        } else if result.starts_with("skipped") || result == "expected failure" {
            Outcome::Skipped
        } else {
            continue;
        };
        match cases.iter_mut().find(|c| c.id == id) {
            Some(c) if outcome == Outcome::Failed => c.outcome = Outcome::Failed,
            Some(_) => {}
            None => cases.push(Case {
                id: id.to_string(),
                outcome,
            }),
        }
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from `/usr/bin/python3.11 -m test test_fcntl --junit-xml F` in the LWK (trimmed).
    const SAMPLE: &str = r#"<testsuites tests="4" errors="1" failures="0"><testsuite start="2026-11-24 01:23:23.021273" tests="4" errors="1" failures="0"><testcase name="test.test_fcntl.TestFcntl.test_fcntl_64_bit" status="run" result="completed" time="0.000814"><system-out /><system-err /><error type="OSError" message="OSError: [Errno 22] Invalid argument&#10;">Traceback (most recent call last):
  File "/usr/lib/python3.11/test/test_fcntl.py", line 140, in test_fcntl_64_bit
    fcntl.fcntl(fd, cmd, flags)
OSError: [Errno 22] Invalid argument
</error></testcase><testcase name="test.test_fcntl.TestFcntl.test_fcntl_bad_file" status="run" result="completed" time="0.000101" /><testcase name="test.test_fcntl.TestFcntl.test_fcntl_f_getpath" status="run" result="completed" time="0.000068"><skipped>F_GETPATH is only available on macos</skipped></testcase><testcase name="test.test_fcntl.TestFcntl.test_flock" status="run" result="completed" time="0.001"><failure type="AssertionError" message="1 != 2">x</failure></testcase></testsuite></testsuites>"#;

    #[test]
    fn junit_sample_gives_each_outcome() {
        let cases = parse(SAMPLE, "sample.xml").expect("sample parses");
        let got: Vec<(&str, Outcome)> = cases.iter().map(|c| (c.id.as_str(), c.outcome)).collect();
        assert_eq!(
            got,
            [
                ("test.test_fcntl.TestFcntl.test_fcntl_64_bit", Outcome::Failed),
                ("test.test_fcntl.TestFcntl.test_fcntl_bad_file", Outcome::Passed),
                ("test.test_fcntl.TestFcntl.test_fcntl_f_getpath", Outcome::Skipped),
                ("test.test_fcntl.TestFcntl.test_flock", Outcome::Failed),
            ]
        );
    }

    #[test]
    fn truncated_junit_names_the_file() {
        let err = parse(&SAMPLE[..200], "/x/l_test_fcntl.xml").expect_err("truncated");
        assert!(err.to_string().contains("/x/l_test_fcntl.xml"), "{err}");
    }

    #[test]
    fn verbose_lines_give_partial_results() {
        let text = "\
0:00:00 load avg: 2.29 [1/1] test_os
test_access (test.test_os.FileTests.test_access) ... ok
test_big (test.test_os.FileTests.test_big) ... skipped 'not enough memory'
test_sub (test.test_os.FileTests.test_sub) ... some output of the test
ok
test_sub2 (test.test_os.FileTests.test_sub2) ... FAIL
test_sub2 (test.test_os.FileTests.test_sub2) ... ERROR
test_x (test.test_os.FileTests.test_x) ... expected failure
test_y (test.test_os.FileTests.test_y) ... ok
test_y (test.test_os.FileTests.test_y) ... FAIL
";
        let got: Vec<(String, Outcome)> = parse_verbose(text)
            .into_iter()
            .map(|c| (c.id, c.outcome))
            .collect();
        let want: Vec<(String, Outcome)> = [
            ("test.test_os.FileTests.test_access", Outcome::Passed),
            ("test.test_os.FileTests.test_big", Outcome::Skipped),
            ("test.test_os.FileTests.test_sub2", Outcome::Failed),
            ("test.test_os.FileTests.test_x", Outcome::Skipped),
            ("test.test_os.FileTests.test_y", Outcome::Failed),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b))
        .collect();
        assert_eq!(got, want);
    }
}
