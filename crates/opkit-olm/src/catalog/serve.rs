//! catalogd's HTTP API — `/catalogs/<name>/api/v1/all` and `/api/v1/metas` — as a pure
//! function from a request to a response over catalogs held in memory, so `opkit catalog
//! serve` (and the lifecycle controller after it) answer as catalogd does without a catalog
//! pod, a disk copy or an index file.
//!
//! What clients see is catalogd's: `GET` and `HEAD` only (405 otherwise); the body is JSON
//! lines (`application/jsonl`), one catalog document per line, in the catalog's file order;
//! `metas` takes only `schema`, `package` and `name` (any other parameter is a 400), all given
//! ones must match, none means the whole catalog; `Last-Modified` is the time the catalog was
//! loaded and `If-Modified-Since` gives 304; an unknown catalog is a 404. An `olm.package`
//! document counts as its own package (`package=foo` returns it with foo's channels and
//! bundles).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::time::SystemTime;

use bytes::Bytes;
use serde_json::Value;

use super::load::{LoadError, add_documents, files_documents, read_dir_documents};
use super::{Catalog, SCHEMA_PACKAGE};

/// One catalog's documents as catalogd serves them: JSON lines, indexed by schema, package
/// and name.
#[derive(Clone, Debug)]
pub struct CatalogContent {
    all: Bytes,
    index: Vec<Indexed>,
    modified: SystemTime,
}

#[derive(Clone, Debug)]
struct Indexed {
    schema: String,
    package: String,
    name: String,
    line: Range<usize>,
}

impl CatalogContent {
    /// Reads the file-based catalog under `dir` once: the content to serve, and the typed
    /// catalog (every document must have the shape its schema requires, as
    /// [`super::load_dir`] reads it) for the caller to validate.
    pub fn from_dir(
        dir: &Path,
        modified: SystemTime,
    ) -> Result<(CatalogContent, Catalog), LoadError> {
        CatalogContent::from_documents_of_files(read_dir_documents(dir)?, modified)
    }

    /// As [`CatalogContent::from_dir`], for a catalog held in memory: files by path relative
    /// to its root, as [`crate::image::catalog_files`] unpacks a catalog image. Files are read
    /// in the order `from_dir` reads them, so both answer the same bytes.
    pub fn from_files(
        files: &crate::image::Files,
        modified: SystemTime,
    ) -> Result<(CatalogContent, Catalog), LoadError> {
        CatalogContent::from_documents_of_files(files_documents(files)?, modified)
    }

    fn from_documents_of_files(
        files: Vec<(std::path::PathBuf, Vec<Value>)>,
        modified: SystemTime,
    ) -> Result<(CatalogContent, Catalog), LoadError> {
        let content = CatalogContent::from_documents(
            files.iter().flat_map(|(_, docs)| docs.iter()),
            modified,
        );
        let mut catalog = Catalog::default();
        for (path, docs) in files {
            add_documents(&mut catalog, docs, &path)?;
        }
        Ok((content, catalog))
    }

    /// Serves these documents, in this order.
    pub fn from_documents<'a>(
        docs: impl IntoIterator<Item = &'a Value>,
        modified: SystemTime,
    ) -> CatalogContent {
        let mut all = Vec::new();
        let mut index = Vec::new();
        for doc in docs {
            let field = |key: &str| doc[key].as_str().unwrap_or_default().to_string();
            let schema = field("schema");
            let name = field("name");
            let package = if schema == SCHEMA_PACKAGE {
                name.clone()
            } else {
                field("package")
            };
            let start = all.len();
            // A Value always serialises.
            serde_json::to_writer(&mut all, doc).expect("a JSON value serialises");
            all.push(b'\n');
            index.push(Indexed {
                schema,
                package,
                name,
                line: start..all.len(),
            });
        }
        CatalogContent {
            all: Bytes::from(all),
            index,
            modified,
        }
    }

    /// How many documents the catalog has.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the catalog has no documents.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The whole catalog, one JSON document per line.
    pub fn all(&self) -> Bytes {
        self.all.clone()
    }

    /// The documents matching every filter given.
    pub fn metas(&self, schema: Option<&str>, package: Option<&str>, name: Option<&str>) -> Bytes {
        if schema.is_none() && package.is_none() && name.is_none() {
            return self.all();
        }
        let matches = |want: Option<&str>, have: &str| want.is_none_or(|w| w == have);
        let mut out = Vec::new();
        for m in &self.index {
            if matches(schema, &m.schema) && matches(package, &m.package) && matches(name, &m.name)
            {
                out.extend_from_slice(&self.all[m.line.clone()]);
            }
        }
        Bytes::from(out)
    }
}

/// Catalogs by name, answering catalogd's API under a root path (catalogd's is `/catalogs`).
#[derive(Clone, Debug, Default)]
pub struct CatalogServer {
    root: String,
    catalogs: BTreeMap<String, CatalogContent>,
}

