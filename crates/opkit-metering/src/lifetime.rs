//! Exact usage from object lifetimes: requested CPU core-seconds and memory byte-seconds per
//! pod, per namespace and per custom resource over `[start, end)`, integrated from when each
//! pod existed (or was ready), not sampled.
//!
//! Metering sampled Prometheus once a step and multiplied by the step, so a pod living 90 s of
//! a 60 s step counts 60 s or 120 s. opkit's control plane knows every object's creation,
//! readiness and deletion instants, so the integral can be exact: a pod requesting `r` during
//! `[a, b)` contributes `r × |[a, b) ∩ [start, end)|`. Sums are kept in integers (millicores ×
//! nanoseconds, bytes × nanoseconds), so splitting a period in two sums to the whole exactly and
//! shifting every instant shifts nothing.
//!
//! A pod is charged to a custom resource by walking its controller owner references upward
//! (pod → ReplicaSet → Deployment → Memcached) to the nearest owner of a metered kind. A pod's
//! requests are taken as constant over its life (the sum over its containers); in-place
//! resizes are not modelled yet.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// A kind, by API group and kind (`cache.example.com`, `Memcached`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GroupKind {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The kind.
    pub kind: String,
}

/// A non-pod object that may own pods, directly or through others.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Its uid (what owner references name).
    pub uid: String,
    /// Its group and kind.
    pub group_kind: GroupKind,
    /// Its namespace (`""` for cluster-scoped objects).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The uid of its controller owner, if any.
    pub owner: Option<String>,
    /// When it was created, if known (an owner known only from a reference has no times).
    pub created: Option<Timestamp>,
    /// When it was deleted (gone from the API), if it was.
    pub deleted: Option<Timestamp>,
}

/// One pod's life.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodLife {
    /// Its uid.
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The uid of its controller owner, if any.
    pub owner: Option<String>,
    /// The node it was scheduled to, if any.
    pub node: Option<String>,
    /// Requested CPU, summed over its containers, in millicores.
    pub cpu_millicores: u64,
    /// Requested memory, summed over its containers, in bytes.
    pub memory_bytes: u64,
    /// When it was created.
    pub created: Timestamp,
    /// When it was deleted (gone from the API), if it was.
    pub deleted: Option<Timestamp>,
    /// Its readiness changes, in time order: `(instant, ready)`.
    pub readiness: Vec<(Timestamp, bool)>,
}

/// A value an object held over an interval, as one series of a data-source table: a PVC's
/// requested bytes, a node's CPU capacity. A value that changes is a new segment from the
/// instant it changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// The table (data source) it belongs to (`persistentvolumeclaim-request-bytes`).
    pub table: String,
    /// The series' labels (`namespace`, `persistentvolumeclaim`, `node`, …).
    pub labels: BTreeMap<String, String>,
    /// The value (bytes, cores).
    pub amount: f64,
    /// From when it held (included).
    pub from: Timestamp,
    /// Until when (excluded); `None` while it still holds.
    pub to: Option<Timestamp>,
}

/// What the objects of a cluster did: the owners, the pods, and the sizes of other objects
/// (PVCs, nodes) over time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// Objects that own pods (ReplicaSets, Deployments, custom resources, …).
    pub owners: Vec<Owner>,
    /// The pods.
    pub pods: Vec<PodLife>,
    /// Sizes of PVCs and nodes, as segments of constant value.
    pub segments: Vec<Segment>,
}

/// Which part of a pod's life its requests count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// From creation to deletion: what the scheduler reserves for it.
    Existence,
    /// While it is ready: what it serves with.
    Ready,
}

/// Requested resources integrated over time, exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// CPU: millicores × nanoseconds.
    pub cpu_millicore_nanos: u128,
    /// Memory: bytes × nanoseconds.
    pub memory_byte_nanos: u128,
}

impl Usage {
    /// CPU core-seconds.
    pub fn cpu_core_seconds(&self) -> f64 {
        self.cpu_millicore_nanos as f64 / 1e12
    }

    /// Memory byte-seconds.
    pub fn memory_byte_seconds(&self) -> f64 {
        self.memory_byte_nanos as f64 / 1e9
    }

    fn add(&mut self, other: Usage) {
        self.cpu_millicore_nanos += other.cpu_millicore_nanos;
        self.memory_byte_nanos += other.memory_byte_nanos;
    }
}

/// A pod, as totals name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodKey {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its uid (two pods of one name at different times are two pods).
    pub uid: String,
}

/// A custom resource, as totals name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ResourceKey {
    /// Its group and kind.
    pub group_kind: GroupKind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

/// Usage over one period, per pod, per namespace and per metered custom resource. Pods that
/// used nothing in the period are left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Per pod.
    pub pods: BTreeMap<PodKey, Usage>,
    /// Per namespace.
    pub namespaces: BTreeMap<String, Usage>,
    /// Per custom resource (only pods owned by one count here).
    pub resources: BTreeMap<ResourceKey, Usage>,
}

