//! The release engine a chart operator's reconciler calls: [`Releases::ensure`] brings a
//! release to a chart and values (install, upgrade, resume, or nothing plus drift repair),
//! [`Releases::uninstall`] removes it, [`Releases::rollback`] goes back to a revision.
//!
//! Every operation is crash-safe because the release record is written *before* the
//! cluster is touched and finished *after*: a new revision is stored `pending-install` or
//! `pending-upgrade`, the objects are applied, then it is marked `deployed` and older ones
//! `superseded`. If the operator dies anywhere in between, the next `ensure` finds the
//! pending revision — only one operator writes a release — and finishes it instead of
//! failing with Helm's "another operation is in progress". A failed install is recorded
//! `failed` and retried by the next `ensure`; nothing is ever uninstalled because an
//! operation failed (so no data is lost). An uninstall marks the release `uninstalling`
//! first, so an interrupted one is continued by the next call.
//!
//! An `ensure` of a release whose chart, values and rendered manifest are unchanged makes no
//! API write: each object of the manifest is read and compared field by field with what the
//! chart sets ([`crate::objects`]); only a missing or changed object is applied again.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use opkit_chart::{Capabilities, Chart};
use opkit_template::Value;

use crate::error::ActionError;
use crate::hooks::{HookContext, run_hooks};
use crate::objects::{Cluster, Object, covers, dropped, parse_document, parse_manifest, stamp};
use crate::release::{Hook, Info, Release, ReleaseChart, Status, Time, config_of};
use crate::render::{Rendered, Target, render};
use crate::storage::Storage;

/// Helm's default hook timeout (`--timeout 5m0s`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The releases of one namespace: a client, Helm's Secrets storage, and the options every
/// operation shares.
#[derive(Clone)]
pub struct Releases {
    cluster: Cluster,
    storage: Storage,
    namespace: String,
    max_history: usize,
}

/// How [`Releases::ensure`] deploys.
#[derive(Clone, Debug)]
pub struct EnsureOptions {
    /// The owner put on every object in the release's namespace (the custom resource).
    pub owner: Option<OwnerReference>,
    /// Replace objects the server refuses to change in place (operator-sdk's
    /// `upgrade-force` annotation, Helm's `--force`).
    pub force: bool,
    /// On a failed upgrade, roll back to the last deployed revision.
    pub rollback_on_failure: bool,
    /// Replace objects during that rollback (operator-sdk's `rollback-force`).
    pub rollback_force: bool,
    /// `.Capabilities`; discovered from the server when `None` (cached, and refreshed when
    /// a kind the chart renders is missing, as after a CRD install).
    pub capabilities: Option<Capabilities>,
    /// How long a hook Job or Pod may run.
    pub timeout: Duration,
}

