//! `chaos-gallery --bug NAME [--fixed]`: one of eight small operators with a seeded bug of the
//! kind `opkit test --chaos` exists to find, or (`--fixed`, or `CHAOS_GALLERY_FIXED=true`) its
//! fixed twin. Each bug is a module of a few dozen lines over a shared ConfigMap-based resource
//! ([`common`]); `suites/<bug>/` holds the kuttl suite that runs it as its background command.
//! The campaign that catches each bug, and passes its twin, is in `crates/opkit-cli/tests/up.rs`.

mod blind_retry;
mod cleanup;
mod common;
mod heartbeat;
mod resize;
mod rollout;
mod scale_down;
mod stale_scale;
mod storage;

use clap::{Parser, ValueEnum};

/// The seeded bugs, named as their suites are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Bug {
    /// Scale-down deletes a pod and records the new size in a second call (crash).
    ScaleDown,
    /// A resize checks "needed?" against the template it wrote itself (crash).
    Resize,
    /// A config rollout's "changed?" flag is lost on a crash between two writes (crash).
    Rollout,
    /// Cleanup and adoption by child name instead of UID (unobserved).
    Cleanup,
    /// A destructive scale-down acting on a stale spec (stale).
    StaleScale,
    /// Storage deleted only when a transient "terminating" state is seen (unobserved).
    Storage,
    /// A blind retry of a create with a generated name after a lost response (errors).
    BlindRetry,
    /// A status heartbeat that triggers itself (quiet).
    Heartbeat,
}

#[derive(Debug, Parser)]
#[command(about = "Seeded-bug operators for `opkit test --chaos`, each with a fixed twin")]
struct Args {
    /// The operator to run.
    #[arg(long, value_enum)]
    bug: Bug,
    /// Run the fixed twin instead of the buggy operator.
    #[arg(long, env = "CHAOS_GALLERY_FIXED")]
    fixed: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // kube's rustls needs a crypto provider; with more than one compiled in, none is picked.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fixed = args.fixed;
    let mut config = kube::Config::infer().await?;
    if fixed && args.bug == Bug::BlindRetry {
        // kube's client retries a request answered 429, 503 or 504 by itself, a create with a
        // generated name too: after a 504 whose create committed, that is a second job — the
        // very blind retry this twin is fixed of. It retries in its reconcile instead, after
        // looking for the job.
        config.default_retry = false;
    }
    let client = kube::Client::try_from(config)?;
    match args.bug {
        Bug::ScaleDown => {
            common::poll(client, "scale-down", false, scale_down::reconcile, fixed).await
        }
        Bug::Resize => common::poll(client, "resize", false, resize::reconcile, fixed).await,
        Bug::Rollout => common::poll(client, "rollout", false, rollout::reconcile, fixed).await,
        Bug::StaleScale => {
            common::poll(client, "stale-scale", true, stale_scale::reconcile, fixed).await
        }
        Bug::BlindRetry => {
            common::poll(client, "blind-retry", false, blind_retry::reconcile, fixed).await
        }
        Bug::Cleanup => common::watch(client, "cleanup", cleanup::handle, fixed).await,
        Bug::Storage => common::watch(client, "storage", storage::handle, fixed).await,
        Bug::Heartbeat => common::watch(client, "heartbeat", heartbeat::handle, fixed).await,
    }
}