/// A history that contradicts itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LifetimeError {
    /// A pod deleted before it was created.
    #[error("pod {namespace}/{name}: deleted ({deleted}) before it was created ({created})")]
    DeletedBeforeCreated {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its creation.
        created: Timestamp,
        /// Its deletion.
        deleted: Timestamp,
    },
    /// Readiness changes out of time order.
    #[error("pod {namespace}/{name}: readiness changes are not in time order")]
    UnorderedReadiness {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// Owner references that loop.
    #[error("the owner references of object {uid} form a cycle")]
    OwnerCycle {
        /// An object on the cycle.
        uid: String,
    },
    /// The period ends before it starts.
    #[error("the period is empty: end {end} is not after start {start}")]
    EmptyPeriod {
        /// Its start.
        start: Timestamp,
        /// Its end.
        end: Timestamp,
    },
}

/// Integrates `history` over `[start, end)`, charging pods to the nearest owner whose kind is
/// in `metered`.
pub fn integrate(
    history: &History,
    metered: &BTreeSet<GroupKind>,
    basis: Basis,
    start: Timestamp,
    end: Timestamp,
) -> Result<Totals, LifetimeError> {
    if end <= start {
        return Err(LifetimeError::EmptyPeriod { start, end });
    }
    let owners: BTreeMap<&str, &Owner> =
        history.owners.iter().map(|o| (o.uid.as_str(), o)).collect();
    let mut totals = Totals::default();
    for pod in &history.pods {
        let nanos = counted_nanos(pod, basis, start, end)?;
        if nanos == 0 {
            continue;
        }
        let usage = Usage {
            cpu_millicore_nanos: u128::from(pod.cpu_millicores) * nanos,
            memory_byte_nanos: u128::from(pod.memory_bytes) * nanos,
        };
        totals
            .pods
            .entry(PodKey {
                namespace: pod.namespace.clone(),
                name: pod.name.clone(),
                uid: pod.uid.clone(),
            })
            .or_default()
            .add(usage);
        totals
            .namespaces
            .entry(pod.namespace.clone())
            .or_default()
            .add(usage);
        if let Some(owner) = metered_owner(pod.owner.as_deref(), &owners, metered)? {
            totals
                .resources
                .entry(ResourceKey {
                    group_kind: owner.group_kind.clone(),
                    namespace: owner.namespace.clone(),
                    name: owner.name.clone(),
                    uid: owner.uid.clone(),
                })
                .or_default()
                .add(usage);
        }
    }
    Ok(totals)
}

/// The nearest owner of a metered kind up the controller chain from `first`.
pub(crate) fn metered_owner<'a>(
    first: Option<&str>,
    owners: &BTreeMap<&str, &'a Owner>,
    metered: &BTreeSet<GroupKind>,
) -> Result<Option<&'a Owner>, LifetimeError> {
    let mut seen = BTreeSet::new();
    let mut next = first;
    while let Some(uid) = next {
        if !seen.insert(uid) {
            return Err(LifetimeError::OwnerCycle {
                uid: uid.to_owned(),
            });
        }
        let Some(owner) = owners.get(uid) else {
            return Ok(None);
        };
        if metered.contains(&owner.group_kind) {
            return Ok(Some(owner));
        }
        next = owner.owner.as_deref();
    }
    Ok(None)
}

/// The nanoseconds of `[start, end)` during which `pod`'s requests count.
pub(crate) fn counted_nanos(
    pod: &PodLife,
    basis: Basis,
    start: Timestamp,
    end: Timestamp,
) -> Result<u128, LifetimeError> {
    if let Some(deleted) = pod.deleted
        && deleted < pod.created
    {
        return Err(LifetimeError::DeletedBeforeCreated {
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
            created: pod.created,
            deleted,
        });
    }
    if pod.readiness.windows(2).any(|w| w[1].0 < w[0].0) {
        return Err(LifetimeError::UnorderedReadiness {
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
        });
    }
    let life_end = pod.deleted.unwrap_or(end).min(end);
    let life = (pod.created.max(start), life_end);
    Ok(match basis {
        Basis::Existence => overlap(life, (start, end)),
        Basis::Ready => {
            let mut total = 0;
            let mut ready_since: Option<Timestamp> = None;
            for &(at, ready) in &pod.readiness {
                match (ready_since, ready) {
                    (None, true) => ready_since = Some(at),
                    (Some(since), false) => {
                        total += overlap(life, (since, at));
                        ready_since = None;
                    }
                    _ => {}
                }
            }
            if let Some(since) = ready_since {
                total += overlap(life, (since, life_end));
            }
            total
        }
    })
}

