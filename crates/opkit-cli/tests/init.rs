//! What `opkit init` writes for shipping, checked without building the project (the CI test in
//! `scaffold.rs` builds one): the container image's Dockerfile and `.dockerignore`, and the
//! opkit dependency for each place opkit can come from, as cargo itself reads the manifest.
//! No network: cargo runs offline and without resolving.

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

/// `opkit init` in a new directory with `extra` flags; returns the directory.
fn init(name: &str, extra: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "init",
        "--domain",
        "example.com",
        "--repo",
        "github.com/example/shop",
        "--name",
        name,
    ];
    args.extend(extra);
    let out = opkit(dir.path(), &args);
    assert!(
        out.status.success(),
        "opkit {}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// One Dockerfile instruction: its keyword (upper case) and the rest, continuation lines joined.
#[derive(Debug)]
struct Instruction {
    keyword: String,
    args: String,
}

/// The instructions of a Dockerfile, as its parser reads them: comment lines dropped (also
/// inside a continued instruction), lines ending in `\` joined to the next.
fn instructions(text: &str) -> Vec<Instruction> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (keyword, args) = current.split_once(' ').unwrap_or((&current, ""));
                out.push(Instruction {
                    keyword: keyword.to_ascii_uppercase(),
                    args: args.trim().to_string(),
                });
                current.clear();
            }
        }
    }
    assert!(
        current.is_empty(),
        "the Dockerfile ends inside a continued line"
    );
    out
}

/// The instructions of each build stage (from its `FROM` on), and the `ARG`s before the first.
fn stages(instructions: &[Instruction]) -> (Vec<&Instruction>, Vec<Vec<&Instruction>>) {
    let mut global = Vec::new();
    let mut stages: Vec<Vec<&Instruction>> = Vec::new();
    for i in instructions {
        if i.keyword == "FROM" {
            stages.push(vec![i]);
        } else if let Some(stage) = stages.last_mut() {
            stage.push(i);
        } else {
            global.push(i);
        }
    }
    (global, stages)
}

fn args_of<'a>(stage: &[&'a Instruction], keyword: &str) -> Vec<&'a str> {
    stage
        .iter()
        .filter(|i| i.keyword == keyword)
        .map(|i| i.args.as_str())
        .collect()
}