/// The parts of an HTTP request the API reads.
#[derive(Clone, Copy, Debug)]
pub struct ServeRequest<'a> {
    /// `GET`, `HEAD`, …
    pub method: &'a str,
    /// The path, without the query.
    pub path: &'a str,
    /// The query string, without `?`.
    pub query: Option<&'a str>,
    /// The `If-Modified-Since` header.
    pub if_modified_since: Option<&'a str>,
}

/// What to answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeResponse {
    /// The HTTP status.
    pub status: u16,
    /// Headers to set (`Content-Type`, `Last-Modified`).
    pub headers: Vec<(&'static str, String)>,
    /// The body (empty for `HEAD` and for 304).
    pub body: Bytes,
}

impl ServeResponse {
    fn error(status: u16, reason: &str) -> ServeResponse {
        ServeResponse {
            status,
            headers: vec![("Content-Type", "text/plain; charset=utf-8".into())],
            body: Bytes::from(format!("{status} {reason}\n")),
        }
    }
}

impl CatalogServer {
    /// A server with no catalogs, answering under `root` (e.g. `/catalogs`).
    pub fn new(root: &str) -> CatalogServer {
        CatalogServer {
            root: root.trim_end_matches('/').to_string(),
            catalogs: BTreeMap::new(),
        }
    }

    /// Serves `content` as catalog `name` (replacing one of that name).
    pub fn insert(&mut self, name: &str, content: CatalogContent) {
        self.catalogs.insert(name.to_string(), content);
    }

    /// Stops serving catalog `name`.
    pub fn remove(&mut self, name: &str) -> Option<CatalogContent> {
        self.catalogs.remove(name)
    }

    /// The catalogs served, by name.
    pub fn catalogs(&self) -> impl Iterator<Item = (&str, &CatalogContent)> {
        self.catalogs.iter().map(|(n, c)| (n.as_str(), c))
    }

    /// The path at which catalog `name` is served (its `/api/v1/all` is below it).
    pub fn base_path(&self, name: &str) -> String {
        format!("{}/{name}", self.root)
    }

    /// Answers one request.
    pub fn respond(&self, req: &ServeRequest<'_>) -> ServeResponse {
        if req.method != "GET" && req.method != "HEAD" {
            return ServeResponse::error(405, "Method Not Allowed");
        }
        let Some((catalog, endpoint)) = self.route(req.path) else {
            return ServeResponse::error(404, "Not Found");
        };
        let Some(content) = self.catalogs.get(catalog) else {
            return ServeResponse::error(404, "Not Found");
        };
        let body = match endpoint {
            Endpoint::All => content.all(),
            Endpoint::Metas => {
                let mut filters: [Option<String>; 3] = [None, None, None];
                for (key, value) in form_urlencoded::parse(req.query.unwrap_or("").as_bytes()) {
                    let slot = match key.as_ref() {
                        "schema" => 0,
                        "package" => 1,
                        "name" => 2,
                        _ => return ServeResponse::error(400, "Bad Request"),
                    };
                    filters[slot].get_or_insert_with(|| value.into_owned());
                }
                // An empty value filters nothing, as in catalogd.
                let f = |i: usize| filters[i].as_deref().filter(|v| !v.is_empty());
                content.metas(f(0), f(1), f(2))
            }
        };
        let modified = httpdate::fmt_http_date(content.modified);
        let mut headers = vec![("Last-Modified", modified)];
        if not_modified(content.modified, req.if_modified_since) {
            return ServeResponse {
                status: 304,
                headers,
                body: Bytes::new(),
            };
        }
        headers.push(("Content-Type", "application/jsonl".into()));
        ServeResponse {
            status: 200,
            headers,
            body: if req.method == "HEAD" {
                Bytes::new()
            } else {
                body
            },
        }
    }

    fn route<'p>(&self, path: &'p str) -> Option<(&'p str, Endpoint)> {
        let rest = path.strip_prefix(self.root.as_str())?.strip_prefix('/')?;
        let (catalog, api) = rest.split_once('/')?;
        let endpoint = match api {
            "api/v1/all" => Endpoint::All,
            "api/v1/metas" => Endpoint::Metas,
            _ => return None,
        };
        (!catalog.is_empty()).then_some((catalog, endpoint))
    }
}

#[derive(Clone, Copy)]
enum Endpoint {
    All,
    Metas,
}

