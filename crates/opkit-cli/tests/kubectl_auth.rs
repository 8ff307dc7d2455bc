//! End-to-end tests of authentication and RBAC: the real kubectl v1.35 (installed by
//! `scripts/install-tools.sh` into `.tools/bin/`) against `opkit up`, with identities issued by
//! `opkit kubeconfig` (client certificates for users, TokenRequest tokens for service
//! accounts) and by `kubectl create token`.
//!
//! Unlike the other kubectl tests, these run `opkit up --data-dir`, not `--ephemeral`:
//! `opkit kubeconfig --user` signs certificates with the CA the control plane keeps in its data
//! directory, exactly as a user would run it next to a local control plane. Each test starts its
//! own control plane in its own temporary directory, so the tests may run in parallel.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{
    COMMAND_TIMEOUT, Output, READY_TIMEOUT, drain, eventually_within, parse_ready_line, run,
    tool_path,
};

/// The token cache of the server keeps a verified service-account token for up to 10 s (as
/// upstream's token authenticator cache does); revocation must show within this bound.
const REVOCATION_DEADLINE: Duration = Duration::from_secs(30);

/// A running `opkit up --data-dir <tmp>/data --listen 127.0.0.1:0`, killed on drop.
struct Plane {
    child: Child,
    dir: tempfile::TempDir,
    url: String,
    admin: PathBuf,
    log: Arc<Mutex<String>>,
}

impl Plane {
    fn start() -> Plane {
        let dir = tempfile::Builder::new()
            .prefix("opkit-auth-")
            .tempdir()
            .expect("create a temporary directory");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
        cmd.args(["up", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start opkit up");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut readers = Vec::new();
        {
            let log = Arc::clone(&log);
            readers.push(thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    log.lock().unwrap().push_str(&format!("[stdout] {line}\n"));
                    let _ = tx.send(line);
                }
            }));
        }
        {
            let log = Arc::clone(&log);
            readers.push(thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    log.lock().unwrap().push_str(&format!("[stderr] {line}\n"));
                }
            }));
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        let (url, admin) = loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    if let Some(ready) = parse_ready_line(&line) {
                        break ready;
                    }
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let why = match e {
                        RecvTimeoutError::Timeout => format!("no ready line in {READY_TIMEOUT:?}"),
                        RecvTimeoutError::Disconnected => "it exited".to_string(),
                    };
                    drain(readers);
                    panic!("opkit up: {why}; output:\n{}", log.lock().unwrap());
                }
            }
        };
        assert_eq!(
            admin,
            dir.path().join("data/kubeconfig"),
            "opkit up --data-dir writes the admin kubeconfig into the data dir"
        );
        Plane {
            child,
            dir,
            url,
            admin,
            log,
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// kubectl with `kubeconfig`, HOME private to this test, KUBECONFIG unset.
    fn kubectl(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        let mut cmd = Command::new(tool_path("kubectl"));
        cmd.current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env_remove("KUBECONFIG")
            .env_remove("KUBECACHEDIR")
            .env_remove("XDG_CACHE_HOME")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args);
        run(cmd, None, COMMAND_TIMEOUT)
    }

    /// kubectl as `kubeconfig`; fails the test unless it exits 0; returns stdout.
    fn kubectl_ok(&self, kubeconfig: &Path, args: &[&str]) -> String {
        let out = self.kubectl(kubeconfig, args);
        assert!(out.success(), "kubectl should have succeeded\n{out}");
        out.stdout
    }

    /// kubectl as the admin; fails the test unless it exits 0; returns stdout.
    fn admin_ok(&self, args: &[&str]) -> String {
        self.kubectl_ok(&self.admin, args)
    }

    /// kubectl as `kubeconfig`; fails the test unless it exits with `code`; returns the output.
    fn kubectl_exits(&self, kubeconfig: &Path, code: i32, args: &[&str]) -> Output {
        let out = self.kubectl(kubeconfig, args);
        assert_eq!(out.code, Some(code), "unexpected exit code\n{out}");
        out
    }

    /// `opkit ARGS... --data-dir <data dir>`.
    fn opkit(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
        cmd.current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .args(args)
            .arg("--data-dir")
            .arg(self.data_dir());
        run(cmd, None, COMMAND_TIMEOUT)
    }

    /// `opkit kubeconfig --user USER [--group G]... --output <tmp>/USER.kubeconfig`.
    fn user_kubeconfig(&self, user: &str, groups: &[&str]) -> PathBuf {
        let path = self.path(&format!("{user}.kubeconfig"));
        let mut args = vec!["kubeconfig", "--user", user];
        for group in groups {
            args.extend(["--group", group]);
        }
        args.extend(["--output", path.to_str().expect("UTF-8 temporary path")]);
        let out = self.opkit(&args);
        assert!(out.success(), "opkit kubeconfig should succeed\n{out}");
        path
    }

    /// A kubeconfig file for this server with the given `user:` entry (YAML, indented by 4).
    fn kubeconfig_with_user(&self, name: &str, user: &str) -> PathBuf {
        let path = self.path(&format!("{name}.kubeconfig"));
        let ca = self.data_dir().join("ca.crt");
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: opkit\n  cluster:\n    server: {}\n    \
             certificate-authority: {}\nusers:\n- name: {name}\n  user:\n{user}contexts:\n- name: opkit\n  \
             context:\n    cluster: opkit\n    user: {name}\n    namespace: default\ncurrent-context: opkit\n",
            self.url,
            ca.display()
        );
        std::fs::write(&path, yaml).expect("write a kubeconfig");
        path
    }

    /// Stops the server (SIGKILL) and waits for it.
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Plane {
    fn drop(&mut self) {
        self.stop();
        if thread::panicking() {
            eprintln!(
                "--- opkit up output ({}) ---\n{}",
                self.url,
                self.log.lock().unwrap()
            );
        }
    }
}

