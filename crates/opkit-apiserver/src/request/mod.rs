//! The vocabulary of a request: what its path addresses ([`Target`]), its query and who makes
//! it ([`Query`], [`Actor`]), what it attempts ([`Attributes`], the input of authorization and
//! audit), which object and part of it a verb works on ([`ObjectRef`], [`Part`]) and what its
//! body says about its fields ([`FieldCheck`]). Leaf module: it imports nothing that handles
//! requests.

mod attributes;
mod fields;
mod path;
mod query;

pub(crate) use attributes::Attributes;
pub(crate) use fields::{BodyFields, FieldCheck, FieldValidation, Wording};
pub use path::{ResourcePath, Target, parse_path, parse_query};
pub(crate) use query::{Actor, Query, User};

use crate::registry::Resource;

/// One object's coordinates: its resource, namespace and name.
#[derive(Clone, Copy)]
pub struct ObjectRef<'a> {
    /// The resource.
    pub res: &'a Resource,
    /// The namespace (namespaced resources).
    pub ns: Option<&'a str>,
    /// The name.
    pub name: &'a str,
}

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource.
    Main,
    /// The `status` subresource.
    Status,
    /// A namespace's `finalize` subresource: like the main resource, but `spec.finalizers` may
    /// change and `status` may not.
    Finalize,
}
