//! A micro measurement of `Policy::authorize`, run on demand:
//! `cargo test --release -p opkit-rbac --test throughput -- --ignored --nocapture`.
//! It asserts decisions, never timings.

mod common;

use std::hint::black_box;
use std::time::Instant;

use common::*;
use opkit_rbac::{Policy, UserInfo, bootstrap_policy};

#[test]
#[ignore = "a measurement; run explicitly with --release"]
fn authorize_cost_with_ten_thousand_bindings() {
    const N: usize = 10_000;
    let defaults = bootstrap_policy();
    let role_bindings: Vec<_> = (0..N)
        .map(|i| {
            let role = ["admin", "edit", "view"][i % 3];
            binding(
                &format!("ns-{}", i % 500),
                &format!("rb-{i}"),
                "ClusterRole",
                role,
                vec![user(&format!("user-{i}"))],
            )
        })
        .collect();
    let mut cluster_bindings = defaults.cluster_role_bindings;
    cluster_bindings.extend((0..N).map(|i| {
        cluster_binding(
            &format!("crb-{i}"),
            "view",
            vec![user(&format!("other-{i}"))],
        )
    }));
    let started = Instant::now();
    let policy = Policy::new(
        defaults.cluster_roles,
        vec![],
        cluster_bindings,
        role_bindings,
    );
    println!(
        "Policy::new with {} bindings: {:?}",
        policy.binding_count(),
        started.elapsed()
    );

    let viewer = UserInfo::new("user-2", ["system:authenticated"]);
    let allowed = resource("list", "apps", "deployments", Some("ns-2"));
    let denied = resource("delete", "", "secrets", Some("ns-2"));
    let discovery = path("get", "/apis/apps/v1");
    assert!(policy.authorize(&viewer, &allowed).is_allowed());
    assert!(!policy.authorize(&viewer, &denied).is_allowed());
    assert!(policy.authorize(&viewer, &discovery).is_allowed());

    const ITERATIONS: u32 = 200_000;
    for (label, request) in [
        ("allowed", allowed),
        ("denied", denied),
        ("discovery", discovery),
    ] {
        let started = Instant::now();
        for _ in 0..ITERATIONS {
            black_box(policy.authorize(black_box(&viewer), black_box(&request)));
        }
        println!(
            "authorize ({label}): {:?} per call",
            started.elapsed() / ITERATIONS
        );
    }
}
