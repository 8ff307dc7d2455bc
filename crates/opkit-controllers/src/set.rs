//! Naming and selecting controllers, with kube-controller-manager's `--controllers` syntax
//! (`*` for all, `name` to enable, `-name` to disable).

use std::fmt;
use std::str::FromStr;

/// One built-in controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Controller {
    /// Deletes dependents whose owners are gone; Foreground and Orphan deletion.
    GarbageCollector,
    /// Empties terminating namespaces, then removes them.
    Namespace,
    /// The simulated node and kubelet: schedules pods and makes them Running and Ready.
    Node,
    /// Deployment → ReplicaSets (rollouts, revision history).
    Deployment,
    /// ReplicaSet → Pods.
    ReplicaSet,
    /// StatefulSet → ordinal Pods and PersistentVolumeClaims.
    StatefulSet,
    /// DaemonSet → one Pod per node.
    DaemonSet,
    /// Job → Pods that complete.
    Job,
    /// CronJob → Jobs on schedule.
    CronJob,
    /// Service → Endpoints and EndpointSlices for ready pods.
    Endpoints,
    /// Writes the union of matched rules into aggregated ClusterRoles (`admin`, `edit`…).
    ClusterRoleAggregation,
}

impl Controller {
    /// Every controller, in start order.
    pub const ALL: [Controller; 11] = [
        Controller::GarbageCollector,
        Controller::Namespace,
        Controller::Node,
        Controller::Deployment,
        Controller::ReplicaSet,
        Controller::StatefulSet,
        Controller::DaemonSet,
        Controller::Job,
        Controller::CronJob,
        Controller::Endpoints,
        Controller::ClusterRoleAggregation,
    ];

    /// The name used on the command line (kube-controller-manager's, where it has one).
    pub fn name(self) -> &'static str {
        match self {
            Controller::GarbageCollector => "garbage-collector",
            Controller::Namespace => "namespace",
            Controller::Node => "node",
            Controller::Deployment => "deployment",
            Controller::ReplicaSet => "replicaset",
            Controller::StatefulSet => "statefulset",
            Controller::DaemonSet => "daemonset",
            Controller::Job => "job",
            Controller::CronJob => "cronjob",
            Controller::Endpoints => "endpoints",
            Controller::ClusterRoleAggregation => "clusterrole-aggregation",
        }
    }

    /// The workload controllers (everything that simulates pods and their owners).
    pub fn is_workload(self) -> bool {
        !matches!(
            self,
            Controller::GarbageCollector
                | Controller::Namespace
                | Controller::ClusterRoleAggregation
        )
    }
}

impl fmt::Display for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--controllers` value that names no controller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown controller {0:?}; known controllers: {known} (use `*` for all, `-name` to disable one, `workloads` for every workload controller)",
    known = Controller::ALL.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
)]
pub struct ParseControllersError(pub String);

impl FromStr for Controller {
    type Err = ParseControllersError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Controller::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| ParseControllersError(s.to_string()))
    }
}

/// A set of controllers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ControllerSet(u32);

impl ControllerSet {
    /// Every controller.
    pub fn all() -> ControllerSet {
        Controller::ALL
            .into_iter()
            .fold(ControllerSet::none(), ControllerSet::with)
    }

    /// No controller.
    pub fn none() -> ControllerSet {
        ControllerSet(0)
    }

    fn bit(c: Controller) -> u32 {
        1 << (Controller::ALL.iter().position(|x| *x == c).unwrap_or(0) as u32)
    }

    /// This set with `c` added.
    pub fn with(self, c: Controller) -> ControllerSet {
        ControllerSet(self.0 | Self::bit(c))
    }

    /// This set without `c`.
    pub fn without(self, c: Controller) -> ControllerSet {
        ControllerSet(self.0 & !Self::bit(c))
    }

    /// Whether the set is empty (a bare API server).
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `c` is in the set.
    pub fn contains(self, c: Controller) -> bool {
        self.0 & Self::bit(c) != 0
    }

    /// The controllers in the set, in start order.
    pub fn iter(self) -> impl Iterator<Item = Controller> {
        Controller::ALL
            .into_iter()
            .filter(move |c| self.contains(*c))
    }
}

impl FromStr for ControllerSet {
    type Err = ParseControllersError;

    /// Parses `*,-garbage-collector`, `namespace,deployment`, `workloads`, `` (none).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut set = ControllerSet::none();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (remove, name) = match item.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, item),
            };
            let named: Vec<Controller> = match name {
                "*" => Controller::ALL.to_vec(),
                "workloads" => Controller::ALL
                    .into_iter()
                    .filter(|c| c.is_workload())
                    .collect(),
                other => vec![other.parse()?],
            };
            for c in named {
                set = if remove { set.without(c) } else { set.with(c) };
            }
        }
        Ok(set)
    }
}

impl fmt::Display for ControllerSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Controller::name).collect();
        f.write_str(&names.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_minus_one_disables_only_that_controller() {
        let set: ControllerSet = "*,-garbage-collector".parse().unwrap();
        assert!(!set.contains(Controller::GarbageCollector));
        assert!(set.contains(Controller::Namespace));
        assert_eq!(set.iter().count(), Controller::ALL.len() - 1);
    }

    #[test]
    fn empty_value_means_bare() {
        assert_eq!("".parse::<ControllerSet>().unwrap(), ControllerSet::none());
    }

    #[test]
    fn workloads_group_leaves_gc_and_namespace_out() {
        let set: ControllerSet = "workloads".parse().unwrap();
        assert!(!set.contains(Controller::GarbageCollector));
        assert!(set.contains(Controller::Deployment));
    }

    #[test]
    fn unknown_name_is_refused_with_the_known_names() {
        let err = "garbage".parse::<ControllerSet>().unwrap_err();
        assert!(err.to_string().contains("garbage-collector"), "{err}");
    }

    #[test]
    fn display_round_trips() {
        let set: ControllerSet = "namespace,job".parse().unwrap();
        assert_eq!(set.to_string().parse::<ControllerSet>().unwrap(), set);
    }
}