/// The value of the `ATTRIBUTE VALUE` row `name` in `kubectl auth whoami` output.
fn whoami_field(stdout: &str, name: &str) -> Option<String> {
    stdout.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        rest.starts_with(char::is_whitespace)
            .then(|| rest.trim().to_string())
    })
}

fn assert_whoami(plane: &Plane, kubeconfig: &Path, user: &str, groups: &str) {
    let out = plane.kubectl_ok(kubeconfig, &["auth", "whoami"]);
    assert_eq!(
        whoami_field(&out, "Username").as_deref(),
        Some(user),
        "{out}"
    );
    assert_eq!(
        whoami_field(&out, "Groups").as_deref(),
        Some(groups),
        "{out}"
    );
}

/// Runs kubectl as `kubeconfig` until it fails with `expected` on stderr.
fn wait_until_refused(plane: &Plane, kubeconfig: &Path, args: &[&str], expected: &str) {
    eventually_within(
        &format!("kubectl {args:?} refused with {expected:?}"),
        REVOCATION_DEADLINE,
        || {
            let out = plane.kubectl(kubeconfig, args);
            if !out.success() && out.stderr.contains(expected) {
                Ok(())
            } else {
                Err(out.to_string())
            }
        },
    );
}

const UNAUTHORIZED: &str = "error: You must be logged in to the server (Unauthorized)";

