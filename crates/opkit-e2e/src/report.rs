//! Reports as kuttl writes them: JUnit XML or JSON, one `<testsuite>` per test dir, and per
//! test either a nested `<testsuite>` with a `setup` testcase and one testcase per step (step
//! granularity, the default) or one testcase (test granularity). The layout, attribute order,
//! escaping and indentation follow kuttl's Go encoders; step durations are real (kuttl's are
//! about zero), and a test whose files failed to load is reported as failed instead of missing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::case::CaseRecord;

/// The report's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// JUnit XML (`.xml`).
    Xml,
    /// JSON (`.json`).
    Json,
}

impl ReportFormat {
    /// The suite file's `reportFormat`: "" is none, `xml` XML and any other value JSON, as
    /// kuttl; except that opkit reads `XML` as XML too (kuttl writes JSON for it).
    pub fn from_suite(value: &str) -> Option<ReportFormat> {
        match value {
            "" => None,
            v if v.eq_ignore_ascii_case("xml") => Some(ReportFormat::Xml),
            _ => Some(ReportFormat::Json),
        }
    }

    /// The `--report` flag: `xml`/`junit` or `json`, any case; other values none.
    pub fn from_flag(value: &str) -> Option<ReportFormat> {
        match value.to_ascii_lowercase().as_str() {
            "xml" | "junit" => Some(ReportFormat::Xml),
            "json" => Some(ReportFormat::Json),
            _ => None,
        }
    }

    fn extension(self) -> &'static str {
        match self {
            ReportFormat::Xml => "xml",
            ReportFormat::Json => "json",
        }
    }
}

/// One testcase per step, or per test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Granularity {
    /// A testcase per step (and `setup`).
    #[default]
    Step,
    /// A testcase per test.
    Test,
}

/// A failure element.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// The text (the last error).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// `failed in step …`.
    pub message: String,
}

