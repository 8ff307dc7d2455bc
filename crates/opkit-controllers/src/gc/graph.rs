//! The dependency graph: every watched object with its owner references, and for every owner
//! uid the uids of its dependents.
//!
//! Pure bookkeeping, no I/O: the watchers feed it object states and it answers with the work
//! those changes cause (which items the collector must look at), as upstream's GraphBuilder
//! does. Decisions that need the live state (is the owner really gone?) are the collector's.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::util::Served;

/// An object uid.
pub(crate) type Uid = Arc<str>;

/// The finalizer of foreground cascading deletion.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer of orphaning deletion.
pub(crate) const ORPHAN: &str = "orphan";

/// One owner reference, as far as the collector cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: Uid,
    /// `blockOwnerDeletion: true`.
    pub block: bool,
}

/// One watched object.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// Its resource.
    pub res: Arc<Served>,
    /// `group/plural` of its resource (watchers are keyed by it).
    pub res_key: Arc<str>,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: Uid,
    pub resource_version: String,
    pub owners: Vec<Owner>,
    /// `deletionTimestamp` is set.
    pub deleting: bool,
    /// It has the `foregroundDeletion` finalizer.
    pub has_foreground: bool,
    /// It has the `orphan` finalizer.
    pub has_orphan: bool,
}

impl Node {
    /// Builds a node from an object's metadata; `None` without a uid or name.
    pub fn from_meta(res: Arc<Served>, res_key: Arc<str>, meta: &ObjectMeta) -> Option<Node> {
        let uid: Uid = Arc::from(meta.uid.as_deref().filter(|u| !u.is_empty())?);
        let name = meta.name.clone()?;
        let finalizers = meta.finalizers.as_deref().unwrap_or_default();
        let owners = meta
            .owner_references
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(|r| Owner {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                uid: Arc::from(r.uid.as_str()),
                block: r.block_owner_deletion == Some(true),
            })
            .collect();
        Some(Node {
            res,
            res_key,
            namespace: meta.namespace.clone().filter(|n| !n.is_empty()),
            name,
            uid,
            resource_version: meta.resource_version.clone().unwrap_or_default(),
            owners,
            deleting: meta.deletion_timestamp.is_some(),
            has_foreground: finalizers.iter().any(|f| f == FOREGROUND),
            has_orphan: finalizers.iter().any(|f| f == ORPHAN),
        })
    }

    /// Being deleted in the foreground: waits for its blocking dependents.
    pub fn deleting_dependents(&self) -> bool {
        self.deleting && self.has_foreground
    }

    /// Being deleted with the `orphan` finalizer: its dependents must be released.
    pub fn orphaning(&self) -> bool {
        self.deleting && self.has_orphan
    }
}

/// What the collector must look at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Work {
    /// Decide whether the object must go (its owners are gone or deleting it in the
    /// foreground), or, if it is deleting in the foreground, whether it may finish.
    Delete(Uid),
    /// Release the dependents of an owner being deleted with the `orphan` finalizer.
    Orphan(Uid),
}

/// The graph.
#[derive(Default)]
pub(crate) struct Graph {
    nodes: HashMap<Uid, Node>,
    dependents: HashMap<Uid, HashSet<Uid>>,
}

impl Graph {
    /// The object with `uid`, if watched.
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    /// How many objects are known.
    #[allow(dead_code)]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether `uid` has dependents (known objects that reference it).
    pub fn has_dependents(&self, uid: &str) -> bool {
        self.dependents.get(uid).is_some_and(|d| !d.is_empty())
    }

