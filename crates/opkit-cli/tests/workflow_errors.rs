//! The project commands fail with a message that says what is wrong and what to do, and a
//! refused command leaves the directory as it was. No build and no cluster needed.

use std::path::Path;
use std::process::{Command, Output};

fn opkit(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opkit"))
        .args(args)
        .current_dir(dir)
        .env_remove("KUBECONFIG")
        .output()
        .expect("opkit runs")
}

fn fails_with(dir: &Path, args: &[&str], needles: &[&str]) -> String {
    let out = opkit(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "`opkit {}` should fail",
        args.join(" ")
    );
    for needle in needles {
        assert!(stderr.contains(needle), "expected {needle:?} in:\n{stderr}");
    }
    stderr
}

fn init(dir: &Path) {
    let out = opkit(
        dir,
        &[
            "init",
            "--domain",
            "example.com",
            "--repo",
            "github.com/example/shop",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn commands_outside_a_project_point_to_opkit_init() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &[
            "create",
            "api",
            "--group",
            "a",
            "--version",
            "v1",
            "--kind",
            "A",
        ][..],
        &["generate", "manifests"][..],
        &["install"][..],
        &["deploy"][..],
    ] {
        fails_with(dir.path(), args, &["no opkit project here", "opkit init"]);
    }
}

#[test]
fn init_refuses_bad_names_and_non_empty_directories() {
    let dir = tempfile::tempdir().unwrap();
    fails_with(
        dir.path(),
        &["init", "--domain", "Example.com", "--repo", "r"],
        &["domain", "lowercase"],
    );
    fails_with(
        dir.path(),
        &[
            "init",
            "--domain",
            "example.com",
            "--repo",
            "r",
            "--name",
            "My_Op",
        ],
        &["project name \"My_Op\""],
    );
    fails_with(
        dir.path(),
        &[
            "init",
            "--domain",
            "example.com",
            "--repo",
            "r",
            "--name",
            "shop",
            "--opkit-path",
            "/nonexistent",
        ],
        &["--opkit-path"],
    );
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    fails_with(
        dir.path(),
        &[
            "init",
            "--domain",
            "example.com",
            "--repo",
            "r",
            "--name",
            "shop",
        ],
        &["is not empty (notes.txt)", "--force"],
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn create_api_refuses_bad_names_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("shop");
    std::fs::create_dir(&project).unwrap();
    init(&project);
    let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
    fails_with(
        &project,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "1",
            "--kind",
            "Cart",
        ],
        &["version \"1\"", "v1beta1"],
    );
    fails_with(
        &project,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "cart",
        ],
        &["UpperCamelCase"],
    );
    fails_with(
        &project,
        &[
            "create",
            "api",
            "--group",
            "Web",
            "--version",
            "v1",
            "--kind",
            "Cart",
        ],
        &["group \"Web\""],
    );
    // A project whose marker is gone: the lines to add by hand are in the message.
    std::fs::write(
        project.join("src/lib.rs"),
        "pub mod api;\npub mod controllers;\n",
    )
    .unwrap();
    fails_with(
        &project,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Cart",
        ],
        &["+opkit:scaffold:app", ".crd::<api::cart::Cart>()"],
    );
    assert!(!project.join("src/api/cart.rs").exists());
    std::fs::write(project.join("src/lib.rs"), lib).unwrap();
}

#[test]
fn cluster_commands_without_a_reachable_cluster_suggest_opkit_up() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("shop");
    std::fs::create_dir(&project).unwrap();
    init(&project);
    // A kubeconfig naming a port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
             https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  \
             context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    \
             token: t\n"
        ),
    )
    .unwrap();
    let path = kubeconfig.to_str().unwrap();
    fails_with(
        &project,
        &["deploy", "--kubeconfig", path],
        &[
            "cannot reach the cluster at https://127.0.0.1",
            "opkit up",
            "--up",
        ],
    );
    // No kinds yet: install says how to get some.
    fails_with(
        &project,
        &["install", "--kubeconfig", path],
        &["opkit create api"],
    );
}

#[test]
fn duration_flags_take_go_durations() {
    let dir = tempfile::tempdir().unwrap();
    // `--timeout 1m30s` is accepted: the command goes on to look for a project.
    fails_with(
        dir.path(),
        &["deploy", "--timeout", "1m30s"],
        &["no opkit project here"],
    );
    // A malformed duration is refused with Go's message, naming the flag.
    fails_with(
        dir.path(),
        &["deploy", "--timeout", "5x"],
        &["--timeout", r#"time: unknown unit "x" in duration "5x""#],
    );
    // `opkit demo --duration 1h` parses; the malformed flag after it is the one refused.
    let stderr = fails_with(
        dir.path(),
        &["demo", "--duration", "1h", "--step-interval", "soon"],
        &["--step-interval", r#"time: invalid duration "soon""#],
    );
    assert!(!stderr.contains("--duration"), "{stderr}");
}
