//! CEL validation rules (`x-kubernetes-validations`) of CustomResourceDefinitions, with the
//! behaviour and messages of Kubernetes' apiextensions-apiserver.
//!
//! Operators put invariants in their CRDs as CEL rules (`self.minReplicas <= self.replicas`,
//! `self == oldSelf` for immutable fields) and rely on the API server to refuse objects that break
//! them, with the rule's message. A compatible control plane therefore has to (1) refuse CRDs whose
//! rules do not compile, exactly when and how kube-apiserver does, and (2) evaluate the rules on
//! every write, with `self`/`oldSelf` bound like upstream and the same error text.
//!
//! * [`Validator::compile`] walks a compiled structural [`opkit_schema::Schema`], compiles every
//!   rule and `messageExpression` once (at CRD create/update), checks `fieldPath`s and the
//!   placement of transition rules, and reports problems as [`FieldError`]s with upstream's field
//!   paths (`…x-kubernetes-validations[0].rule`) and details (`compilation failed: …`).
//! * [`Validator::validate`] evaluates the rules against an object (and the old object on
//!   update), returning field errors such as
//!   `spec: Invalid value: "object": replicas must be at least minReplicas`.
//!
//! The interpreter is the `cel` crate (cel-rust). It has no type checker, so this crate adds the
//! static checks that matter most for authors (syntax, undeclared identifiers and functions,
//! unknown fields of `self`); type errors that cel-go would catch at compile time surface at
//! evaluation instead, as upstream's messages for runtime errors. See [`library`] for the
//! Kubernetes extension functions and [`Validator::validate`] for how work is bounded.

#![warn(missing_docs)]

mod check;
mod compile;
mod convert;
mod eval;
mod expression;
mod fieldpath;
pub mod library;

use std::sync::Arc;

pub use compile::Validator;
pub use eval::blocking_error;
pub use expression::Expression;
pub use opkit_schema::{FieldError, FieldErrorKind};

/// The most cost units (see [`Validator::validate`]) one rule evaluation may use; beyond it the
/// rule is not run and an error is reported, as upstream's per-call limit.
pub const PER_CALL_COST_LIMIT: u64 = 2_000_000;

/// The cost units all rules of one request may use together, as upstream's runtime budget.
pub const RUNTIME_COST_BUDGET: u64 = 20_000_000;

/// A failure to build the shared CEL environment (a declaration clash in the extension library):
/// a bug in this crate, never caused by user input.
#[derive(Debug, thiserror::Error)]
#[error("rule compiler initialization error: {0}")]
pub struct EnvError(#[from] cel::DeclarationError);

/// The CEL environment every rule is compiled and run in: the standard library plus the
/// Kubernetes extension functions. Built once per process.
pub(crate) fn environment() -> Result<Arc<cel::Env>, Arc<EnvError>> {
    static ENV: std::sync::OnceLock<Result<Arc<cel::Env>, Arc<EnvError>>> =
        std::sync::OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = cel::Env::stdlib();
        env.add_extension(cel::extensions::strings)
            .map_err(|e| Arc::new(EnvError(e)))?;
        library::register(&mut env).map_err(|e| Arc::new(EnvError(e)))?;
        Ok(Arc::new(env))
    })
    .clone()
}
