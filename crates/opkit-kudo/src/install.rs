//! Installing a package on a cluster, KUDO's way: the `Operator` and `OperatorVersion`
//! (reused when they exist), then an `Instance` naming the operator version with the user's
//! parameters, checked first so bad values create nothing. `kubectl kudo install` and the
//! benchmark both install through here, so there is one copy of the protocol the manager
//! relies on.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::api::{Instance, InstanceSpec, Operator, OperatorVersion};
use crate::package::Package;
use crate::params::{self, ParamsError};

/// The label KUDO puts on an instance: its operator's name.
pub const OPERATOR_LABEL: &str = "kudo.dev/operator";

/// Why an install failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Reading or creating the operator failed.
    #[error("failed to install operator {namespace}/{name}: {source}")]
    Operator {
        /// The namespace.
        namespace: String,
        /// The operator.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Reading or creating the operator version failed.
    #[error("failed to install operatorversion {namespace}/{name}: {source}")]
    OperatorVersion {
        /// The namespace.
        namespace: String,
        /// The operator version.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Reading or creating the instance failed.
    #[error("failed to install instance {namespace}/{name}: {source}")]
    Instance {
        /// The namespace.
        namespace: String,
        /// The instance.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// An instance of that name exists (KUDO refuses to reuse it).
    #[error(
        "cannot install instance '{name}' because an instance of that name already exists in namespace {namespace}"
    )]
    InstanceExists {
        /// The namespace.
        namespace: String,
        /// The instance.
        name: String,
    },
    /// The parameters do not fit the operator version.
    #[error(transparent)]
    Parameters(#[from] ParamsError),
}

/// What [`operator`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Installed {
    /// The Operator was created (it did not exist).
    pub operator_created: bool,
    /// The OperatorVersion was created (it did not exist).
    pub operator_version_created: bool,
}

/// Creates the operator and operator version of `pkg` in `namespace` unless they exist
/// (KUDO's `OperatorAndOperatorVersion`).
pub async fn operator(
    client: &Client,
    namespace: &str,
    pkg: &Package,
) -> Result<Installed, InstallError> {
    let name = pkg.name();
    let op_err = |source| InstallError::Operator {
        namespace: namespace.to_string(),
        name: name.to_string(),
        source,
    };
    let operators: Api<Operator> = Api::namespaced(client.clone(), namespace);
    let operator_created = operators.get_opt(name).await.map_err(op_err)?.is_none();
    if operator_created {
        let mut op = pkg.operator.clone();
        op.metadata.namespace = Some(namespace.to_string());
        operators
            .create(&PostParams::default(), &op)
            .await
            .map_err(op_err)?;
    }
    let ov_name = pkg
        .operator_version
        .metadata
        .name
        .clone()
        .unwrap_or_default();
    let ov_err = |source| InstallError::OperatorVersion {
        namespace: namespace.to_string(),
        name: ov_name.clone(),
        source,
    };
    let versions: Api<OperatorVersion> = Api::namespaced(client.clone(), namespace);
    let operator_version_created = versions.get_opt(&ov_name).await.map_err(ov_err)?.is_none();
    if operator_version_created {
        let mut ov = pkg.operator_version.clone();
        ov.metadata.namespace = Some(namespace.to_string());
        versions
            .create(&PostParams::default(), &ov)
            .await
            .map_err(ov_err)?;
    }
    Ok(Installed {
        operator_created,
        operator_version_created,
    })
}

/// Checks `parameters` against `pkg`'s operator version (see
/// [`params::validate_install`]).
pub fn check_parameters(
    pkg: &Package,
    parameters: &BTreeMap<String, String>,
) -> Result<(), InstallError> {
    let ov_name = pkg.operator_version.metadata.name.as_deref().unwrap_or("");
    params::validate_install(&pkg.operator_version.spec.parameters, parameters, ov_name)?;
    Ok(())
}

/// Whether the instance `name` exists in `namespace`.
pub async fn instance_exists(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<bool, InstallError> {
    let instances: Api<Instance> = Api::namespaced(client.clone(), namespace);
    let found = instances
        .get_opt(name)
        .await
        .map_err(|source| InstallError::Instance {
            namespace: namespace.to_string(),
            name: name.to_string(),
            source,
        })?;
    Ok(found.is_some())
}

/// Creates the instance `name` of `pkg`'s operator version in `namespace` with
/// `parameters` (only the user's values, as strings; the manager fills in the defaults).
/// The operator version must be installed ([`operator`]) and the parameters checked
/// ([`check_parameters`]).
pub async fn instance(
    client: &Client,
    namespace: &str,
    name: &str,
    pkg: &Package,
    parameters: BTreeMap<String, String>,
) -> Result<Instance, InstallError> {
    let mut instance = Instance::new(
        name,
        InstanceSpec {
            operator_version: ObjectReference {
                name: pkg.operator_version.metadata.name.clone(),
                ..ObjectReference::default()
            },
            parameters,
            ..InstanceSpec::default()
        },
    );
    instance.metadata.namespace = Some(namespace.to_string());
    instance.metadata.labels = Some(BTreeMap::from([(
        OPERATOR_LABEL.to_string(),
        pkg.name().to_string(),
    )]));
    let instances: Api<Instance> = Api::namespaced(client.clone(), namespace);
    instances
        .create(&PostParams::default(), &instance)
        .await
        .map_err(|source| InstallError::Instance {
            namespace: namespace.to_string(),
            name: name.to_string(),
            source,
        })
}
