//! The data sources an object history feeds, for one reporting period: the tables the built-in
//! queries read, filled from lifetimes instead of Prometheus samples.
//!
//! Metering's tables hold one row per series and step, `amount × timeprecision` being what the
//! step contributes. From a history the rows can be exact instead: each pod (or owned object)
//! gives one row for the period, its `timestamp` the first instant it counts in the period and
//! its step the nanoseconds it counts (clipped to the period, through the same rule as
//! [`crate::lifetime::integrate`]). The built-in queries then sum `amount × timeprecision` as they
//! would over samples and get the exact integral, so one set of queries serves both sources.
//!
//! Tables (names are data-source names):
//! - [`POD_CPU`], [`POD_MEMORY`]: Metering's `pod-request-cpu-cores` and `pod-request-memory-bytes`,
//!   labels `namespace`, `pod`, `node` (a pod not yet scheduled has no `node`, and Metering's
//!   pod queries leave it out, as they did);
//! - [`RESOURCE_CPU`], [`RESOURCE_MEMORY`]: the same requests charged to the nearest custom
//!   resource of a metered kind up the pod's owner chain, labels `group`, `kind`, `namespace`,
//!   `name` (the custom resource's), `pod`;
//! - [`RESOURCE_OBJECTS`]: every object a metered custom resource manages (its pods and the
//!   objects between), amount 1, labels `group`, `kind`, `namespace`, `name`, `object_kind`,
//!   `object`, `uid`.
//! - [`PVC_REQUEST`], [`PVC_CAPACITY`]: Metering's `persistentvolumeclaim-request-bytes` (a
//!   claim's requested storage; labels `namespace`, `persistentvolumeclaim`, and `volumename`
//!   and `storageclass` when it has them) and `persistentvolumeclaim-capacity-bytes` (the bound
//!   volume's capacity, from the claim's status);
//! - [`NODE_CPU_CAPACITY`], [`NODE_MEMORY_CAPACITY`], [`NODE_CPU_ALLOCATABLE`],
//!   [`NODE_MEMORY_ALLOCATABLE`]: Metering's `node-capacity-cpu-cores` and the others, from each
//!   node's status (labels `node`, and `provider_id` when it has one).
//!
//! The last six come from the history's [`Segment`]s: a segment overlapping the period gives
//! one row, counted from its start to its end clipped to the period, so a resize or a deletion
//! mid-period is integrated exactly as a pod's life is.

use std::collections::{BTreeMap, BTreeSet};

#[cfg(doc)]
use crate::lifetime::Segment;
use crate::lifetime::{
    Basis, GroupKind, History, LifetimeError, Owner, PodLife, counted_nanos, metered_owner, overlap,
};
use crate::report::Period;
use crate::sample::Sample;

/// Requested CPU cores per pod.
pub const POD_CPU: &str = "pod-request-cpu-cores";
/// Requested memory bytes per pod.
pub const POD_MEMORY: &str = "pod-request-memory-bytes";
/// Requested CPU cores per pod, charged to a custom resource.
pub const RESOURCE_CPU: &str = "resource-request-cpu-cores";
/// Requested memory bytes per pod, charged to a custom resource.
pub const RESOURCE_MEMORY: &str = "resource-request-memory-bytes";
/// Objects managed by a custom resource.
pub const RESOURCE_OBJECTS: &str = "resource-objects";

/// Requested storage per PVC.
pub const PVC_REQUEST: &str = "persistentvolumeclaim-request-bytes";
/// Capacity per bound PVC.
pub const PVC_CAPACITY: &str = "persistentvolumeclaim-capacity-bytes";
/// CPU capacity per node.
pub const NODE_CPU_CAPACITY: &str = "node-capacity-cpu-cores";
/// Memory capacity per node.
pub const NODE_MEMORY_CAPACITY: &str = "node-capacity-memory-bytes";
/// Allocatable CPU per node.
pub const NODE_CPU_ALLOCATABLE: &str = "node-allocatable-cpu-cores";
/// Allocatable memory per node.
pub const NODE_MEMORY_ALLOCATABLE: &str = "node-allocatable-memory-bytes";

/// The names of the tables [`tables`] fills.
pub const NAMES: [&str; 11] = [
    POD_CPU,
    POD_MEMORY,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    RESOURCE_OBJECTS,
    PVC_REQUEST,
    PVC_CAPACITY,
    NODE_CPU_CAPACITY,
    NODE_MEMORY_CAPACITY,
    NODE_CPU_ALLOCATABLE,
    NODE_MEMORY_ALLOCATABLE,
];