#[test]
fn init_scaffolds_a_dockerfile_that_ships_the_crates_binary_as_a_non_root_user() {
    // A name with a dash: the binary keeps it (cargo names the binary after the package).
    let dir = init("web-shop", &["--opkit-version", env!("CARGO_PKG_VERSION")]);
    let dir = dir.path();
    let manifest: toml_edit::DocumentMut = read(dir, "Cargo.toml").parse().unwrap();
    let bin = manifest["package"]["name"].as_str().unwrap().to_string();
    assert_eq!(bin, "web-shop");
    assert!(
        manifest.get("bin").is_none(),
        "a [[bin]] section would rename the binary"
    );
    assert!(dir.join("src/main.rs").is_file() && dir.join("src/lib.rs").is_file());

    let dockerfile = read(dir, "Dockerfile");
    let all = instructions(&dockerfile);
    let (global, stages) = stages(&all);
    assert_eq!(
        stages.len(),
        2,
        "a build stage and the shipped stage\n{all:#?}"
    );
    let (builder, shipped) = (&stages[0], &stages[1]);

    // The build stage: Rust on Alpine (musl: a static binary), pinned by an ARG.
    assert_eq!(builder[0].args, "rust:${RUST_VERSION}-alpine AS builder");
    let toolchain = global
        .iter()
        .find_map(|i| i.args.strip_prefix("RUST_VERSION="))
        .expect("ARG RUST_VERSION=<version> before the first FROM");
    assert!(
        toolchain.split('.').all(|p| p.parse::<u32>().is_ok()),
        "{toolchain}"
    );
    // Dependencies are built before the sources arrive, so edits under src/ reuse them.
    let copies = args_of(builder, "COPY");
    assert_eq!(copies, ["Cargo.toml Cargo.lock ./", "src ./src"]);
    let runs = args_of(builder, "RUN");
    let build = format!("cargo build --release --locked --offline --bin {bin}");
    let first_build = runs
        .iter()
        .position(|r| r.contains(&build))
        .expect("a cargo build of the binary");
    let last = runs.last().unwrap();
    let copy_src = builder
        .iter()
        .position(|i| i.keyword == "COPY" && i.args == "src ./src")
        .unwrap();
    let first_build_at = builder
        .iter()
        .position(|i| i.keyword == "RUN" && i.args.contains(&build))
        .unwrap();
    assert!(
        first_build_at < copy_src,
        "the dependencies build before src/ is copied"
    );
    assert!(
        runs[..first_build]
            .iter()
            .any(|r| r.contains("src/main.rs") && r.contains("src/lib.rs")),
        "placeholder sources for the dependency build"
    );
    // The real build: the placeholder's files touched first (COPY keeps older mtimes, and
    // cargo would keep the placeholder binary), then the binary taken out of target/.
    let touch = last.find("touch src/main.rs src/lib.rs").expect(last);
    let real_build = last.find(&build).expect(last);
    let taken = format!("cp target/release/{bin} /{bin}");
    assert!(touch < real_build && last.ends_with(&taken), "{last}");

    // The shipped stage: distroless/static, the binary alone, as distroless' nonroot user.
    assert_eq!(shipped[0].args, "gcr.io/distroless/static:nonroot");
    assert_eq!(
        args_of(shipped, "COPY"),
        [format!("--from=builder /{bin} /{bin}")]
    );
    assert_eq!(args_of(shipped, "USER"), ["65532:65532"]);
    assert_eq!(args_of(shipped, "ENTRYPOINT"), [format!("[\"/{bin}\"]")]);
    // The Deployment insists on a non-root user, which the image's numeric USER satisfies,
    // and names the image the README and config/default's images entry refer to.
    let deployment = read(dir, "config/manager/manager.yaml");
    assert!(deployment.contains("runAsNonRoot: true"), "{deployment}");
    assert!(
        deployment.contains(&format!("image: {bin}:latest")),
        "{deployment}"
    );
    assert!(read(dir, "config/default/kustomization.yaml").contains(&format!("#- name: {bin}")));

    // What the build copies is in the build context; what must stay out is ignored.
    let ignored: Vec<String> = read(dir, ".dockerignore")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.trim().trim_end_matches('/').to_string())
        .collect();
    for needed in ["Cargo.toml", "Cargo.lock", "src"] {
        assert!(!ignored.iter().any(|i| i == needed), "{needed} is ignored");
    }
    for kept_out in ["target", ".git", ".opkit"] {
        assert!(
            ignored.iter().any(|i| i == kept_out),
            "{kept_out}: {ignored:?}"
        );
    }

    // The README says how to build, push and deploy the image.
    let readme = read(dir, "README.md");
    for step in [
        "docker build -t $IMG .",
        "docker push $IMG",
        "opkit deploy --image $IMG",
    ] {
        assert!(readme.contains(step), "README lacks {step:?}");
    }
}

/// `(name, kind, source, req, path)` of the opkit dependencies, as `cargo metadata` reads the
/// project's manifest (offline, no resolution).
fn opkit_dependencies(dir: &Path) -> Vec<(String, String, String, String, String)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(dir)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo cannot read the manifest\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    let mut deps: Vec<_> = metadata["packages"][0]["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| s(&d["name"]).starts_with("opkit"))
        .map(|d| {
            (
                s(&d["name"]),
                s(&d["kind"]),
                s(&d["source"]),
                s(&d["req"]),
                s(&d["path"]),
            )
        })
        .collect();
    deps.sort();
    deps
}

