//! Crash safety on the real API path: the operator "dies" after its Nth API call (a client
//! whose every request past the Nth fails, or is never answered while the operation is
//! abandoned, as a killed process abandons it) during an install, an upgrade and an uninstall,
//! for every N up to the operation's whole request count; then a healthy operator runs the
//! same operation and the release must have converged: deployed, no `pending-*` left,
//! exactly one deployed revision, every object as the chart says (a further `ensure` finds
//! nothing to repair and writes nothing), and the real `helm history` reads it.

mod common;

use common::{APP_CHART, Faults, chart_dir, client_with, env, helm_ok, values};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ListParams, PostParams};
use opkit_chart::Chart;
use opkit_chart_operator::{
    EnsureOptions, Outcome, Releases, Status, UninstallOptions, UninstallOutcome,
};
use opkit_testenv::TestEnv;
use serde_json::json;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Install,
    Upgrade,
    Uninstall,
}

async fn namespace(env: &TestEnv, name: &str) {
    let api: Api<Namespace> = Api::all(env.client());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    api.create(&PostParams::default(), &ns).await.unwrap();
}

fn upgraded() -> serde_json::Value {
    json!({"message": "bye", "extra": false, "replicas": 2})
}

/// Runs `phase` with `releases`; the result of the operation itself.
async fn run(phase: Phase, releases: &Releases, chart: &Chart) -> Result<(), String> {
    let opts = EnsureOptions::default();
    match phase {
        Phase::Install => releases
            .ensure("app", chart, &values(json!({})), &opts)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Phase::Upgrade => releases
            .ensure("app", chart, &values(upgraded()), &opts)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Phase::Uninstall => match releases
            .uninstall("app", &UninstallOptions::default())
            .await
        {
            Ok(UninstallOutcome::Done) => Ok(()),
            Ok(other) => Err(format!("{other:?}")),
            Err(e) => Err(e.to_string()),
        },
    }
}

/// Asserts the release in `ns` converged after `phase`.
async fn assert_converged(
    env: &TestEnv,
    dir: &std::path::Path,
    ns: &str,
    phase: Phase,
    chart: &Chart,
    n: usize,
) {
    let client = env.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let releases = Releases::new(client.clone(), ns);
    if phase == Phase::Uninstall {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
        let left = secrets
            .list(&ListParams::default().labels("owner=helm,name=app"))
            .await
            .unwrap();
        assert!(
            left.items.is_empty(),
            "crash at {n}: records left after uninstall"
        );
        assert!(
            cms.get_opt("app-config").await.unwrap().is_none(),
            "crash at {n}"
        );
        assert!(
            cms.get_opt("app-keep").await.unwrap().is_some(),
            "crash at {n}: kept"
        );
        return;
    }
    let history = releases.history("app").await.unwrap();
    let deployed: Vec<u32> = history
        .iter()
        .filter(|r| r.status() == Status::Deployed)
        .map(|r| r.version)
        .collect();
    let newest = history.last().unwrap().version;
    assert_eq!(
        deployed,
        vec![newest],
        "crash at {n}: one deployed revision, the newest: {history:#?}"
    );
    assert!(
        history.iter().all(|r| !r.status().is_pending()),
        "crash at {n}: no pending revision left"
    );
    let (message, extra) = match phase {
        Phase::Install => ("hello", true),
        _ => ("bye", false),
    };
    let cm = cms.get("app-config").await.unwrap();
    assert_eq!(cm.data.unwrap()["message"], message, "crash at {n}");
    assert_eq!(
        cms.get_opt("app-extra").await.unwrap().is_some(),
        extra,
        "crash at {n}"
    );

    // Converged means the next ensure has nothing to do and writes nothing.
    let faults = Faults::counting();
    let check = Releases::new(client_with(env, &faults).await, ns);
    let want = if phase == Phase::Install {
        json!({})
    } else {
        upgraded()
    };
    let outcome = check
        .ensure("app", chart, &values(want), &EnsureOptions::default())
        .await
        .unwrap();
    assert!(
        matches!(outcome, Outcome::Unchanged { repaired: 0, .. }),
        "crash at {n}: {outcome:?}"
    );
    assert_eq!(faults.writes(), 0, "crash at {n}");

    // The real helm reads the history the crash and the recovery left.
    let out = helm_ok(env, dir, &["history", "app", "-n", ns, "-o", "json"]);
    let helm_history: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let helm_deployed: Vec<_> = helm_history
        .iter()
        .filter(|r| r["status"] == "deployed")
        .collect();
    assert_eq!(helm_deployed.len(), 1, "crash at {n}: {out}");
    assert_eq!(helm_deployed[0]["revision"], newest, "crash at {n}: {out}");
}

/// How the operator dies once its budget of API calls is spent.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Death {
    /// Every further request fails (the engine sees errors and may try to record them).
    Failing,
    /// No further request is answered; the operation is abandoned mid-request.
    Hanging,
}

async fn crash_at_every_call(phase: Phase, death: Death) {
    let env = env().await;
    let (dir, chart) = chart_dir(APP_CHART);
    for n in 1.. {
        let ns = format!(
            "{}-{}-{n}",
            format!("{phase:?}").to_lowercase(),
            format!("{death:?}").to_lowercase()
        );
        namespace(&env, &ns).await;
        let healthy = Releases::new(env.client(), &ns);
        if phase != Phase::Install {
            run(Phase::Install, &healthy, &chart).await.unwrap();
        }
        let faults = match death {
            Death::Failing => Faults::dying_after(n),
            Death::Hanging => Faults::hanging_after(n),
        };
        let dying = Releases::new(client_with(&env, &faults).await, &ns);
        let result = match death {
            Death::Failing => Some(run(phase, &dying, &chart).await),
            Death::Hanging => tokio::select! {
                r = run(phase, &dying, &chart) => Some(r),
                // The operation is stuck on an unanswered request: the process is killed.
                () = faults.reached() => None,
            },
        };
        faults.release();
        if !faults.died() {
            result
                .expect("the operation ended")
                .unwrap_or_else(|e| panic!("{phase:?} with {n} calls allowed: {e}"));
            assert!(n > 5, "{phase:?} made only {n} API calls");
            eprintln!(
                "{phase:?}: converged after a crash ({death:?}) at each of its first {} API calls",
                n - 1
            );
            break;
        }
        if let Some(result) = result {
            assert!(
                result.is_err(),
                "{phase:?} died at call {n} yet reported success"
            );
        }
        // A new operator process takes over.
        let restarted = Releases::new(env.client(), &ns);
        run(phase, &restarted, &chart)
            .await
            .unwrap_or_else(|e| panic!("{phase:?} after a crash ({death:?}) at call {n}: {e}"));
        assert_converged(&env, dir.path(), &ns, phase, &chart, n).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_converges_after_a_crash_at_every_api_call() {
    crash_at_every_call(Phase::Install, Death::Failing).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_converges_after_a_hang_at_every_api_call() {
    crash_at_every_call(Phase::Install, Death::Hanging).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_converges_after_a_crash_at_every_api_call() {
    crash_at_every_call(Phase::Upgrade, Death::Failing).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_converges_after_a_hang_at_every_api_call() {
    crash_at_every_call(Phase::Upgrade, Death::Hanging).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uninstall_converges_after_a_crash_at_every_api_call() {
    crash_at_every_call(Phase::Uninstall, Death::Failing).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uninstall_converges_after_a_hang_at_every_api_call() {
    crash_at_every_call(Phase::Uninstall, Death::Hanging).await;
}