#[test]
fn can_i_says_yes_for_admin_and_no_for_a_fresh_user_until_a_view_binding() {
    let plane = Plane::start();
    let admin = plane.admin.clone();
    let out = plane.kubectl_exits(&admin, 0, &["auth", "can-i", "list", "pods"]);
    assert_eq!(out.stdout.trim(), "yes");

    let alice = plane.user_kubeconfig("alice", &[]);
    let out = plane.kubectl_exits(&alice, 1, &["auth", "can-i", "list", "pods"]);
    assert_eq!(out.stdout.trim(), "no", "{out}");

    // A fresh user holds system:basic-user, system:discovery and system:public-info-viewer.
    let list = plane.kubectl_ok(&alice, &["auth", "can-i", "--list"]);
    let rows = common::table(&list);
    let has = |first: &str, verbs: &str| {
        rows.iter()
            .any(|r| r[0] == first && r.last().map(String::as_str) == Some(verbs))
    };
    for review in [
        "selfsubjectaccessreviews.authorization.k8s.io",
        "selfsubjectrulesreviews.authorization.k8s.io",
        "selfsubjectreviews.authentication.k8s.io",
    ] {
        assert!(
            has(review, "[create]"),
            "missing {review} [create] in\n{list}"
        );
    }
    for url in ["[/api]", "[/apis]", "[/version]", "[/healthz]"] {
        assert!(has(url, "[get]"), "missing {url} [get] in\n{list}");
    }
    assert!(
        !list.contains("pods"),
        "a fresh user has no rules on pods:\n{list}"
    );

    plane.admin_ok(&["create", "namespace", "team"]);
    let out = plane.admin_ok(&[
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
        "-n",
        "team",
    ]);
    assert_eq!(
        out.trim(),
        "rolebinding.rbac.authorization.k8s.io/alice-view created"
    );
    for (args, code, answer) in [
        (["list", "pods", "-n", "team"], 0, "yes"),
        (["list", "secrets", "-n", "team"], 1, "no"),
        (["delete", "pods", "-n", "team"], 1, "no"),
        (["list", "pods", "-n", "default"], 1, "no"),
    ] {
        let mut all = vec!["auth", "can-i"];
        all.extend(args);
        let out = plane.kubectl_exits(&alice, code, &all);
        assert_eq!(out.stdout.trim(), answer, "{out}");
    }
    let out = plane.kubectl_ok(&alice, &["get", "pods", "-n", "team"]);
    assert_eq!(out.trim(), "", "no pods, and no error");
}

#[test]
fn listing_pods_without_permission_is_forbidden_with_upstreams_message() {
    let plane = Plane::start();
    plane.admin_ok(&["create", "namespace", "other"]);
    let alice = plane.user_kubeconfig("alice", &[]);
    let out = plane.kubectl_exits(&alice, 1, &["get", "pods", "-n", "other"]);
    assert!(
        out.stderr.contains(
            "Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list \
             resource \"pods\" in API group \"\" in the namespace \"other\""
        ),
        "{out}"
    );
}

#[test]
fn a_token_from_kubectl_create_token_acts_as_the_service_account_until_it_is_deleted() {
    let plane = Plane::start();
    let out = plane.admin_ok(&["create", "serviceaccount", "robot"]);
    assert_eq!(out.trim(), "serviceaccount/robot created");
    // kubectl sends the TokenRequest as protobuf.
    let token = plane.admin_ok(&["create", "token", "robot"]);
    let token = token.trim();
    assert!(token.starts_with("eyJ"), "a JWT, got {token:?}");
    let robot = plane.kubeconfig_with_user("robot", &format!("    token: {token}\n"));
    let groups = "[system:serviceaccounts system:serviceaccounts:default system:authenticated]";
    assert_whoami(
        &plane,
        &robot,
        "system:serviceaccount:default:robot",
        groups,
    );

    // The same through `opkit kubeconfig --service-account`.
    let out = plane.opkit(&["kubeconfig", "--service-account", "default/robot"]);
    assert!(out.success(), "{out}");
    assert!(out.stdout.contains("namespace: default"), "{out}");
    let from_opkit = plane.path("robot-opkit.kubeconfig");
    std::fs::write(&from_opkit, &out.stdout).unwrap();
    assert_whoami(
        &plane,
        &from_opkit,
        "system:serviceaccount:default:robot",
        groups,
    );
    let out = plane.kubectl_exits(&from_opkit, 1, &["get", "pods"]);
    assert!(
        out.stderr.contains(
            "pods is forbidden: User \"system:serviceaccount:default:robot\" cannot list \
             resource \"pods\" in API group \"\" in the namespace \"default\""
        ),
        "{out}"
    );

    plane.admin_ok(&["delete", "serviceaccount", "robot"]);
    wait_until_refused(&plane, &robot, &["auth", "whoami"], UNAUTHORIZED);
    wait_until_refused(&plane, &from_opkit, &["get", "pods"], UNAUTHORIZED);

    // A new service account of the same name does not revive the old tokens (new uid).
    plane.admin_ok(&["create", "serviceaccount", "robot"]);
    let out = plane.kubectl_exits(&robot, 1, &["auth", "whoami"]);
    assert!(out.stderr.contains(UNAUTHORIZED), "{out}");
}

