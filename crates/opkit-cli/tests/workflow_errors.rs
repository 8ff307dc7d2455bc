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

/// Every file under `dir` with its contents.
fn files(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn create(
    dir: &Path,
    what: &str,
    group: &str,
    version: &str,
    kind: &str,
    extra: &[&str],
) -> Output {
    let mut args = vec![
        "create",
        what,
        "--group",
        group,
        "--version",
        version,
        "--kind",
        kind,
    ];
    args.extend(extra);
    opkit(dir, &args)
}

#[test]
fn create_webhook_refuses_unknown_kinds_missing_flags_and_existing_code_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("shop");
    std::fs::create_dir(&project).unwrap();
    init(&project);
    let out = create(&project, "api", "web", "v1", "Cart", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = files(&project);
    let webhook = |group: &str, version: &str, kind: &str, flags: &[&str]| {
        let mut args = vec![
            "create",
            "webhook",
            "--group",
            group,
            "--version",
            version,
            "--kind",
            kind,
        ];
        args.extend(flags);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            webhook("web", "v1", "Cart", &[]),
            vec!["--defaulting", "--programmatic-validation", "--conversion"],
        ),
        (
            webhook("web", "v1", "Order", &["--defaulting"]),
            vec![
                "kind Order is not in this project (it has Cart)",
                "opkit create api --group web --version v1 --kind Order",
            ],
        ),
        (
            webhook("web", "v3", "Cart", &["--defaulting"]),
            vec!["kind Cart has no version v3 (it has v1)"],
        ),
        (
            webhook("shop", "v1", "Cart", &["--defaulting"]),
            vec!["kind Cart is in group web.example.com: pass --group web"],
        ),
        (
            webhook("web", "v1", "Cart", &["--conversion"]),
            vec![
                "kind Cart has one version (v1): conversion needs another",
                "opkit create api --group web --version <new version> --kind Cart",
            ],
        ),
    ];
    for (args, needles) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(&project, &args, needles);
    }
    // A file of the webhook's name is never overwritten.
    std::fs::create_dir_all(project.join("src/webhooks")).unwrap();
    std::fs::write(project.join("src/webhooks/cart.rs"), "// mine\n").unwrap();
    let args = webhook("web", "v1", "Cart", &["--programmatic-validation"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails_with(
        &project,
        &args,
        &["src/webhooks/cart.rs already exists", "never overwrites"],
    );
    std::fs::remove_file(project.join("src/webhooks/cart.rs")).unwrap();
    std::fs::remove_dir(project.join("src/webhooks")).unwrap();
    assert_eq!(
        files(&project),
        before,
        "a refused create webhook changed files"
    );

    // Once created, the same webhook again is refused.
    let args = webhook("web", "v1", "Cart", &["--defaulting"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = opkit(&project, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let project_file = std::fs::read_to_string(project.join("PROJECT")).unwrap();
    assert!(
        project_file.contains("webhooks:\n    defaulting: true"),
        "{project_file}"
    );
    fails_with(
        &project,
        &args,
        &["web.example.com/v1 Cart already has a defaulting webhook"],
    );
}

#[test]
fn a_second_version_keeps_the_kinds_group_and_scope() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("shop");
    std::fs::create_dir(&project).unwrap();
    init(&project);
    let out = create(
        &project,
        "api",
        "web",
        "v1",
        "Cart",
        &["--namespaced", "false"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = files(&project);
    for (group, version, extra, needles) in [
        (
            "web",
            "v1",
            &[][..],
            &["kind Cart already exists", "web.example.com/v1"][..],
        ),
        (
            "shop",
            "v2",
            &[][..],
            &["kind Cart is in group web.example.com", "--group web"][..],
        ),
        (
            "web",
            "v2",
            &["--namespaced", "true"][..],
            &["kind Cart is cluster-scoped", "leave out --namespaced"][..],
        ),
    ] {
        let mut args = vec![
            "create",
            "api",
            "--group",
            group,
            "--version",
            version,
            "--kind",
            "Cart",
        ];
        args.extend(extra);
        fails_with(&project, &args, needles);
    }
    assert_eq!(
        files(&project),
        before,
        "a refused create api changed files"
    );
    // A new version: a spoke in a module of its own, the kind's scope kept.
    let out = create(&project, "api", "web", "v2", "Cart", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spoke = std::fs::read_to_string(project.join("src/api/cart_v2.rs")).unwrap();
    assert!(spoke.contains("version = \"v2\""), "{spoke}");
    assert!(!spoke.contains("namespaced,"), "{spoke}");
    assert!(spoke.contains("stored as v1 (the hub"), "{spoke}");
    let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
    assert!(lib.contains(".crd::<api::cart_v2::Cart>()"), "{lib}");
    assert!(!project.join("src/controllers/cart_v2.rs").exists());
    let sample = std::fs::read_to_string(project.join("config/samples/web_v2_cart.yaml")).unwrap();
    assert!(sample.contains("name: cart-v2-sample"), "{sample}");
}
