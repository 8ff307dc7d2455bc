//! The vocabulary of a request: what its path addresses ([`Target`]), its query and who makes
//! it ([`Query`], [`Actor`]), what it attempts ([`Attributes`], the input of authorization and
//! audit), which object and part of it a verb works on ([`ObjectRef`], [`Part`]) and what its
//! body says about its fields ([`FieldCheck`]). Leaf module: it imports nothing that handles
//! requests.

mod attributes;
mod body;
mod fields;
mod path;
mod query;

pub(crate) use attributes::Attributes;
pub use body::decode_body;
pub(crate) use body::{decode_whole_object, delete_options, read_body};
pub(crate) use fields::{BodyFields, FieldCheck, FieldValidation, Wording};
pub use path::{ResourcePath, Target, parse_path, parse_query};
pub(crate) use query::{Actor, Query, User};

use http::{HeaderMap, header};

use crate::registry::Resource;

/// Facts about the connection a request came on, attached by the TLS listener.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnectionInfo {
    /// The client's address.
    pub(crate) peer: std::net::SocketAddr,
}

/// A header's value, if present and text.
pub(crate) fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

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
