//! The binary and its suites agree: every bug the binary offers has a kuttl suite whose
//! background command runs it. (Being an integration test also makes `cargo test` of the
//! workspace build the binary, which `crates/opkit-cli/tests/up.rs` runs in its campaigns.)

use std::path::Path;
use std::process::Command;

#[test]
fn every_bug_the_binary_offers_has_a_suite_that_runs_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_chaos-gallery"))
        .args(["--bug", "no-such-bug"])
        .output()
        .expect("run chaos-gallery");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let values = err
        .split("[possible values: ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no list of bugs in: {err}"));
    let bugs: Vec<&str> = values.split(", ").collect();
    assert_eq!(bugs.len(), 8, "{bugs:?}");
    let suites = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites");
    for bug in bugs {
        let config = suites.join(bug).join("kuttl-test.yaml");
        let text = std::fs::read_to_string(&config)
            .unwrap_or_else(|e| panic!("{}: {e}", config.display()));
        assert!(
            text.contains(&format!("command: chaos-gallery --bug {bug}\n")),
            "{} does not run chaos-gallery --bug {bug}",
            config.display()
        );
    }
}