#[test]
fn opkit_kubeconfig_for_a_missing_service_account_needs_create() {
    let plane = Plane::start();
    let out = plane.opkit(&["kubeconfig", "--service-account", "default/ghost"]);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stderr.contains(
            "service account default/ghost not found: pass --create, or create it with \
             `kubectl create serviceaccount ghost -n default`"
        ),
        "{out}"
    );

    plane.admin_ok(&["create", "namespace", "team"]);
    let path = plane.path("ghost.kubeconfig");
    let out = plane.opkit(&[
        "kubeconfig",
        "--service-account",
        "team/ghost",
        "--create",
        "--valid-for",
        "30m",
        "--output",
        path.to_str().unwrap(),
    ]);
    assert!(out.success(), "{out}");
    assert_eq!(out.stdout, "", "the kubeconfig goes to the file only");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("namespace: team"), "{text}");
    let out = plane.admin_ok(&["get", "serviceaccount", "ghost", "-n", "team", "-o", "name"]);
    assert_eq!(out.trim(), "serviceaccount/ghost");
    let groups = "[system:serviceaccounts system:serviceaccounts:team system:authenticated]";
    assert_whoami(&plane, &path, "system:serviceaccount:team:ghost", groups);

    // Asking again with --create reuses the existing account.
    let out = plane.opkit(&["kubeconfig", "--service-account", "team/ghost", "--create"]);
    assert!(out.success(), "{out}");
}

#[test]
fn impersonation_needs_the_impersonate_verb_and_acts_as_the_impersonated_user() {
    let plane = Plane::start();
    let admin = plane.admin.clone();
    plane.admin_ok(&["create", "namespace", "team"]);

    let out = plane.kubectl_exits(&admin, 1, &["get", "pods", "--as", "alice"]);
    assert!(
        out.stderr.contains(
            "Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list \
             resource \"pods\" in API group \"\" in the namespace \"default\""
        ),
        "{out}"
    );
    plane.admin_ok(&[
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
        "-n",
        "team",
    ]);
    let out = plane.kubectl_exits(
        &admin,
        0,
        &[
            "auth", "can-i", "list", "pods", "-n", "team", "--as", "alice",
        ],
    );
    assert_eq!(out.stdout.trim(), "yes");
    let out = plane.kubectl_exits(
        &admin,
        1,
        &[
            "auth", "can-i", "list", "secrets", "-n", "team", "--as", "alice",
        ],
    );
    assert_eq!(out.stdout.trim(), "no");

    let alice = plane.user_kubeconfig("alice", &[]);
    let out = plane.kubectl_exits(&alice, 1, &["get", "pods", "-n", "team", "--as", "bob"]);
    assert!(
        out.stderr.contains(
            "Error from server (Forbidden): users \"bob\" is forbidden: User \"alice\" cannot \
             impersonate resource \"users\" in API group \"\" at the cluster scope"
        ),
        "{out}"
    );

    // Allowed to impersonate users, alice acts as bob, who may not list pods...
    plane.admin_ok(&[
        "create",
        "clusterrole",
        "impersonate-users",
        "--verb=impersonate",
        "--resource=users",
    ]);
    plane.admin_ok(&[
        "create",
        "clusterrolebinding",
        "alice-impersonates",
        "--clusterrole=impersonate-users",
        "--user=alice",
    ]);
    let out = plane.kubectl_exits(&alice, 1, &["get", "pods", "-n", "team", "--as", "bob"]);
    assert!(
        out.stderr
            .contains("User \"bob\" cannot list resource \"pods\""),
        "{out}"
    );
    // ...but not groups.
    let out = plane.kubectl_exits(
        &alice,
        1,
        &[
            "get",
            "pods",
            "-n",
            "team",
            "--as",
            "bob",
            "--as-group",
            "devs",
        ],
    );
    assert!(
        out.stderr.contains(
            "Error from server (Forbidden): groups \"devs\" is forbidden: User \"alice\" cannot \
             impersonate resource \"groups\" in API group \"\" at the cluster scope"
        ),
        "{out}"
    );

    // The admin may impersonate a user in a group; the group's bindings apply.
    plane.admin_ok(&[
        "create",
        "rolebinding",
        "devs-view",
        "--clusterrole=view",
        "--group=devs",
        "-n",
        "team",
    ]);
    let as_bob_in_devs = ["--as", "bob", "--as-group", "devs"];
    let mut args = vec!["auth", "whoami"];
    args.extend(as_bob_in_devs);
    let out = plane.kubectl_ok(&admin, &args);
    assert_eq!(
        whoami_field(&out, "Username").as_deref(),
        Some("bob"),
        "{out}"
    );
    assert_eq!(
        whoami_field(&out, "Groups").as_deref(),
        Some("[devs system:authenticated]"),
        "{out}"
    );
    let mut args = vec!["get", "pods", "-n", "team"];
    args.extend(as_bob_in_devs);
    plane.kubectl_ok(&admin, &args);
    let out = plane.kubectl_exits(&admin, 1, &["get", "pods", "-n", "team", "--as", "bob"]);
    assert!(
        out.stderr
            .contains("User \"bob\" cannot list resource \"pods\""),
        "without the group bob may not: {out}"
    );
}