/// The tables `history` gives for `period`, charging to the kinds in `metered`. Every table is
/// present (empty when nothing counted).
pub fn tables(
    history: &History,
    metered: &BTreeSet<GroupKind>,
    basis: Basis,
    period: Period,
) -> Result<BTreeMap<String, Vec<Sample>>, LifetimeError> {
    if period.end <= period.start {
        return Err(LifetimeError::EmptyPeriod {
            start: period.start,
            end: period.end,
        });
    }
    let owners: BTreeMap<&str, &Owner> =
        history.owners.iter().map(|o| (o.uid.as_str(), o)).collect();
    let mut out: BTreeMap<String, Vec<Sample>> =
        NAMES.iter().map(|n| (n.to_string(), Vec::new())).collect();
    let mut push = |table: &str, sample: Sample| {
        if let Some(rows) = out.get_mut(table) {
            rows.push(sample);
        }
    };
    for pod in &history.pods {
        let nanos = counted_nanos(pod, basis, period.start, period.end)?;
        if nanos == 0 {
            continue;
        }
        let pod_row = |amount: f64, labels: BTreeMap<String, String>| {
            row(amount, pod.created.max(period.start), nanos, labels)
        };
        let mut labels = labels([("namespace", &pod.namespace), ("pod", &pod.name)]);
        if let Some(node) = &pod.node {
            labels.insert("node".into(), node.clone());
        }
        push(POD_CPU, pod_row(cores(pod), labels.clone()));
        push(POD_MEMORY, pod_row(pod.memory_bytes as f64, labels));
        if let Some(cr) = metered_owner(pod.owner.as_deref(), &owners, metered)? {
            let mut labels = resource_labels(cr);
            labels.insert("pod".into(), pod.name.clone());
            push(RESOURCE_CPU, pod_row(cores(pod), labels.clone()));
            push(RESOURCE_MEMORY, pod_row(pod.memory_bytes as f64, labels));
            let object = pod_row(1.0, BTreeMap::new());
            push(
                RESOURCE_OBJECTS,
                object_row(cr, "Pod", &pod.name, &pod.uid, object),
            );
        }
    }
    for object in &history.owners {
        let Some(created) = object.created else {
            continue;
        };
        // The nearest metered owner above it: a custom resource is not an object it manages
        // itself, but one owned by another is one of the other's.
        let Some(cr) = metered_owner(object.owner.as_deref(), &owners, metered)? else {
            continue;
        };
        let life_end = object.deleted.unwrap_or(period.end).min(period.end);
        let nanos = overlap(
            (created.max(period.start), life_end),
            (period.start, period.end),
        );
        if nanos == 0 {
            continue;
        }
        let sample = row(1.0, created.max(period.start), nanos, BTreeMap::new());
        push(
            RESOURCE_OBJECTS,
            object_row(
                cr,
                &object.group_kind.kind,
                &object.name,
                &object.uid,
                sample,
            ),
        );
    }
    for segment in &history.segments {
        let nanos = overlap(
            (segment.from, segment.to.unwrap_or(period.end)),
            (period.start, period.end),
        );
        if nanos == 0 {
            continue;
        }
        let at = segment.from.max(period.start);
        out.entry(segment.table.clone()).or_default().push(row(
            segment.amount,
            at,
            nanos,
            segment.labels.clone(),
        ));
    }
    Ok(out)
}

fn cores(pod: &PodLife) -> f64 {
    pod.cpu_millicores as f64 / 1000.0
}

fn labels<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a String)>) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.clone()))
        .collect()
}

fn resource_labels(cr: &Owner) -> BTreeMap<String, String> {
    labels([
        ("group", &cr.group_kind.group),
        ("kind", &cr.group_kind.kind),
        ("namespace", &cr.namespace),
        ("name", &cr.name),
    ])
}

/// `sample` labelled as object `kind`/`name` (`uid`) managed by `cr`.
fn object_row(cr: &Owner, kind: &str, name: &str, uid: &str, mut sample: Sample) -> Sample {
    sample.labels = resource_labels(cr);
    for (k, v) in [("object_kind", kind), ("object", name), ("uid", uid)] {
        sample.labels.insert(k.into(), v.into());
    }
    sample
}

fn row(amount: f64, at: jiff::Timestamp, nanos: u128, labels: BTreeMap<String, String>) -> Sample {
    Sample::at(amount, at, i64::try_from(nanos).unwrap_or(i64::MAX), labels)
}