/// A `<testcase>`.
#[derive(Debug, Clone, Serialize)]
pub struct TestCase {
    /// The test.
    pub classname: String,
    /// `setup`, `step <i-name>`, or the test.
    pub name: String,
    /// When it started (RFC 3339).
    pub timestamp: String,
    /// Seconds, `%.3f`.
    pub time: String,
    /// Assert and errors objects.
    #[serde(skip_serializing_if = "is_zero")]
    pub assertions: usize,
    /// The failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A `<testsuite>` (a test dir, or a test at step granularity).
#[derive(Debug, Clone, Serialize)]
pub struct TestSuite {
    /// Testcases below.
    pub tests: usize,
    /// Failed testcases below.
    pub failures: usize,
    /// When the first test started.
    pub timestamp: String,
    /// Seconds.
    pub time: String,
    /// The test dir or the test.
    pub name: String,
    /// Testcases.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub testcase: Vec<TestCase>,
    /// Nested suites (tests at step granularity).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub testsuite: Vec<TestSuite>,
}

/// The root `<testsuites>`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The TestSuite's `metadata.name`.
    pub name: String,
    /// Testcases.
    pub tests: usize,
    /// Failed testcases.
    pub failures: usize,
    /// Seconds.
    pub time: String,
    /// One per test dir.
    pub testsuite: Vec<TestSuite>,
    /// A fatal harness failure (setup).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

fn secs(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

fn case_failure(c: &CaseRecord) -> Option<Failure> {
    if let Some(e) = &c.setup_failure {
        return Some(Failure {
            text: e.clone(),
            message: "failed to set up the test".into(),
        });
    }
    if let Some((message, errors)) = c.steps.iter().find_map(|s| s.failure.clone()) {
        return Some(Failure {
            text: errors.last().cloned().unwrap_or_default(),
            message,
        });
    }
    c.cleanup_failures.last().map(|e| Failure {
        text: e.clone(),
        message: "failed to clean up".into(),
    })
}

fn summed(
    name: String,
    timestamp: String,
    time: Duration,
    testcase: Vec<TestCase>,
    testsuite: Vec<TestSuite>,
) -> TestSuite {
    let tests = testcase.len() + testsuite.iter().map(|s| s.tests).sum::<usize>();
    let failures = testcase.iter().filter(|c| c.failure.is_some()).count()
        + testsuite.iter().map(|s| s.failures).sum::<usize>();
    TestSuite {
        tests,
        failures,
        timestamp,
        time: secs(time),
        name,
        testcase,
        testsuite,
    }
}

impl Report {
    /// Builds the report of a run.
    pub fn build(
        name: &str,
        cases: &[CaseRecord],
        granularity: Granularity,
        total: Duration,
        fatal: Option<String>,
    ) -> Report {
        let mut dirs: Vec<&str> = cases.iter().map(|c| c.suite.as_str()).collect();
        dirs.sort();
        dirs.dedup();
        let mut suites = Vec::new();
        for dir in dirs {
            let mut in_dir: Vec<&CaseRecord> = cases.iter().filter(|c| c.suite == dir).collect();
            in_dir.sort_by(|a, b| a.name.cmp(&b.name));
            let timestamp = in_dir
                .iter()
                .map(|c| c.started)
                .min()
                .map(|t| t.to_string())
                .unwrap_or_default();
            let time = in_dir.iter().map(|c| c.duration).max().unwrap_or_default();
            let suite = match granularity {
                Granularity::Test => {
                    let classname = Path::new(dir)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| dir.to_string());
                    let cases = in_dir
                        .iter()
                        .map(|c| TestCase {
                            classname: classname.clone(),
                            name: c.name.clone(),
                            timestamp: c.started.to_string(),
                            time: secs(c.duration),
                            assertions: c.steps.iter().map(|s| s.assertions).sum(),
                            failure: case_failure(c),
                        })
                        .collect();
                    summed(dir.to_string(), timestamp, time, cases, Vec::new())
                }
                Granularity::Step => {
                    let tests = in_dir
                        .iter()
                        .map(|c| {
                            let mut cases = vec![TestCase {
                                classname: c.name.clone(),
                                name: "setup".into(),
                                timestamp: c.started.to_string(),
                                time: secs(c.setup_duration),
                                assertions: 0,
                                failure: c.setup_failure.as_ref().map(|e| Failure {
                                    text: e.clone(),
                                    message: "failed to set up the test".into(),
                                }),
                            }];
                            for s in &c.steps {
                                cases.push(TestCase {
                                    classname: c.name.clone(),
                                    name: format!("step {}", s.label),
                                    timestamp: s.started.to_string(),
                                    time: secs(s.duration),
                                    assertions: s.assertions,
                                    failure: s.failure.as_ref().map(|(m, errors)| Failure {
                                        text: errors.last().cloned().unwrap_or_default(),
                                        message: m.clone(),
                                    }),
                                });
                            }
                            if let Some(e) = c.cleanup_failures.last() {
                                cases.push(TestCase {
                                    classname: c.name.clone(),
                                    name: "cleanup".into(),
                                    timestamp: c.started.to_string(),
                                    time: secs(Duration::ZERO),
                                    assertions: 0,
                                    failure: Some(Failure {
                                        text: e.clone(),
                                        message: "failed to clean up".into(),
                                    }),
                                });
                            }
                            cases.sort_by(|a, b| a.name.cmp(&b.name));
                            summed(
                                c.name.clone(),
                                c.started.to_string(),
                                c.duration,
                                cases,
                                Vec::new(),
                            )
                        })
                        .collect();
                    summed(dir.to_string(), timestamp, time, Vec::new(), tests)
                }
            };
            suites.push(suite);
        }
        Report {
            name: name.to_string(),
            tests: suites.iter().map(|s| s.tests).sum(),
            failures: suites.iter().map(|s| s.failures).sum(),
            time: secs(total),
            testsuite: suites,
            failure: fatal.map(|message| Failure {
                text: String::new(),
                message,
            }),
        }
    }

    /// The report as kuttl's JSON (`json.MarshalIndent(r, " ", "  ")`, HTML-escaped).
    pub fn to_json(&self) -> String {
        let pretty = serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()));
        let escaped = pretty
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026");
        escaped.replace('\n', "\n ")
    }

    /// The report as kuttl's JUnit XML (`xml.MarshalIndent(r, " ", "  ")`).
    pub fn to_xml(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            " <testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" time=\"{}\">",
            esc(&self.name),
            self.tests,
            self.failures,
            self.time
        ));
        for s in &self.testsuite {
            suite_xml(s, 1, &mut out);
        }
        if let Some(f) = &self.failure {
            out.push_str(&format!(
                "\n   <failure message=\"{}\" type=\"\"></failure>",
                esc(&f.message)
            ));
        }
        out.push_str("\n </testsuites>");
        out
    }

    /// Writes the report to `<dir>/<name>.<ext>`, creating `dir`; the path.
    pub fn write(&self, format: ReportFormat, dir: &Path, name: &str) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{name}.{}", format.extension()));
        let body = match format {
            ReportFormat::Xml => self.to_xml(),
            ReportFormat::Json => self.to_json(),
        };
        std::fs::write(&path, body)?;
        Ok(path)
    }
}

fn indent(level: usize) -> String {
    format!("\n {}", "  ".repeat(level))
}