/// `If-Modified-Since` at or after the modification time (HTTP dates have whole seconds).
fn not_modified(modified: SystemTime, since: Option<&str>) -> bool {
    let Some(since) = since.and_then(|s| httpdate::parse_http_date(s).ok()) else {
        return false;
    };
    let secs = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    };
    secs(modified) <= secs(since)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server() -> CatalogServer {
        let docs = vec![
            json!({"schema": "olm.package", "name": "foo", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "package": "foo", "name": "stable", "entries": [{"name": "foo.v1"}]}),
            json!({"schema": "olm.bundle", "package": "foo", "name": "foo.v1", "image": "r/foo:1"}),
            json!({"schema": "olm.package", "name": "bar", "defaultChannel": "alpha"}),
        ];
        let mut s = CatalogServer::new("/catalogs/");
        s.insert(
            "ops",
            CatalogContent::from_documents(&docs, SystemTime::UNIX_EPOCH),
        );
        s
    }

    fn get(s: &CatalogServer, path: &str, query: Option<&str>) -> ServeResponse {
        s.respond(&ServeRequest {
            method: "GET",
            path,
            query,
            if_modified_since: None,
        })
    }

    fn lines(r: &ServeResponse) -> Vec<Value> {
        std::str::from_utf8(&r.body)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn all_serves_every_document_as_json_lines_in_order() {
        let r = get(&server(), "/catalogs/ops/api/v1/all", None);
        assert_eq!(r.status, 200);
        assert!(
            r.headers
                .contains(&("Content-Type", "application/jsonl".into()))
        );
        let docs = lines(&r);
        assert_eq!(docs.len(), 4);
        assert_eq!(docs[2]["name"], "foo.v1");
    }

    #[test]
    fn metas_filters_by_every_parameter_given() {
        let s = server();
        let r = get(&s, "/catalogs/ops/api/v1/metas", Some("package=foo"));
        assert_eq!(
            lines(&r).len(),
            3,
            "the package document belongs to its package"
        );
        let r = get(
            &s,
            "/catalogs/ops/api/v1/metas",
            Some("schema=olm.bundle&package=foo"),
        );
        assert_eq!(lines(&r)[0]["image"], "r/foo:1");
        let r = get(&s, "/catalogs/ops/api/v1/metas", Some("schema=olm.package"));
        assert_eq!(lines(&r).len(), 2);
        let r = get(&s, "/catalogs/ops/api/v1/metas", Some("name=nothing"));
        assert_eq!((r.status, r.body.len()), (200, 0));
        let r = get(&s, "/catalogs/ops/api/v1/metas", None);
        assert_eq!(lines(&r).len(), 4, "no filter is the whole catalog");
    }

    #[test]
    fn refuses_what_catalogd_refuses() {
        let s = server();
        let r = get(&s, "/catalogs/ops/api/v1/metas", Some("version=1"));
        assert_eq!((r.status, &r.body[..]), (400, &b"400 Bad Request\n"[..]));
        assert_eq!(get(&s, "/catalogs/other/api/v1/all", None).status, 404);
        assert_eq!(get(&s, "/catalogs/ops/api/v2/all", None).status, 404);
        let post = s.respond(&ServeRequest {
            method: "POST",
            path: "/catalogs/ops/api/v1/all",
            query: None,
            if_modified_since: None,
        });
        assert_eq!(post.status, 405);
    }

    #[test]
    fn files_held_in_memory_serve_what_their_directory_serves() {
        // "a-c.yaml" sorts before "a/b.yaml" as a string, after it as a path.
        let files = [
            (
                "a/b.yaml",
                "schema: olm.package\nname: foo\ndefaultChannel: stable\n",
            ),
            (
                "a-c.yaml",
                "schema: olm.package\nname: bar\ndefaultChannel: alpha\n",
            ),
            (
                "z.json",
                r#"{"schema": "olm.channel", "package": "foo", "name": "stable", "entries": [{"name": "foo.v1"}]}"#,
            ),
            ("README.md", "not a catalog file"),
        ];
        let dir = tempfile::tempdir().unwrap();
        let mut held = crate::image::Files::new();
        for (path, text) in files {
            let file = dir.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, text).unwrap();
            held.insert(path.to_string(), text.as_bytes().to_vec());
        }
        let (from_dir, _) = CatalogContent::from_dir(dir.path(), SystemTime::UNIX_EPOCH).unwrap();
        let (from_files, catalog) =
            CatalogContent::from_files(&held, SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!(from_files.all(), from_dir.all());
        assert_eq!(from_files.len(), 3);
        assert_eq!(catalog.packages[0].name, "foo");
        held.insert("bad.yaml".into(), vec![0xff, 0xfe]);
        let err = CatalogContent::from_files(&held, SystemTime::UNIX_EPOCH).unwrap_err();
        assert!(err.to_string().contains("bad.yaml"), "{err}");
    }

    #[test]
    fn head_has_no_body_and_an_unchanged_catalog_answers_304() {
        let s = server();
        let head = s.respond(&ServeRequest {
            method: "HEAD",
            path: "/catalogs/ops/api/v1/all",
            query: None,
            if_modified_since: None,
        });
        assert_eq!((head.status, head.body.len()), (200, 0));
        let cached = s.respond(&ServeRequest {
            method: "GET",
            path: "/catalogs/ops/api/v1/all",
            query: None,
            if_modified_since: Some("Thu, 01 Jan 1970 00:00:10 GMT"),
        });
        assert_eq!((cached.status, cached.body.len()), (304, 0));
        assert!(
            cached
                .headers
                .contains(&("Last-Modified", "Thu, 01 Jan 1970 00:00:00 GMT".into()))
        );
    }
}
