//! Content negotiation: which encoding a request body is in, and which one to answer with.
//!
//! Clients list what they accept in order of preference (kubectl puts protobuf first for
//! built-in kinds, then JSON); the server answers in the first one it can produce for the
//! resource at hand, as kube-apiserver does. Table and PartialObjectMetadata are "views" asked
//! for with media-type parameters (`as=Table;g=meta.k8s.io;v=v1`).

use crate::error::{ApiError, ApiResult};

/// A body encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// What to answer with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// The object(s) themselves.
    Object(Encoding),
    /// A `meta.k8s.io/v1 Table` (JSON).
    Table,
    /// `PartialObjectMetadata` / `PartialObjectMetadataList` (JSON).
    PartialMetadata,
    /// Aggregated discovery (`apidiscovery.k8s.io/v2` or `v2beta1`); holds the exact media type.
    AggregatedDiscovery(String),
}

/// One media range of an `Accept` header.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaRange<'a> {
    /// `type/subtype`, lowercased by the caller's header.
    pub essence: &'a str,
    /// Parameters as (key, value).
    pub params: Vec<(&'a str, &'a str)>,
}

impl MediaRange<'_> {
    fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| *v)
    }
}

/// Parses an `Accept` (or `Content-Type`) header into media ranges, in the order given.
pub fn parse_media_ranges(header: &str) -> Vec<MediaRange<'_>> {
    header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let essence = pieces.next()?.trim();
            if essence.is_empty() {
                return None;
            }
            let params = pieces
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    Some((k.trim(), v.trim().trim_matches('"')))
                })
                .collect();
            Some(MediaRange { essence, params })
        })
        .collect()
}

/// The encoding of a request body from its `Content-Type`.
pub fn body_encoding(content_type: Option<&str>) -> ApiResult<Encoding> {
    let Some(ct) = content_type else {
        return Ok(Encoding::Json);
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "" | "application/json" | "*/*" => Ok(Encoding::Json),
        "application/yaml" | "application/x-yaml" | "text/yaml" => Ok(Encoding::Yaml),
        "application/vnd.kubernetes.protobuf" => Ok(Encoding::Protobuf),
        _ => Err(ApiError::unsupported_media_type(ct)),
    }
}

/// What the client wants back. `protobuf_ok` says whether the resource has a protobuf form;
/// `discovery` whether this is `/api` or `/apis` (aggregated discovery may be asked for).
pub fn choose_output(
    accept: Option<&str>,
    protobuf_ok: bool,
    discovery: bool,
) -> ApiResult<Output> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Output::Object(Encoding::Json));
    };
    for range in parse_media_ranges(accept) {
        let essence = range.essence.to_ascii_lowercase();
        let as_ = range.param("as");
        let group = range.param("g");
        let version = range.param("v");
        let encoding = match essence.as_str() {
            "application/json" | "*/*" | "application/*" => Encoding::Json,
            "application/yaml" => Encoding::Yaml,
            "application/vnd.kubernetes.protobuf" => Encoding::Protobuf,
            _ => continue,
        };
        match as_ {
            None => {
                if encoding == Encoding::Protobuf && !protobuf_ok {
                    continue;
                }
                return Ok(Output::Object(encoding));
            }
            Some(kind) => {
                if encoding != Encoding::Json {
                    continue;
                }
                match (kind, group, version) {
                    ("Table", Some("meta.k8s.io"), Some("v1" | "v1beta1")) if !discovery => {
                        return Ok(Output::Table);
                    }
                    (
                        "PartialObjectMetadata" | "PartialObjectMetadataList",
                        Some("meta.k8s.io"),
                        Some("v1" | "v1beta1"),
                    ) if !discovery => return Ok(Output::PartialMetadata),
                    (
                        "APIGroupDiscoveryList",
                        Some("apidiscovery.k8s.io"),
                        Some(v @ ("v2" | "v2beta1")),
                    ) if discovery => {
                        return Ok(Output::AggregatedDiscovery(format!(
                            "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
                        )));
                    }
                    _ => continue,
                }
            }
        }
    }
    Err(ApiError::not_acceptable(accept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_accept_for_builtins_picks_protobuf_first() {
        let out = choose_output(
            Some("application/vnd.kubernetes.protobuf,application/json"),
            true,
            false,
        )
        .unwrap();
        assert_eq!(out, Output::Object(Encoding::Protobuf));
    }

    #[test]
    fn protobuf_is_skipped_for_custom_resources() {
        let out = choose_output(
            Some("application/vnd.kubernetes.protobuf,application/json"),
            false,
            false,
        )
        .unwrap();
        assert_eq!(out, Output::Object(Encoding::Json));
    }

    #[test]
    fn kubectl_get_asks_for_a_table() {
        let out = choose_output(
            Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"),
            true,
            false,
        )
        .unwrap();
        assert_eq!(out, Output::Table);
    }

    #[test]
    fn aggregated_discovery_echoes_the_media_type() {
        let out = choose_output(
            Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"),
            false,
            true,
        )
        .unwrap();
        assert_eq!(
            out,
            Output::AggregatedDiscovery(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList".into()
            )
        );
    }

    #[test]
    fn nothing_acceptable_is_406() {
        let err = choose_output(Some("text/html"), true, false).unwrap_err();
        assert_eq!(err.code(), 406);
    }

    #[test]
    fn unknown_body_type_is_415() {
        assert_eq!(body_encoding(Some("text/plain")).unwrap_err().code(), 415);
        assert_eq!(
            body_encoding(Some("application/json; charset=utf-8")).unwrap(),
            Encoding::Json
        );
    }
}