#[test]
fn rbac_writers_cannot_grant_permissions_they_do_not_hold() {
    let plane = Plane::start();
    plane.admin_ok(&["create", "namespace", "team"]);
    plane.admin_ok(&[
        "create",
        "role",
        "rbac-writer",
        "--verb=create",
        "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io",
        "-n",
        "team",
    ]);
    plane.admin_ok(&[
        "create",
        "role",
        "pod-getter",
        "--verb=get",
        "--resource=pods",
        "-n",
        "team",
    ]);
    for role in ["rbac-writer", "pod-getter"] {
        plane.admin_ok(&[
            "create",
            "rolebinding",
            &format!("alice-{role}"),
            &format!("--role={role}"),
            "--user=alice",
            "-n",
            "team",
        ]);
    }
    let alice = plane.user_kubeconfig("alice", &[]);

    let out = plane.kubectl_exits(
        &alice,
        1,
        &[
            "create",
            "role",
            "r",
            "--verb=delete",
            "--resource=pods",
            "-n",
            "team",
        ],
    );
    assert!(
        out.stderr.contains(
            "Error from server (Forbidden): roles.rbac.authorization.k8s.io \"r\" is forbidden: \
             user \"alice\""
        ) && out
            .stderr
            .contains("is attempting to grant RBAC permissions not currently held"),
        "{out}"
    );
    assert!(
        out.stderr.contains("Verbs:[\"delete\"]"),
        "the refusal lists the missing rule: {out}"
    );

    let out = plane.kubectl_ok(
        &alice,
        &[
            "create",
            "role",
            "r",
            "--verb=get",
            "--resource=pods",
            "-n",
            "team",
        ],
    );
    assert_eq!(out.trim(), "role.rbac.authorization.k8s.io/r created");

    let out = plane.kubectl_exits(
        &alice,
        1,
        &[
            "create",
            "rolebinding",
            "b",
            "--clusterrole=admin",
            "--user=bob",
            "-n",
            "team",
        ],
    );
    assert!(
        out.stderr
            .contains("rolebindings.rbac.authorization.k8s.io \"b\" is forbidden")
            && out
                .stderr
                .contains("is attempting to grant RBAC permissions not currently held"),
        "{out}"
    );
    // Binding a role whose rules alice holds is fine.
    let out = plane.kubectl_ok(
        &alice,
        &[
            "create",
            "rolebinding",
            "b",
            "--role=r",
            "--user=bob",
            "-n",
            "team",
        ],
    );
    assert_eq!(
        out.trim(),
        "rolebinding.rbac.authorization.k8s.io/b created"
    );
}