    /// The known dependents of `uid`.
    pub fn dependents(&self, uid: &str) -> Vec<Node> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|d| self.nodes.get(d).cloned())
            .collect()
    }

    /// The dependents of `uid` whose reference to it has `blockOwnerDeletion: true`.
    pub fn blocking_dependents(&self, uid: &str) -> Vec<&Node> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|d| self.nodes.get(d))
            .filter(|d| d.owners.iter().any(|o| &*o.uid == uid && o.block))
            .collect()
    }

    /// The uids of every known object of a resource.
    pub fn uids_of(&self, res_key: &str) -> Vec<Uid> {
        self.nodes
            .values()
            .filter(|n| &*n.res_key == res_key)
            .map(|n| n.uid.clone())
            .collect()
    }

    fn unlink(&mut self, owner: &Uid, dependent: &Uid) {
        if let Some(set) = self.dependents.get_mut(owner) {
            set.remove(dependent);
            if set.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }

    fn owner_waits(&self, owner: &Uid) -> bool {
        self.nodes.get(owner).is_some_and(Node::deleting_dependents)
    }

    /// Records an object's new state; pushes the work it causes onto `out`.
    pub fn apply(&mut self, node: Node, out: &mut Vec<Work>) {
        let uid = node.uid.clone();
        let old = self.nodes.remove(&uid);
        let refs_changed = old.as_ref().is_none_or(|o| o.owners != node.owners);
        if refs_changed {
            if let Some(old) = &old {
                for r in &old.owners {
                    if !node.owners.iter().any(|n| n.uid == r.uid) {
                        self.unlink(&r.uid, &uid);
                    }
                    // A dependent let go of (or stopped blocking) an owner waiting for it.
                    if self.owner_waits(&r.uid) {
                        out.push(Work::Delete(r.uid.clone()));
                    }
                }
            }
            for r in &node.owners {
                self.dependents
                    .entry(r.uid.clone())
                    .or_default()
                    .insert(uid.clone());
            }
            if node.owners.iter().any(|r| self.needs_check(&node, r)) {
                out.push(Work::Delete(uid.clone()));
            }
        }
        let was_waiting = old.as_ref().is_some_and(Node::deleting_dependents);
        if node.deleting_dependents() && !was_waiting {
            out.push(Work::Delete(uid.clone()));
            for d in self.dependents.get(&uid).into_iter().flatten() {
                out.push(Work::Delete(d.clone()));
            }
        }
        let was_orphaning = old.as_ref().is_some_and(Node::orphaning);
        if node.orphaning() && !was_orphaning {
            out.push(Work::Orphan(uid.clone()));
        }
        self.nodes.insert(uid, node);
    }

    /// Whether an owner reference needs the collector's attention: the owner is unknown (maybe
    /// gone), deleting its dependents in the foreground, or in another namespace.
    fn needs_check(&self, node: &Node, r: &Owner) -> bool {
        match self.nodes.get(&r.uid) {
            None => true,
            Some(owner) => {
                owner.deleting_dependents()
                    || (owner.namespace.is_some() && owner.namespace != node.namespace)
            }
        }
    }

    /// Forgets a deleted object; pushes the work it causes onto `out`.
    pub fn remove(&mut self, uid: &str, out: &mut Vec<Work>) {
        let Some(old) = self.nodes.remove(uid) else {
            return;
        };
        for r in &old.owners {
            self.unlink(&r.uid, &old.uid);
            if self.owner_waits(&r.uid) {
                out.push(Work::Delete(r.uid.clone()));
            }
        }
        for d in self.dependents.get(uid).into_iter().flatten() {
            out.push(Work::Delete(d.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::discovery::ApiResource;

    fn res() -> Arc<Served> {
        Arc::new(Served {
            ar: ApiResource {
                group: String::new(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                plural: "configmaps".into(),
            },
            namespaced: true,
            verbs: vec![],
        })
    }

    fn node(uid: &str, owners: &[(&str, bool)]) -> Node {
        Node {
            res: res(),
            res_key: Arc::from("/configmaps"),
            namespace: Some("default".into()),
            name: uid.to_string(),
            uid: Arc::from(uid),
            resource_version: "1".into(),
            owners: owners
                .iter()
                .map(|(o, block)| Owner {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    name: o.to_string(),
                    uid: Arc::from(*o),
                    block: *block,
                })
                .collect(),
            deleting: false,
            has_foreground: false,
            has_orphan: false,
        }
    }

    #[test]
    fn a_dependent_of_an_unknown_owner_is_checked() {
        let mut g = Graph::default();
        let mut out = Vec::new();
        g.apply(node("d", &[("o", false)]), &mut out);
        assert_eq!(out, vec![Work::Delete(Arc::from("d"))]);
    }

    #[test]
    fn a_dependent_of_a_known_owner_is_not_checked() {
        let mut g = Graph::default();
        let mut out = Vec::new();
        g.apply(node("o", &[]), &mut out);
        g.apply(node("d", &[("o", false)]), &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn removing_an_owner_queues_its_dependents() {
        let mut g = Graph::default();
        let mut out = Vec::new();
        g.apply(node("o", &[]), &mut out);
        g.apply(node("d1", &[("o", false)]), &mut out);
        g.apply(node("d2", &[("o", true)]), &mut out);
        g.remove("o", &mut out);
        out.sort_by_key(|w| format!("{w:?}"));
        assert_eq!(
            out,
            vec![Work::Delete(Arc::from("d1")), Work::Delete(Arc::from("d2"))]
        );
    }

    #[test]
    fn foreground_deletion_queues_the_owner_and_its_dependents_once() {
        let mut g = Graph::default();
        let mut out = Vec::new();
        g.apply(node("o", &[]), &mut out);
        g.apply(node("d", &[("o", true)]), &mut out);
        let mut deleting = node("o", &[]);
        deleting.deleting = true;
        deleting.has_foreground = true;
        g.apply(deleting.clone(), &mut out);
        assert_eq!(
            out,
            vec![Work::Delete(Arc::from("o")), Work::Delete(Arc::from("d"))]
        );
        out.clear();
        g.apply(deleting, &mut out);
        assert!(out.is_empty(), "no new work without a transition: {out:?}");
        assert_eq!(g.blocking_dependents("o").len(), 1);
        g.remove("d", &mut out);
        assert_eq!(out, vec![Work::Delete(Arc::from("o"))]);
        assert!(g.blocking_dependents("o").is_empty());
    }

    #[test]
    fn orphan_finalizer_queues_orphaning() {
        let mut g = Graph::default();
        let mut out = Vec::new();
        let mut o = node("o", &[]);
        o.deleting = true;
        o.has_orphan = true;
        g.apply(o, &mut out);
        assert_eq!(out, vec![Work::Orphan(Arc::from("o"))]);
    }

    #[test]
    fn dropping_a_reference_unlinks_the_dependent() {
        let mut g = Graph::default();
        let mut out = Vec::new();
        g.apply(node("o", &[]), &mut out);
        g.apply(node("d", &[("o", false)]), &mut out);
        assert!(g.has_dependents("o"));
        g.apply(node("d", &[]), &mut out);
        assert!(!g.has_dependents("o"));
    }
}