#[test]
fn init_takes_opkit_from_crates_io_or_git_as_cargo_reads_the_manifest() {
    let crates_io = "registry+https://github.com/rust-lang/crates.io-index";
    let dep = |name: &str, kind: &str, source: &str, req: &str| {
        (
            name.to_string(),
            kind.to_string(),
            source.to_string(),
            req.to_string(),
            String::new(),
        )
    };

    let dir = init("shop", &["--opkit-version", "0.1"]);
    assert_eq!(
        opkit_dependencies(dir.path()),
        [
            dep("opkit", "", crates_io, "^0.1"),
            dep("opkit-testenv", "dev", crates_io, "^0.1"),
        ]
    );
    // cargo resolves on the first build; opkit's own lock file lists opkit as a path.
    assert!(!dir.path().join("Cargo.lock").exists());
    assert!(read(dir.path(), "README.md").contains("takes opkit from crates.io, version 0.1"));

    let url = "https://github.com/opkit/opkit";
    for (flag, value, suffix) in [
        ("--opkit-rev", "0123abcd", "?rev=0123abcd"),
        ("--opkit-branch", "main", "?branch=main"),
        ("--opkit-tag", "v0.1.0", "?tag=v0.1.0"),
    ] {
        let dir = init("shop", &["--opkit-git", url, flag, value]);
        let source = format!("git+{url}{suffix}");
        assert_eq!(
            opkit_dependencies(dir.path()),
            [
                dep("opkit", "", &source, "*"),
                dep("opkit-testenv", "dev", &source, "*"),
            ],
            "{flag}"
        );
    }
    let dir = init("shop", &["--opkit-git", url]);
    let source = format!("git+{url}");
    assert_eq!(
        opkit_dependencies(dir.path()),
        [
            dep("opkit", "", &source, "*"),
            dep("opkit-testenv", "dev", &source, "*"),
        ]
    );
}

#[test]
fn init_takes_opkit_from_a_checkout_by_path_with_its_lock_file() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let dir = init("shop", &["--opkit-path", checkout.to_str().unwrap()]);
    let path = |krate: &str| checkout.join("crates").join(krate).display().to_string();
    assert_eq!(
        opkit_dependencies(dir.path()),
        [
            (
                "opkit".into(),
                String::new(),
                String::new(),
                "*".into(),
                path("opkit")
            ),
            (
                "opkit-testenv".into(),
                "dev".into(),
                String::new(),
                "*".into(),
                path("opkit-testenv")
            ),
        ]
    );
    assert_eq!(
        read(dir.path(), "Cargo.lock"),
        read(&checkout, "Cargo.lock")
    );
    // The README warns that the image cannot be built this way, and says what to change.
    let readme = read(dir.path(), "README.md");
    assert!(
        readme.contains("before building the image, switch the `opkit` and `opkit-testenv` lines"),
        "{readme}"
    );
}

#[test]
fn init_refuses_two_opkit_sources_or_a_git_ref_without_git_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "init",
        "--domain",
        "example.com",
        "--repo",
        "r",
        "--name",
        "shop",
    ];
    for (extra, needle) in [
        (
            &["--opkit-version", "0.1", "--opkit-path", "."][..],
            "cannot be used with",
        ),
        (
            &["--opkit-version", "0.1", "--opkit-git", "https://x/y"][..],
            "cannot be used with",
        ),
        (
            &["--opkit-path", ".", "--opkit-git", "https://x/y"][..],
            "cannot be used with",
        ),
        (
            &[
                "--opkit-git",
                "https://x/y",
                "--opkit-rev",
                "a",
                "--opkit-tag",
                "b",
            ][..],
            "cannot be used with",
        ),
        (&["--opkit-rev", "a"][..], "--opkit-git <URL>"),
        (&["--opkit-branch", "main"][..], "--opkit-git <URL>"),
        (
            &["--opkit-version", "not a version"][..],
            "--opkit-version \"not a version\" is not a version requirement",
        ),
        (
            &["--opkit-git", "github.com/opkit/opkit"][..],
            "give the scheme, e.g. https://",
        ),
    ] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let out = opkit(dir.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "opkit {} succeeded", args.join(" "));
        assert!(stderr.contains(needle), "expected {needle:?} in:\n{stderr}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