/// The length in nanoseconds of the intersection of two half-open intervals.
pub(crate) fn overlap(a: (Timestamp, Timestamp), b: (Timestamp, Timestamp)) -> u128 {
    let from = a.0.max(b.0).as_nanosecond();
    let to = a.1.min(b.1).as_nanosecond();
    u128::try_from(to - from).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn pod(uid: &str, created: i64, deleted: Option<i64>) -> PodLife {
        PodLife {
            uid: uid.into(),
            namespace: "ns".into(),
            name: format!("pod-{uid}"),
            owner: Some("rs".into()),
            node: Some("n1".into()),
            cpu_millicores: 250,
            memory_bytes: 1 << 20,
            created: at(created),
            deleted: deleted.map(at),
            readiness: vec![(at(created + 5), true)],
        }
    }

    fn history(pods: Vec<PodLife>) -> History {
        let owner = |uid: &str, group: &str, kind: &str, up: Option<&str>| Owner {
            uid: uid.into(),
            group_kind: GroupKind {
                group: group.into(),
                kind: kind.into(),
            },
            namespace: "ns".into(),
            name: uid.into(),
            owner: up.map(Into::into),
            created: None,
            deleted: None,
        };
        History {
            owners: vec![
                owner("rs", "apps", "ReplicaSet", Some("dep")),
                owner("dep", "apps", "Deployment", Some("cr")),
                owner("cr", "cache.example.com", "Memcached", None),
            ],
            pods,
            segments: Vec::new(),
        }
    }

    fn metered() -> BTreeSet<GroupKind> {
        [GroupKind {
            group: "cache.example.com".into(),
            kind: "Memcached".into(),
        }]
        .into()
    }

    #[test]
    fn ready_basis_counts_only_ready_time_within_the_life() {
        let mut p = pod("a", 0, Some(100));
        p.readiness = vec![(at(10), true), (at(30), false), (at(50), true)];
        let t = integrate(&history(vec![p]), &metered(), Basis::Ready, at(0), at(1000)).unwrap();
        // Ready during [10, 30) and [50, 100): 70 s × 0.25 cores = 17.5 core-seconds.
        assert_eq!(t.namespaces["ns"].cpu_core_seconds(), 17.5);
    }

    #[test]
    fn refuses_contradictions() {
        let h = history(vec![pod("a", 10, Some(5))]);
        let err = integrate(&h, &metered(), Basis::Existence, at(0), at(100)).unwrap_err();
        assert!(
            matches!(err, LifetimeError::DeletedBeforeCreated { .. }),
            "{err}"
        );
        let mut h = history(vec![pod("a", 0, None)]);
        h.owners[2].owner = Some("rs".into());
        let err = integrate(&h, &metered(), Basis::Existence, at(0), at(100));
        // The metered kind is found before the loop closes.
        assert!(err.is_ok());
        h.owners[2].group_kind.kind = "Other".into();
        let err = integrate(&h, &metered(), Basis::Existence, at(0), at(100)).unwrap_err();
        assert!(matches!(err, LifetimeError::OwnerCycle { .. }), "{err}");
    }

    fn arb_history() -> impl Strategy<Value = History> {
        prop::collection::vec(
            (
                0i64..10_000,
                prop::option::of(0i64..10_000),
                0u64..4000,
                0i64..50,
            ),
            0..8,
        )
        .prop_map(|pods| {
            history(
                pods.into_iter()
                    .enumerate()
                    .map(|(i, (created, life, cpu, ready_after))| {
                        let mut p = pod(&i.to_string(), created, life.map(|l| created + l));
                        p.cpu_millicores = cpu;
                        p.readiness = vec![(at(created + ready_after), true)];
                        p
                    })
                    .collect(),
            )
        })
    }

    proptest! {
        #[test]
        fn splitting_the_period_sums_to_the_whole(
            h in arb_history(), a in 0i64..12_000, len1 in 1i64..6000, len2 in 1i64..6000,
            ready in any::<bool>(),
        ) {
            let basis = if ready { Basis::Ready } else { Basis::Existence };
            let (b, c) = (a + len1, a + len1 + len2);
            let whole = integrate(&h, &metered(), basis, at(a), at(c)).unwrap();
            let first = integrate(&h, &metered(), basis, at(a), at(b)).unwrap();
            let second = integrate(&h, &metered(), basis, at(b), at(c)).unwrap();
            for (ns, u) in &whole.namespaces {
                let parts = first.namespaces.get(ns).copied().unwrap_or_default().cpu_millicore_nanos
                    + second.namespaces.get(ns).copied().unwrap_or_default().cpu_millicore_nanos;
                prop_assert_eq!(u.cpu_millicore_nanos, parts);
            }
            for (r, u) in &whole.resources {
                let parts = first.resources.get(r).copied().unwrap_or_default().memory_byte_nanos
                    + second.resources.get(r).copied().unwrap_or_default().memory_byte_nanos;
                prop_assert_eq!(u.memory_byte_nanos, parts);
            }
        }

        #[test]
        fn shifting_every_instant_changes_nothing(
            h in arb_history(), a in 0i64..12_000, len in 1i64..12_000, shift in -100_000i64..100_000,
        ) {
            let mut moved = h.clone();
            for p in &mut moved.pods {
                p.created = at(p.created.as_second() + shift);
                p.deleted = p.deleted.map(|d| at(d.as_second() + shift));
                for r in &mut p.readiness {
                    r.0 = at(r.0.as_second() + shift);
                }
            }
            let before = integrate(&h, &metered(), Basis::Existence, at(a), at(a + len)).unwrap();
            let after = integrate(&moved, &metered(), Basis::Existence, at(a + shift), at(a + len + shift)).unwrap();
            prop_assert_eq!(before, after);
        }
    }
}