fn suite_xml(s: &TestSuite, level: usize, out: &mut String) {
    out.push_str(&indent(level));
    out.push_str(&format!(
        "<testsuite tests=\"{}\" failures=\"{}\" timestamp=\"{}\" time=\"{}\" name=\"{}\">",
        s.tests,
        s.failures,
        esc(&s.timestamp),
        s.time,
        esc(&s.name)
    ));
    for c in &s.testcase {
        out.push_str(&indent(level + 1));
        out.push_str(&format!(
            "<testcase classname=\"{}\" name=\"{}\" timestamp=\"{}\" time=\"{}\" assertions=\"{}\">",
            esc(&c.classname),
            esc(&c.name),
            esc(&c.timestamp),
            c.time,
            c.assertions
        ));
        match &c.failure {
            None => out.push_str("</testcase>"),
            Some(f) => {
                out.push_str(&indent(level + 2));
                out.push_str(&format!(
                    "<failure message=\"{}\" type=\"\">{}</failure>",
                    esc(&f.message),
                    esc(&f.text)
                ));
                out.push_str(&indent(level + 1));
                out.push_str("</testcase>");
            }
        }
    }
    for inner in &s.testsuite {
        suite_xml(inner, level + 1, out);
    }
    out.push_str(&indent(level));
    out.push_str("</testsuite>");
}

/// Go's `xml.EscapeText`.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\t' => out.push_str("&#x9;"),
            '\n' => out.push_str("&#xA;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::StepRecord;

    fn case(name: &str, fail: bool) -> CaseRecord {
        let t = jiff::Timestamp::UNIX_EPOCH;
        CaseRecord {
            name: name.into(),
            suite: "tests/e2e".into(),
            started: t,
            duration: Duration::from_millis(1500),
            setup_duration: Duration::from_millis(10),
            setup_failure: None,
            steps: vec![StepRecord {
                label: "0-run".into(),
                assertions: 2,
                duration: Duration::from_millis(1200),
                started: t,
                failure: fail.then(|| {
                    (
                        "failed in step 0-run".to_string(),
                        vec!["a".into(), "command \"x\" <failed> & 'b'".into()],
                    )
                }),
            }],
            cleanup_failures: Vec::new(),
            namespace: None,
        }
    }

    #[test]
    fn step_granularity_xml_nests_tests_with_setup_and_real_step_times() {
        let r = Report::build(
            "s",
            &[case("b", true), case("a", false)],
            Granularity::Step,
            Duration::from_secs(2),
            None,
        );
        let xml = r.to_xml();
        assert!(
            xml.starts_with(" <testsuites name=\"s\" tests=\"4\" failures=\"1\" time=\"2.000\">"),
            "{xml}"
        );
        assert!(
            xml.contains("\n   <testsuite tests=\"4\" failures=\"1\""),
            "{xml}"
        );
        assert!(xml.contains("name=\"tests/e2e\">"), "{xml}");
        assert!(xml.find("name=\"a\"").unwrap() < xml.find("name=\"b\"").unwrap());
        assert!(xml.contains("<testcase classname=\"b\" name=\"step 0-run\" timestamp=\"1970-01-01T00:00:00Z\" time=\"1.200\" assertions=\"2\">"), "{xml}");
        assert!(xml.contains("<failure message=\"failed in step 0-run\" type=\"\">command &#34;x&#34; &lt;failed&gt; &amp; &#39;b&#39;</failure>"), "{xml}");
        assert!(xml.lines().all(|l| l.starts_with(' ')));
    }

    #[test]
    fn test_granularity_json_has_one_testcase_per_test_and_go_escaping() {
        let r = Report::build(
            "",
            &[case("a", true)],
            Granularity::Test,
            Duration::from_secs(2),
            None,
        );
        let json = r.to_json();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let tc = &v["testsuite"][0]["testcase"][0];
        assert_eq!(tc["classname"], "e2e");
        assert_eq!(tc["name"], "a");
        assert_eq!(tc["assertions"], 2);
        assert_eq!(tc["failure"]["message"], "failed in step 0-run");
        assert!(json.contains("\\u003cfailed\\u003e \\u0026"), "{json}");
        assert!(json.starts_with("{\n   \"name\""), "{json}");
    }

    #[test]
    fn report_formats_follow_kuttl_with_case_insensitive_xml() {
        assert_eq!(ReportFormat::from_suite(""), None);
        assert_eq!(ReportFormat::from_suite("XML"), Some(ReportFormat::Xml));
        assert_eq!(ReportFormat::from_suite("yaml"), Some(ReportFormat::Json));
        assert_eq!(ReportFormat::from_flag("JUnit"), Some(ReportFormat::Xml));
        assert_eq!(ReportFormat::from_flag("yaml"), None);
    }
}
