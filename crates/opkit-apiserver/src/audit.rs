//! The audit log: who did what, one JSON line per request, in the shape of upstream's
//! `audit.k8s.io/v1` `Event` at the `Metadata` level (user, verb, object, response code,
//! timestamps; no bodies). Off by default; `opkit up --audit-log FILE` turns it on.
//!
//! Requests must not wait on the disk, so events go through a bounded channel to a writer
//! thread that batches them into a buffered file and flushes whenever the channel runs dry.
//! If the writer falls behind by more than the channel holds, events are dropped and counted
//! (and the count is logged) rather than slowing the API down.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use serde_json::{Value, json};

use crate::auth::User;
use crate::request::Attributes;

/// How many events may wait for the writer.
const QUEUE: usize = 65_536;

/// A running audit log.
pub struct AuditLog {
    sender: mpsc::SyncSender<Value>,
    dropped: Arc<AtomicU64>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").finish_non_exhaustive()
    }
}

/// One request, as the audit log records it.
pub(crate) struct AuditRecord<'a> {
    pub user: &'a User,
    /// The authenticated user, when the request impersonated someone.
    pub impersonator: Option<&'a User>,
    pub attrs: &'a Attributes,
    pub request_uri: &'a str,
    pub user_agent: Option<&'a str>,
    pub source: Option<SocketAddr>,
    pub code: u16,
    pub received: jiff::Timestamp,
    /// `allow` or `forbid`.
    pub decision: &'static str,
}

impl AuditLog {
    /// Opens (appending) `path` and starts the writer thread.
    pub fn open(path: &Path) -> std::io::Result<AuditLog> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let (sender, receiver) = mpsc::sync_channel::<Value>(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let seen_dropped = dropped.clone();
        std::thread::Builder::new()
            .name("opkit-audit".into())
            .spawn(move || {
                let mut out = BufWriter::with_capacity(256 * 1024, file);
                let mut reported = 0;
                while let Ok(first) = receiver.recv() {
                    let mut next = Some(first);
                    while let Some(event) = next {
                        let _ = serde_json::to_writer(&mut out, &event);
                        let _ = out.write_all(b"\n");
                        next = receiver.try_recv().ok();
                    }
                    if let Err(e) = out.flush() {
                        tracing::warn!(error = %e, "cannot write the audit log");
                    }
                    let lost = seen_dropped.load(Ordering::Relaxed);
                    if lost > reported {
                        tracing::warn!(dropped = lost, "audit events dropped: the log fell behind");
                        reported = lost;
                    }
                }
                let _ = out.flush();
            })?;
        Ok(AuditLog { sender, dropped })
    }

    /// Records one request.
    pub(crate) fn record(&self, r: AuditRecord<'_>) {
        let (user, impersonated) = match r.impersonator {
            Some(real) => (real, Some(r.user)),
            None => (r.user, None),
        };
        let user_json = |u: &User| json!({"username": u.name, "uid": u.uid, "groups": u.groups});
        let mut event = json!({
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "auditID": uuid::Uuid::new_v4().to_string(),
            "stage": "ResponseComplete",
            "requestURI": r.request_uri,
            "verb": r.attrs.verb(),
            "user": user_json(user),
            "sourceIPs": r.source.map(|s| vec![s.ip().to_string()]).unwrap_or_default(),
            "userAgent": r.user_agent.unwrap_or(""),
            "responseStatus": {"metadata": {}, "code": r.code},
            "requestReceivedTimestamp": r.received.to_string(),
            "stageTimestamp": jiff::Timestamp::now().to_string(),
            "annotations": {"authorization.k8s.io/decision": r.decision},
        });
        if let Some(imp) = impersonated {
            event["impersonatedUser"] = user_json(imp);
        }
        if let Attributes::Resource {
            group,
            version,
            resource,
            subresource,
            namespace,
            name,
            ..
        } = r.attrs
        {
            let mut obj = json!({"resource": resource, "apiVersion": version});
            if !group.is_empty() {
                obj["apiGroup"] = json!(group);
            }
            for (k, v) in [
                ("subresource", subresource),
                ("namespace", namespace),
                ("name", name),
            ] {
                if let Some(v) = v {
                    obj[k] = json!(v);
                }
            }
            event["objectRef"] = obj;
        }
        if self.sender.try_send(event).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}