#[test]
fn whoami_with_a_client_certificate_shows_its_user_and_groups() {
    let plane = Plane::start();
    let carol = plane.user_kubeconfig("carol", &["devs", "ops"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&carol).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "a kubeconfig holds a private key");
    }
    assert_whoami(&plane, &carol, "carol", "[devs ops system:authenticated]");

    let out = plane.opkit(&[
        "kubeconfig",
        "--user",
        "dave",
        "--group",
        "a",
        "--group",
        "b",
        "--group",
        "c",
    ]);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stderr
            .contains("error: a client certificate carries at most 2 groups, 3 given"),
        "{out}"
    );
}

#[test]
fn health_and_version_need_no_credentials_but_the_api_does() {
    let plane = Plane::start();
    // kubectl prompts for a user name when the kubeconfig's user has nothing that identifies it,
    // so the closest it gets to "no credentials" is a bare user name: it sends only a Basic
    // header, which the server (like upstream, which has no basic authentication) does not
    // take as a credential.
    let nobody = plane.kubeconfig_with_user("nobody", "    username: nobody\n");
    let out = plane.kubectl_ok(&nobody, &["get", "--raw", "/healthz"]);
    assert_eq!(out, "ok");
    let out = plane.kubectl_ok(&nobody, &["get", "--raw", "/version"]);
    let version: serde_json::Value = serde_json::from_str(&out).expect("version JSON");
    assert_eq!(version["major"], "1", "{out}");
    // With no discovery cache yet, kubectl fails already in discovery, where client-go words
    // a 401 generically (as it does against upstream servers).
    let out = plane.kubectl_exits(&nobody, 1, &["get", "ns"]);
    assert!(
        out.stderr
            .contains("error: You must be logged in to the server (the server has asked for the client to provide credentials)"),
        "{out}"
    );
    // Once discovery is cached (by the admin, same HOME), the list itself gets the 401 Status.
    plane.admin_ok(&["get", "ns"]);
    let out = plane.kubectl_exits(&nobody, 1, &["get", "ns"]);
    assert!(out.stderr.contains(UNAUTHORIZED), "{out}");

    // A token the server never issued is refused the same way.
    let forged = plane.kubeconfig_with_user("forged", "    token: not-a-token\n");
    let out = plane.kubectl_exits(&forged, 1, &["get", "ns"]);
    assert!(out.stderr.contains(UNAUTHORIZED), "{out}");
}

#[test]
fn opkit_kubeconfig_explains_a_missing_data_dir_and_a_stopped_server() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args(["kubeconfig", "--user", "alice", "--data-dir"])
        .arg(&missing);
    let out = run(cmd, None, COMMAND_TIMEOUT);
    assert_eq!(out.code, Some(1), "{out}");
    assert_eq!(
        out.stderr.trim(),
        format!(
            "error: no control plane data in {}: run `opkit up` first or pass --data-dir",
            missing.display()
        )
    );

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args([
        "kubeconfig",
        "--user",
        "alice",
        "--service-account",
        "default/robot",
    ]);
    let out = run(cmd, None, COMMAND_TIMEOUT);
    assert_eq!(
        out.code,
        Some(2),
        "--user and --service-account exclude each other\n{out}"
    );

    let mut plane = Plane::start();
    plane.stop();
    let out = plane.opkit(&["kubeconfig", "--service-account", "default/robot"]);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stderr.contains("cannot reach the control plane at ")
            && out.stderr.contains("start it with `opkit up"),
        "{out}"
    );
    // A user's certificate needs only the data dir, not a running server.
    let out = plane.opkit(&["kubeconfig", "--user", "alice"]);
    assert!(out.success(), "{out}");
    assert!(out.stdout.contains("client-certificate-data: "), "{out}");
}
