//! End-to-end tests of namespace termination and cascading deletion with the real kubectl
//! v1.35 (installed by `scripts/install-tools.sh`) against `opkit up` and its built-in
//! garbage collector and namespace controller.

mod common;

use common::{ControlPlane, eventually};

/// Polls until `kubectl get ARGS` reports NotFound.
fn wait_until_not_found(plane: &ControlPlane, args: &[&str]) {
    eventually(&format!("{args:?} to be gone"), || {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        let out = plane.kubectl(&full);
        if !out.success() && out.stderr.contains("NotFound") {
            Ok(())
        } else {
            Err(out.to_string())
        }
    });
}

fn uid(plane: &ControlPlane, args: &[&str]) -> String {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["-o", "jsonpath={.metadata.uid}"]);
    let uid = plane.kubectl_ok(&full);
    assert!(!uid.is_empty(), "{args:?} has a uid");
    uid
}

/// A ConfigMap owned by the ConfigMap `owner` (with `blockOwnerDeletion`).
fn dependent(name: &str, owner: &str, owner_uid: &str) -> String {
    format!(
        "apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: default
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: {owner}
    uid: {owner_uid}
    blockOwnerDeletion: true
data:
  k: v
"
    )
}

#[test]
fn kubectl_delete_namespace_returns_once_it_and_its_content_are_gone() {
    let plane = ControlPlane::start();
    plane.kubectl_ok(&["create", "namespace", "x"]);
    plane.kubectl_ok(&["create", "configmap", "c1", "-n", "x", "--from-literal=a=b"]);
    plane.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        "-n",
        "x",
        "--from-literal=a=b",
    ]);
    plane.kubectl_ok(&["create", "serviceaccount", "sa1", "-n", "x"]);

    let out = plane.kubectl_ok(&["delete", "namespace", "x", "--timeout=60s"]);
    assert!(out.contains("namespace \"x\" deleted"), "{out}");
    // kubectl waits for the namespace to vanish: nothing is left when it returns.
    let gone = plane.kubectl_fails(&["get", "namespace", "x"]);
    assert!(gone.stderr.contains("NotFound"), "{gone}");
    for kind in ["configmaps", "secrets", "serviceaccounts"] {
        let left = plane.kubectl_ok(&["get", kind, "-n", "x", "-o", "name"]);
        assert!(left.trim().is_empty(), "{kind} left in x: {left}");
    }

    let refused = plane.kubectl_fails(&["delete", "namespace", "default"]);
    assert!(
        refused.stderr.contains("this namespace may not be deleted"),
        "{refused}"
    );
}

#[test]
fn kubectl_delete_cascade_background_foreground_and_orphan() {
    let plane = ControlPlane::start();
    for policy in ["background", "foreground", "orphan"] {
        let owner = format!("owner-{policy}");
        plane.kubectl_ok(&["create", "configmap", &owner, "--from-literal=a=b"]);
        let owner_uid = uid(&plane, &["configmap", &owner]);
        let child = format!("child-{policy}");
        let out = plane.kubectl_stdin(
            &["apply", "-f", "-"],
            &dependent(&child, &owner, &owner_uid),
        );
        assert!(out.success(), "{child} is created\n{out}");
    }

    plane.kubectl_ok(&[
        "delete",
        "configmap",
        "owner-background",
        "--cascade=background",
    ]);
    wait_until_not_found(&plane, &["configmap", "child-background"]);

    // Foreground: kubectl waits for the owner, which waits for its blocking dependent.
    plane.kubectl_ok(&[
        "delete",
        "configmap",
        "owner-foreground",
        "--cascade=foreground",
        "--timeout=60s",
    ]);
    let child = plane.kubectl_fails(&["get", "configmap", "child-foreground"]);
    assert!(child.stderr.contains("NotFound"), "{child}");

    // Orphan: the owner goes, the dependent stays without the reference.
    plane.kubectl_ok(&[
        "delete",
        "configmap",
        "owner-orphan",
        "--cascade=orphan",
        "--timeout=60s",
    ]);
    let refs = plane.kubectl_ok(&[
        "get",
        "configmap",
        "child-orphan",
        "-o",
        "jsonpath={.metadata.ownerReferences}",
    ]);
    assert!(refs.trim().is_empty(), "owner references left: {refs}");
}