impl Default for EnsureOptions {
    fn default() -> Self {
        EnsureOptions {
            owner: None,
            force: false,
            rollback_on_failure: false,
            rollback_force: false,
            capabilities: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// What [`Releases::ensure`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// A first revision (or a retry of a failed install) was deployed.
    Installed(Release),
    /// A new revision was deployed over a previous one.
    Upgraded(Release),
    /// The deployed revision already had this chart, these values and this manifest;
    /// `repaired` objects were missing or had drifted and were applied again.
    Unchanged {
        /// The deployed revision.
        release: Release,
        /// How many objects were put back.
        repaired: usize,
    },
}

impl Outcome {
    /// The deployed revision.
    pub fn release(&self) -> &Release {
        match self {
            Outcome::Installed(r) | Outcome::Upgraded(r) => r,
            Outcome::Unchanged { release, .. } => release,
        }
    }
}

/// How [`Releases::uninstall`] removes a release.
#[derive(Clone, Debug)]
pub struct UninstallOptions {
    /// Report [`UninstallOutcome::Waiting`] until every deleted object is gone (operator-sdk's
    /// `uninstall-wait`); the release records stay until then.
    pub wait: bool,
    /// How long a hook Job or Pod may run.
    pub timeout: Duration,
}

impl Default for UninstallOptions {
    fn default() -> Self {
        UninstallOptions {
            wait: false,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// What [`Releases::uninstall`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UninstallOutcome {
    /// The objects are deleted and the release records are gone (or there was no release).
    Done,
    /// Deleted objects still exist (finalizers); call again later. Says which.
    Waiting(String),
}

/// The operation a new revision is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Install,
    Upgrade,
    Rollback(u32),
}

impl Op {
    fn pending(self) -> (Status, String) {
        match self {
            Op::Install => (Status::PendingInstall, "Initial install underway".into()),
            Op::Upgrade => (Status::PendingUpgrade, "Preparing upgrade".into()),
            Op::Rollback(n) => (Status::PendingRollback, format!("Rollback to {n}")),
        }
    }

    fn events(self) -> (&'static str, &'static str) {
        match self {
            Op::Install => ("pre-install", "post-install"),
            Op::Upgrade => ("pre-upgrade", "post-upgrade"),
            Op::Rollback(_) => ("pre-rollback", "post-rollback"),
        }
    }

    fn done(self) -> String {
        match self {
            Op::Install => "Install complete".into(),
            Op::Upgrade => "Upgrade complete".into(),
            Op::Rollback(n) => format!("Rollback to {n}"),
        }
    }

    fn failed(self, name: &str, err: &ActionError) -> String {
        let verb = match self {
            Op::Install => "Release",
            Op::Upgrade => "Upgrade",
            Op::Rollback(_) => "Rollback",
        };
        format!("{verb} {name:?} failed: {err}")
    }
}

/// The newest revision below `revision` whose objects were applied (the base an upgrade
/// diffs against to find dropped objects).
fn base_below(history: &[Release], revision: u32) -> Option<&Release> {
    history.iter().rev().find(|r| {
        r.version < revision && matches!(r.status(), Status::Deployed | Status::Superseded)
    })
}

impl Releases {
    /// The releases of `namespace`, with Helm's field manager `helm` and at most 10
    /// revisions kept per release (operator-sdk's default).
    pub fn new(client: kube::Client, namespace: &str) -> Releases {
        Releases {
            cluster: Cluster::new(client.clone(), "helm".into()),
            storage: Storage::new(client, namespace),
            namespace: namespace.to_string(),
            max_history: 10,
        }
    }

    /// The releases of another namespace, sharing this one's client, options and
    /// discovery cache (make one [`Releases`] per operator and derive the others).
    pub fn in_namespace(&self, namespace: &str) -> Releases {
        Releases {
            cluster: self.cluster.clone(),
            storage: Storage::new(self.cluster.client.clone(), namespace),
            namespace: namespace.to_string(),
            max_history: self.max_history,
        }
    }

    /// Keeps at most `n` revisions per release (0: unlimited); the deployed one is never
    /// pruned.
    pub fn max_history(mut self, n: usize) -> Self {
        self.max_history = n;
        self
    }

    /// The field manager of server-side applies.
    pub fn field_manager(mut self, name: &str) -> Self {
        self.cluster.field_manager = name.to_string();
        self
    }

    /// The newest revision of `name`, if any.
    pub async fn last(&self, name: &str) -> Result<Option<Release>, ActionError> {
        Ok(self.storage.history(name).await?.pop())
    }

    /// Every revision of `name`, oldest first.
    pub async fn history(&self, name: &str) -> Result<Vec<Release>, ActionError> {
        Ok(self.storage.history(name).await?)
    }

    async fn capabilities(&self, opts: &EnsureOptions) -> Result<Capabilities, ActionError> {
        match &opts.capabilities {
            Some(c) => Ok(c.clone()),
            None => self.cluster.capabilities().await,
        }
    }

    /// Brings release `name` to (`chart`, `values`): installs, upgrades, resumes an
    /// interrupted (`pending-*`) operation, retries a failed one, or does nothing when the
    /// deployed revision already has this chart, these values and the same rendered
    /// manifest — then repairs drift of every object of the manifest (creates what is
    /// missing, applies what differs). Makes no API write when nothing changed. `values`
    /// are the user's values (stored as the release's `config`); the chart's defaults are
    /// coalesced under them.
    pub async fn ensure(
        &self,
        name: &str,
        chart: &Chart,
        values: &Value,
        opts: &EnsureOptions,
    ) -> Result<Outcome, ActionError> {
        let caps = self.capabilities(opts).await?;
        let history = self.storage.history(name).await?;
        let stored_chart = ReleaseChart::from_chart(chart);
        let config = config_of(values);
        let target = |revision, is_upgrade| Target {
            name,
            namespace: &self.namespace,
            revision,
            is_upgrade,
        };

        let (op, revision, resume) = match history.last() {
            None => (Op::Install, 1, None),
            Some(last) if last.status() == Status::Deployed => {
                let was_install = last
                    .info
                    .as_ref()
                    .is_some_and(|i| i.description == "Install complete");
                let rendered = render(
                    &self.cluster,
                    chart,
                    values,
                    target(last.version, !was_install),
                    caps.clone(),
                )
                .await?;
                if same_release(last, &stored_chart, &config, &rendered) {
                    self.settle_statuses(&history, last.version).await?;
                    let repaired = self.repair(last, opts).await?;
                    return Ok(Outcome::Unchanged {
                        release: last.clone(),
                        repaired,
                    });
                }
                (Op::Upgrade, last.version + 1, None)
            }
            Some(last) if last.status().is_pending() => {
                let op = if base_below(&history, last.version).is_some() {
                    Op::Upgrade
                } else {
                    Op::Install
                };
                (op, last.version, Some(last.clone()))
            }
            Some(last) => {
                let op = if base_below(&history, last.version + 1).is_some() {
                    Op::Upgrade
                } else {
                    Op::Install
                };
                (op, last.version + 1, None)
            }
        };
        let rendered = render(
            &self.cluster,
            chart,
            values,
            target(revision, op == Op::Upgrade),
            caps,
        )
        .await?;
        let (status, description) = op.pending();
        let first = base_below(&history, revision)
            .or(resume.as_ref())
            .and_then(|r| r.info.as_ref())
            .and_then(|i| i.first_deployed.clone());
        let now = Time::now();
        let release = Release {
            name: name.to_string(),
            info: Some(Info {
                first_deployed: Some(first.unwrap_or_else(|| now.clone())),
                last_deployed: Some(now),
                description,
                status,
                notes: rendered.notes.clone(),
                ..Info::default()
            }),
            chart: Some(stored_chart),
            config,
            manifest: rendered.manifest,
            hooks: rendered.hooks.iter().map(Hook::from).collect(),
            version: revision,
            namespace: self.namespace.clone(),
            apply_method: "ssa".into(),
        };
        let deployed = self
            .operate(
                release,
                resume.as_ref(),
                &history,
                op,
                opts,
                (op == Op::Install).then_some(chart),
                opts.force,
            )
            .await;
        match deployed {
            Ok(r) if op == Op::Install => Ok(Outcome::Installed(r)),
            Ok(r) => Ok(Outcome::Upgraded(r)),
            Err(e) => {
                if op == Op::Upgrade
                    && opts.rollback_on_failure
                    && let Some(base) = base_below(&history, revision)
                {
                    tracing::warn!(release = name, error = %e, "upgrade failed, rolling back to revision {}", base.version);
                    if let Err(rollback) =
                        self.rollback(name, base.version, opts.rollback_force).await
                    {
                        tracing::warn!(release = name, error = %rollback, "rollback failed");
                    }
                }
                Err(e)
            }
        }
    }

    /// Stores `release` (new, or over the pending record `resume`), deploys it and records
    /// the result: `deployed` (older revisions `superseded`) or `failed`.
    #[allow(clippy::too_many_arguments)]
    async fn operate(
        &self,
        mut release: Release,
        resume: Option<&Release>,
        history: &[Release],
        op: Op,
        opts: &EnsureOptions,
        crds: Option<&Chart>,
        force: bool,
    ) -> Result<Release, ActionError> {
        match resume {
            None => {
                if self.max_history > 0 {
                    self.storage
                        .prune(history, self.max_history.saturating_sub(1))
                        .await?;
                }
                self.storage.create(&release).await?;
            }
            Some(old) if !same_record(old, &release) => self.storage.update(&release).await?,
            Some(_) => {}
        }
        let base = base_below(history, release.version);
        let result = self
            .deploy(
                &mut release,
                base,
                op,
                opts.owner.as_ref(),
                opts.timeout,
                crds,
                force,
            )
            .await;
        match result {
            Ok(()) => {
                let info = release.info.get_or_insert_with(Info::default);
                info.last_deployed = Some(Time::now());
                if let Op::Rollback(n) = op {
                    info.rollback_revision = n;
                }
                release.set_status(Status::Deployed, op.done());
                self.storage.update(&release).await?;
                self.settle_statuses(history, release.version).await?;
                if self.max_history > 0 {
                    let now = self.storage.history(&release.name).await?;
                    self.storage.prune(&now, self.max_history).await?;
                }
                Ok(release)
            }
            Err(e) => {
                release.set_status(Status::Failed, op.failed(&release.name, &e));
                if let Err(record) = self.storage.update(&release).await {
                    tracing::warn!(release = release.name, error = %record, "could not record the failure; the next ensure resumes the pending revision");
                }
                Err(e)
            }
        }
    }

    /// Marks every revision other than `current` that still claims to be deployed or
    /// pending as `superseded` (a deployed one keeps its description, as in Helm's upgrade;
    /// a pending one that a crash left behind says so).
    async fn settle_statuses(&self, history: &[Release], current: u32) -> Result<(), ActionError> {
        for r in history {
            if r.version == current {
                continue;
            }
            let mut r = r.clone();
            match r.status() {
                Status::Deployed => {
                    r.info.get_or_insert_with(Info::default).status = Status::Superseded
                }
                s if s.is_pending() => {
                    r.set_status(Status::Superseded, "superseded by new release")
                }
                _ => continue,
            }
            self.storage.update(&r).await?;
        }
        Ok(())
    }

    /// Applies a revision: the chart's CRDs (`crds`, on install), pre hooks, every object in install
    /// order, deletion of objects the base revision had and this one drops, post hooks.
    #[allow(clippy::too_many_arguments)]
    async fn deploy(
        &self,
        release: &mut Release,
        base: Option<&Release>,
        op: Op,
        owner: Option<&OwnerReference>,
        timeout: Duration,
        crds: Option<&Chart>,
        force: bool,
    ) -> Result<(), ActionError> {
        if let Some(chart) = crds {
            self.install_crds(chart).await?;
        }
        let (pre, post) = op.events();
        let ctx = HookContext {
            cluster: &self.cluster,
            release: &release.name,
            namespace: &self.namespace,
            owner,
            timeout,
        };
        let mut hooks = std::mem::take(&mut release.hooks);
        let pre_result = run_hooks(&ctx, &mut hooks, pre).await;
        if let Err(e) = pre_result {
            release.hooks = hooks;
            return Err(e);
        }
        let applied = self
            .apply_manifest(&release.name, &release.manifest, owner, force)
            .await;
        let applied = match applied {
            Ok(objects) => objects,
            Err(e) => {
                release.hooks = hooks;
                return Err(e);
            }
        };
        if let Some(base) = base {
            let mut old = Vec::new();
            for mut o in parse_manifest(&base.manifest)? {
                // A kind the cluster no longer serves has nothing left to delete.
                match self.cluster.place(&mut o, &self.namespace).await {
                    Ok(_) => old.push(o),
                    Err(ActionError::UnknownKind { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            for o in dropped(&old, &applied) {
                if o.keep() {
                    continue;
                }
                let api = self.cluster.place(&mut o.clone(), &self.namespace).await?;
                self.cluster.delete(&api, &o).await?;
            }
        }
        let post_result = run_hooks(&ctx, &mut hooks, post).await;
        release.hooks = hooks;
        post_result
    }

    /// Server-side applies every object of `manifest` (in its order), stamped with Helm's
    /// ownership metadata and the owner; returns the objects as placed.
    async fn apply_manifest(
        &self,
        name: &str,
        manifest: &str,
        owner: Option<&OwnerReference>,
        force: bool,
    ) -> Result<Vec<Object>, ActionError> {
        let mut out = Vec::new();
        for mut obj in parse_manifest(manifest)? {
            let api = self.cluster.place(&mut obj, &self.namespace).await?;
            stamp(&mut obj, name, &self.namespace, owner);
            self.cluster.apply(&api, &obj, force).await?;
            out.push(obj);
        }
        Ok(out)
    }

    /// Creates the CRDs of the chart's (and subcharts') `crds/` directories that do not
    /// exist yet; like Helm, never updates or deletes them.
    async fn install_crds(&self, chart: &Chart) -> Result<(), ActionError> {
        for (_, data) in opkit_chart::crd_objects(chart, chart.name()) {
            for part in opkit_chart::split_manifests(&String::from_utf8_lossy(data)) {
                let Some(mut obj) = parse_document(&part)? else {
                    continue;
                };
                let api = self.cluster.place(&mut obj, &self.namespace).await?;
                if self.cluster.get(&api, &obj).await?.is_none() {
                    self.cluster.apply(&api, &obj, false).await?;
                }
            }
        }
        Ok(())
    }

    /// Puts back every object of the deployed `release` that is missing or differs from
    /// the manifest; reads only when nothing drifted. Returns how many were applied.
    async fn repair(&self, release: &Release, opts: &EnsureOptions) -> Result<usize, ActionError> {
        let mut repaired = 0;
        for mut obj in parse_manifest(&release.manifest)? {
            let api = self.cluster.place(&mut obj, &self.namespace).await?;
            stamp(
                &mut obj,
                &release.name,
                &self.namespace,
                opts.owner.as_ref(),
            );
            let in_sync = match self.cluster.get(&api, &obj).await? {
                Some(live) => covers(&obj.body, &live),
                None => false,
            };
            if !in_sync {
                tracing::info!(
                    release = release.name,
                    kind = obj.kind,
                    name = obj.describe(),
                    "repairing drift"
                );
                self.cluster.apply(&api, &obj, opts.force).await?;
                repaired += 1;
            }
        }
        Ok(repaired)
    }

    /// Rolls release `name` back to `revision`: a new revision with that revision's chart,
    /// values and manifest (Helm's `helm rollback`), replacing objects when `force`.
    pub async fn rollback(
        &self,
        name: &str,
        revision: u32,
        force: bool,
    ) -> Result<Release, ActionError> {
        let history = self.storage.history(name).await?;
        let last = history.last().ok_or(ActionError::NotFound)?;
        let source = history
            .iter()
            .find(|r| r.version == revision)
            .ok_or(ActionError::NotFound)?;
        let op = Op::Rollback(revision);
        let (status, description) = op.pending();
        let now = Time::now();
        let first = last.info.as_ref().and_then(|i| i.first_deployed.clone());
        let mut release = source.clone();
        release.version = last.version + 1;
        release.apply_method = "ssa".into();
        release.info = Some(Info {
            first_deployed: Some(first.unwrap_or_else(|| now.clone())),
            last_deployed: Some(now),
            description,
            status,
            notes: source
                .info
                .as_ref()
                .map(|i| i.notes.clone())
                .unwrap_or_default(),
            rollback_revision: revision,
            ..Info::default()
        });
        let opts = EnsureOptions::default();
        self.operate(release, None, &history, op, &opts, None, force)
            .await
    }

    /// Uninstalls release `name`: marks it `uninstalling`, runs the pre-delete hooks,
    /// deletes its objects in reverse install order (keeping those annotated
    /// `helm.sh/resource-policy: keep`), runs the post-delete hooks and deletes the
    /// release's records. Continues an interrupted uninstall; a release that does not exist
    /// is [`UninstallOutcome::Done`].
    pub async fn uninstall(
        &self,
        name: &str,
        opts: &UninstallOptions,
    ) -> Result<UninstallOutcome, ActionError> {
        let history = self.storage.history(name).await?;
        let Some(last) = history.last() else {
            return Ok(UninstallOutcome::Done);
        };
        let mut release = last.clone();
        let ctx = HookContext {
            cluster: &self.cluster,
            release: name,
            namespace: &self.namespace,
            owner: None,
            timeout: opts.timeout,
        };
        if release.status() != Status::Uninstalling {
            release.info.get_or_insert_with(Info::default).deleted = Some(Time::now());
            release.set_status(
                Status::Uninstalling,
                "Deletion in progress (or silently failed)",
            );
            self.storage.update(&release).await?;
        }
        // The pre-delete hooks run until they all succeeded once; their runs are recorded
        // so that a resumed uninstall does not run them again.
        if !hooks_done(&release.hooks, "pre-delete") {
            let mut hooks = std::mem::take(&mut release.hooks);
            let result = run_hooks(&ctx, &mut hooks, "pre-delete").await;
            release.hooks = hooks;
            result?;
            self.storage.update(&release).await?;
        }

        // The objects of every revision since the last applied one (failed or interrupted
        // upgrades may have applied some of theirs), newest first, in reverse install order.
        let mut objects = Vec::new();
        let since = base_below(&history, release.version).map_or(0, |b| b.version);
        for r in history
            .iter()
            .filter(|r| r.version >= since && r.version != release.version)
        {
            objects.extend(parse_manifest(&r.manifest)?);
        }
        objects.extend(parse_manifest(&release.manifest)?);
        let mut seen = BTreeSet::new();
        let mut deleted = Vec::new();
        for mut obj in objects.into_iter().rev() {
            let api = match self.cluster.place(&mut obj, &self.namespace).await {
                Ok(api) => api,
                // A kind the cluster no longer serves has nothing left to delete.
                Err(ActionError::UnknownKind { .. }) => continue,
                Err(e) => return Err(e),
            };
            if !seen.insert(obj.key()) || obj.keep() {
                continue;
            }
            self.cluster.delete(&api, &obj).await?;
            deleted.push((api, obj));
        }
        if opts.wait {
            let mut remaining = Vec::new();
            for (api, obj) in &deleted {
                if self.cluster.get(api, obj).await?.is_some() {
                    remaining.push(format!("{} {}", obj.kind, obj.describe()));
                }
            }
            if !remaining.is_empty() {
                return Ok(UninstallOutcome::Waiting(format!(
                    "waiting for the deletion of {}",
                    remaining.join(", ")
                )));
            }
        }
        let mut hooks = std::mem::take(&mut release.hooks);
        run_hooks(&ctx, &mut hooks, "post-delete").await?;
        for r in history.iter().rev() {
            self.storage.delete(name, r.version).await?;
        }
        Ok(UninstallOutcome::Done)
    }
}

/// Whether every hook of `event` has succeeded (vacuously true without any).
fn hooks_done(hooks: &[Hook], event: &str) -> bool {
    hooks
        .iter()
        .filter(|h| h.events.iter().any(|e| e == event))
        .all(|h| h.last_run.phase == "Succeeded")
}

/// Whether the deployed `last` already is this chart, these values and this render.
fn same_release(
    last: &Release,
    chart: &ReleaseChart,
    config: &serde_json::Map<String, serde_json::Value>,
    rendered: &Rendered,
) -> bool {
    last.chart.as_ref().is_some_and(|c| c.same_content(chart))
        && &last.config == config
        && last.manifest == rendered.manifest
        && last.hooks.len() == rendered.hooks.len()
        && last
            .hooks
            .iter()
            .zip(&rendered.hooks)
            .all(|(a, b)| a.manifest == b.manifest && a.path == b.path)
}

/// Whether a pending record already holds what `release` would write (times aside).
fn same_record(old: &Release, new: &Release) -> bool {
    old.status() == new.status()
        && old.manifest == new.manifest
        && old.config == new.config
        && old
            .hooks
            .iter()
            .map(|h| &h.manifest)
            .eq(new.hooks.iter().map(|h| &h.manifest))
        && match (&old.chart, &new.chart) {
            (Some(a), Some(b)) => a.same_content(b),
            (a, b) => a.is_none() && b.is_none(),
        }
}
