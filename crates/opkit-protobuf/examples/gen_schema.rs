//! Generator for `src/schema/generated.rs`, the static protobuf ↔ JSON schema table.
//!
//! The table joins two sources, each authoritative for one half of the job:
//!
//! * **k8s-pb** (the prost code in the cargo registry) for the wire layout: message names,
//!   field tags, scalar kinds, repeated/map labels and message references. Using the very code
//!   our tests cross-check against guarantees we agree with the prost types.
//! * **The Kubernetes Go types** (`types.go` & co. of kubernetes/api, kubernetes/apimachinery
//!   and kubernetes/apiextensions-apiserver at the tag matching k8s-pb, v0.35.0) for the JSON side:
//!   the `json:"…"` tag gives the camelCase name (`hostIP`), `,inline` marks embedded structs whose
//!   fields are flattened into the parent object (`Probe.handler`, `Volume.volumeSource`), and
//!   pointer-ness plus `omitempty`/`omitzero` tell which zero values kube-apiserver's JSON omits.
//!   The `+k8s:deepcopy-gen:interfaces=…runtime.Object` markers name the top-level kinds and
//!   `GroupName` in `register.go` gives their API group.
//!
//! When k8s-openapi's sources are found, the JSON names are cross-checked against its serde code
//! (`"hostIP" => Field::Key_host_ip`) and differences are reported.
//!
//! Regenerate (from the workspace root) with the Go sources extracted side by side, e.g.
//!
//! ```text
//! mkdir -p /tmp/gosrc/{api,apimachinery,apiextensions-apiserver}
//! # extract kubernetes/api, kubernetes/apimachinery and kubernetes/apiextensions-apiserver
//! # at tag v0.35.0 into those three directories (git clone --branch v0.35.0 …, or git archive)
//! cargo run -p opkit-protobuf --example gen_schema -- --go-src /tmp/gosrc
//! cargo fmt -p opkit-protobuf
//! ```
//!
//! Options: `--k8s-pb DIR` (the crate's `src` dir; default: found in `$CARGO_HOME/registry/src`),
//! `--k8s-openapi DIR` (its `src/v1_35` dir; default: found likewise, optional),
//! `--out FILE` (default `crates/opkit-protobuf/src/schema/generated.rs`).
//! The generator uses only `std` and fails loudly if a reference cannot be resolved.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// One protobuf package: where its prost code lives in k8s-pb, its proto package name, where
/// its Go types live under `--go-src`, and whether its kinds are served (roots of the table).
struct Pkg {
    pb_dir: &'static str,
    proto: &'static str,
    go_dir: &'static str,
    root: bool,
}

const fn pkg(pb_dir: &'static str, proto: &'static str, go_dir: &'static str, root: bool) -> Pkg {
    Pkg {
        pb_dir,
        proto,
        go_dir,
        root,
    }
}

/// The packages in the table. Roots contribute all their messages and kinds; the others only
/// the messages that roots reference.
const PACKAGES: &[Pkg] = &[
    pkg("api/core/v1", "k8s.io.api.core.v1", "api/core/v1", true),
    pkg("api/apps/v1", "k8s.io.api.apps.v1", "api/apps/v1", true),
    pkg("api/batch/v1", "k8s.io.api.batch.v1", "api/batch/v1", true),
    pkg(
        "api/coordination/v1",
        "k8s.io.api.coordination.v1",
        "api/coordination/v1",
        true,
    ),
    pkg(
        "api/events/v1",
        "k8s.io.api.events.v1",
        "api/events/v1",
        true,
    ),
    pkg("api/rbac/v1", "k8s.io.api.rbac.v1", "api/rbac/v1", true),
    pkg(
        "api/policy/v1",
        "k8s.io.api.policy.v1",
        "api/policy/v1",
        true,
    ),
    pkg(
        "api/networking/v1",
        "k8s.io.api.networking.v1",
        "api/networking/v1",
        true,
    ),
    pkg(
        "api/authentication/v1",
        "k8s.io.api.authentication.v1",
        "api/authentication/v1",
        true,
    ),
    pkg(
        "api/authorization/v1",
        "k8s.io.api.authorization.v1",
        "api/authorization/v1",
        true,
    ),
    pkg(
        "api/autoscaling/v1",
        "k8s.io.api.autoscaling.v1",
        "api/autoscaling/v1",
        true,
    ),
    pkg(
        "api/autoscaling/v2",
        "k8s.io.api.autoscaling.v2",
        "api/autoscaling/v2",
        true,
    ),
    pkg(
        "api/discovery/v1",
        "k8s.io.api.discovery.v1",
        "api/discovery/v1",
        true,
    ),
    pkg(
        "api/apidiscovery/v2",
        "k8s.io.api.apidiscovery.v2",
        "api/apidiscovery/v2",
        true,
    ),
    pkg(
        "api/admissionregistration/v1",
        "k8s.io.api.admissionregistration.v1",
        "api/admissionregistration/v1",
        true,
    ),
    pkg(
        "api/certificates/v1",
        "k8s.io.api.certificates.v1",
        "api/certificates/v1",
        true,
    ),
    pkg(
        "api/flowcontrol/v1",
        "k8s.io.api.flowcontrol.v1",
        "api/flowcontrol/v1",
        true,
    ),
    pkg("api/node/v1", "k8s.io.api.node.v1", "api/node/v1", true),
    pkg(
        "api/scheduling/v1",
        "k8s.io.api.scheduling.v1",
        "api/scheduling/v1",
        true,
    ),
    pkg(
        "api/storage/v1",
        "k8s.io.api.storage.v1",
        "api/storage/v1",
        true,
    ),
    pkg(
        "apiextensions_apiserver/pkg/apis/apiextensions/v1",
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1",
        "apiextensions-apiserver/pkg/apis/apiextensions/v1",
        true,
    ),
    pkg(
        "apimachinery/pkg/apis/meta/v1",
        "k8s.io.apimachinery.pkg.apis.meta.v1",
        "apimachinery/pkg/apis/meta/v1",
        true,
    ),
    pkg(
        "apimachinery/pkg/runtime",
        "k8s.io.apimachinery.pkg.runtime",
        "apimachinery/pkg/runtime",
        false,
    ),
    pkg(
        "apimachinery/pkg/util/intstr",
        "k8s.io.apimachinery.pkg.util.intstr",
        "apimachinery/pkg/util/intstr",
        false,
    ),
    pkg(
        "apimachinery/pkg/api/resource",
        "k8s.io.apimachinery.pkg.api.resource",
        "apimachinery/pkg/api/resource",
        false,
    ),
];

/// Messages whose JSON form is not a plain object, by full proto name.
const SPECIALS: &[(&str, &str)] = &[
    ("k8s.io.apimachinery.pkg.apis.meta.v1.Time", "Time"),
    (
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
        "MicroTime",
    ),
    ("k8s.io.apimachinery.pkg.apis.meta.v1.Duration", "Duration"),
    ("k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1", "RawJson"),
    ("k8s.io.apimachinery.pkg.runtime.RawExtension", "RawJson"),
    (
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
        "IntOrString",
    ),
    ("k8s.io.apimachinery.pkg.api.resource.Quantity", "Quantity"),
    (
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON",
        "RawJson",
    ),
    (
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
        "SchemaOrArray",
    ),
    (
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
        "SchemaOrBool",
    ),
    (
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
        "SchemaOrStringArray",
    ),
];

type Res<T> = Result<T, String>;

fn main() {
    if let Err(e) = run() {
        eprintln!("gen_schema: error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let mut go_src: Option<PathBuf> = None;
    let mut pb_src: Option<PathBuf> = None;
    let mut openapi_src: Option<PathBuf> = None;
    let mut out = PathBuf::from("crates/opkit-protobuf/src/schema/generated.rs");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--go-src" => go_src = Some(PathBuf::from(val()?)),
            "--k8s-pb" => pb_src = Some(PathBuf::from(val()?)),
            "--k8s-openapi" => openapi_src = Some(PathBuf::from(val()?)),
            "--out" => out = PathBuf::from(val()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let go_src = go_src.ok_or("--go-src DIR is required (see the file's doc comment)")?;
    let pb_src = match pb_src {
        Some(p) => p,
        None => find_registry_crate("k8s-pb-0.9.0")?.join("src"),
    };
    let openapi_src = openapi_src.or_else(|| {
        find_registry_crate("k8s-openapi-0.29.0")
            .ok()
            .map(|p| p.join("src/v1_35"))
    });

    // 1. Wire layout from k8s-pb.
    let mut pb: BTreeMap<(String, String), PbMessage> = BTreeMap::new();
    for p in PACKAGES {
        let file = pb_src.join(p.pb_dir).join("mod.rs");
        let text = fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        for m in parse_prost(&text, p.pb_dir)? {
            pb.insert((p.pb_dir.to_string(), m.rust_name.clone()), m);
        }
    }

    // 2. JSON side from the Go types.
    let mut go: HashMap<&str, GoPkg> = HashMap::new();
    for p in PACKAGES {
        go.insert(p.pb_dir, parse_go_pkg(&go_src.join(p.go_dir))?);
    }

    // 3. Closure of the messages reachable from the roots.
    let mut included: BTreeSet<(String, String)> = BTreeSet::new();
    let mut stack: Vec<(String, String)> = pb
        .keys()
        .filter(|(dir, _)| PACKAGES.iter().any(|p| p.root && p.pb_dir == dir))
        .cloned()
        .collect();
    while let Some(key) = stack.pop() {
        if !included.insert(key.clone()) {
            continue;
        }
        let m = pb
            .get(&key)
            .ok_or_else(|| format!("unresolved message reference {}::{}", key.0, key.1))?;
        for f in &m.fields {
            if let PbTy::Message(r) = &f.ty {
                stack.push(r.clone());
            }
        }
    }

    // Full proto names and indices.
    let proto_pkg = |dir: &str| -> &'static str {
        PACKAGES
            .iter()
            .find(|p| p.pb_dir == dir)
            .map(|p| p.proto)
            .unwrap_or("?")
    };
    let mut named: Vec<(String, (String, String))> = included
        .iter()
        .map(|key| {
            let gname = go
                .get(key.0.as_str())
                .and_then(|g| g.types.get(&key.1.to_lowercase()))
                .map(|t| t.name.clone())
                .unwrap_or_else(|| key.1.clone());
            (format!("{}.{}", proto_pkg(&key.0), gname), key.clone())
        })
        .collect();
    named.sort();
    let index: HashMap<(String, String), usize> = named
        .iter()
        .enumerate()
        .map(|(i, (_, k))| (k.clone(), i))
        .collect();

    let openapi = match &openapi_src {
        Some(dir) if dir.is_dir() => Some(parse_openapi(dir)?),
        _ => None,
    };

    // 4. Emit.
    let mut warnings: Vec<String> = Vec::new();
    let mut msgs_out = String::new();
    let mut kinds: Vec<(String, String, usize)> = Vec::new();
    let mut json_names: HashMap<usize, Vec<(String, Option<usize>)>> = HashMap::new();
    for (i, (full, key)) in named.iter().enumerate() {
        let m = &pb[key];
        let gpkg = &go[key.0.as_str()];
        let gty = gpkg.types.get(&key.1.to_lowercase()).map(|t| {
            // `type List metav1.List`: the fields are those of the aliased meta type.
            match &t.alias_of {
                Some(target) => go
                    .get("apimachinery/pkg/apis/meta/v1")
                    .and_then(|meta| meta.types.get(&target.to_lowercase()))
                    .map(|aliased| (t, aliased))
                    .unwrap_or((t, t)),
                None => (t, t),
            }
        });
        let (gty, gfields) = (gty.map(|(t, _)| t), gty.map(|(_, a)| a));
        let mut special = SPECIALS
            .iter()
            .find(|(n, _)| n == full)
            .map(|(_, s)| *s)
            .unwrap_or("None");
        if special == "None"
            && let Some(t) = gty
            && t.slice_elem.is_some()
            && m.fields.len() == 1
            && m.fields[0].rust == "items"
            && m.fields[0].label == "Rep"
        {
            special = "ItemsList";
        }
        let type_meta = gfields.is_some_and(|t| {
            t.fields
                .iter()
                .any(|f| f.inline && f.proto_tag.is_none() && f.ty.ends_with("TypeMeta"))
        });
        if gty.is_none() {
            warnings.push(format!("{full}: no Go type found; JSON names guessed"));
        }
        let _ = writeln!(
            msgs_out,
            "    // {i}\n    m(\"{full}\", Special::{special}, {type_meta}, &["
        );
        let mut names = Vec::new();
        for f in &m.fields {
            let gf = gfields.and_then(|t| t.fields.iter().find(|g| g.proto_tag == Some(f.tag)));
            let (json, flags) = match gf {
                Some(g) => {
                    let mut flags = Vec::new();
                    if g.inline {
                        flags.push("INLINE");
                    }
                    let pointer = g.ty.starts_with('*');
                    let structy = matches!(f.ty, PbTy::Message(_))
                        && !g.ty.starts_with("[]")
                        && !g.ty.starts_with("map[")
                        && special_of(&f.ty, &named, &index, &go, &pb) != "ItemsList";
                    let omit = if structy {
                        g.omitzero
                    } else {
                        (g.omitempty || g.omitzero) && !pointer
                    };
                    if omit {
                        flags.push("OMIT_ZERO");
                    }
                    let flags = if flags.is_empty() {
                        "0".to_string()
                    } else {
                        flags.join(" | ")
                    };
                    (g.json.clone(), flags)
                }
                None => {
                    if special == "None" {
                        warnings.push(format!(
                            "{full}.{} (tag {}): no Go field; JSON name guessed",
                            f.rust, f.tag
                        ));
                    }
                    (lower_camel(&f.rust), "0".to_string())
                }
            };
            let ty = match &f.ty {
                PbTy::Scalar(s) => s.to_string(),
                PbTy::Message(r) => format!(
                    "Message({})",
                    index
                        .get(r)
                        .ok_or_else(|| format!("{full}: unresolved {r:?}"))?
                ),
            };
            let inline_target = match (&f.ty, flags.contains("INLINE")) {
                (PbTy::Message(r), true) => index.get(r).copied(),
                _ => None,
            };
            names.push((json.clone(), inline_target));
            let _ = writeln!(
                msgs_out,
                "        f({}, \"{}\", {}, {}, {}),",
                f.tag, json, ty, f.label, flags
            );
        }
        json_names.insert(i, names);
        msgs_out.push_str("    ]),\n");

        let is_root = PACKAGES.iter().any(|p| p.root && p.pb_dir == key.0);
        if let (true, Some(t), Some(group)) = (is_root, gty, gpkg.group.as_ref())
            && t.runtime_object
        {
            let version = key.0.rsplit('/').next().unwrap_or("v1");
            let api_version = if group.is_empty() {
                version.to_string()
            } else {
                format!("{group}/{version}")
            };
            kinds.push((api_version, t.name.clone(), i));
        }
    }
    kinds.sort();

    // Cross-check JSON names against k8s-openapi.
    if let Some(openapi) = &openapi {
        for (i, (full, key)) in named.iter().enumerate() {
            if SPECIALS.iter().any(|(n, _)| n == full) {
                continue;
            }
            let Some(expected) = openapi
                .get(&key.0)
                .and_then(|p| p.get(&key.1.to_lowercase()))
            else {
                continue;
            };
            let mut ours = BTreeSet::new();
            collect_names(i, &json_names, &mut ours);
            if !ours.is_subset(expected) {
                let extra: Vec<_> = ours.difference(expected).collect();
                warnings.push(format!("{full}: JSON names not in k8s-openapi: {extra:?}"));
            }
        }
    }

    let mut out_text = String::new();
    out_text.push_str(
        "// @generated by `cargo run -p opkit-protobuf --example gen_schema` from k8s-pb 0.9.0\n\
         // and the Kubernetes Go types at v0.35.0. Do not edit by hand: see examples/gen_schema.rs.\n\n\
         use super::Label::{Map, Optional as Opt, Repeated as Rep};\n\
         use super::Ty::{Bool, Bytes, Double, Int32, Int64, Message, String};\n\
         use super::{f, k, m, KindEntry, Message as Msg, Special, INLINE, OMIT_ZERO};\n\n",
    );
    let _ = writeln!(
        out_text,
        "/// Every message of the table, sorted by full proto name; `Message(i)` refers to index `i`.\n\
         pub(crate) static MESSAGES: [Msg; {}] = [",
        named.len()
    );
    out_text.push_str(&msgs_out);
    out_text.push_str("];\n\n");
    let _ = writeln!(
        out_text,
        "/// Top-level kinds, sorted by (apiVersion, kind).\npub(crate) static KINDS: [KindEntry; {}] = [",
        kinds.len()
    );
    for (av, kind, i) in &kinds {
        let _ = writeln!(out_text, "    k(\"{av}\", \"{kind}\", {i}),");
    }
    out_text.push_str("];\n");
    fs::write(&out, out_text).map_err(|e| format!("{}: {e}", out.display()))?;

    for w in &warnings {
        eprintln!("warning: {w}");
    }
    eprintln!(
        "wrote {} ({} messages, {} kinds, {} warnings)",
        out.display(),
        named.len(),
        kinds.len(),
        warnings.len()
    );
    Ok(())
}

fn collect_names(
    i: usize,
    all: &HashMap<usize, Vec<(String, Option<usize>)>>,
    out: &mut BTreeSet<String>,
) {
    if let Some(names) = all.get(&i) {
        for (n, inline) in names {
            match inline {
                Some(j) => collect_names(*j, all, out),
                None => {
                    out.insert(n.clone());
                }
            }
        }
    }
}

fn special_of(
    ty: &PbTy,
    named: &[(String, (String, String))],
    index: &HashMap<(String, String), usize>,
    go: &HashMap<&str, GoPkg>,
    pb: &BTreeMap<(String, String), PbMessage>,
) -> &'static str {
    let PbTy::Message(r) = ty else {
        return "None";
    };
    let Some(i) = index.get(r) else {
        return "None";
    };
    if let Some((_, s)) = SPECIALS.iter().find(|(n, _)| *n == named[*i].0) {
        return s;
    }
    let is_slice = go
        .get(r.0.as_str())
        .and_then(|g| g.types.get(&r.1.to_lowercase()))
        .is_some_and(|t| t.slice_elem.is_some());
    let m = &pb[r];
    if is_slice && m.fields.len() == 1 && m.fields[0].rust == "items" {
        "ItemsList"
    } else {
        "None"
    }
}

fn lower_camel(snake: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in snake.trim_start_matches("r#").chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn find_registry_crate(name: &str) -> Res<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or("neither CARGO_HOME nor HOME is set")?;
    let reg = home.join("registry/src");
    let entries = fs::read_dir(&reg).map_err(|e| format!("{}: {e}", reg.display()))?;
    for e in entries.flatten() {
        let cand = e.path().join(name);
        if cand.is_dir() {
            return Ok(cand);
        }
    }
    Err(format!(
        "{name} not found under {}; run `cargo fetch` or pass its path",
        reg.display()
    ))
}

// ---------------------------------------------------------------------------------------------
// k8s-pb (prost output) parsing
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum PbTy {
    Scalar(&'static str),
    /// (k8s-pb module dir, Rust struct name)
    Message((String, String)),
}

#[derive(Debug)]
struct PbField {
    tag: u32,
    rust: String,
    ty: PbTy,
    label: &'static str,
}

#[derive(Debug)]
struct PbMessage {
    rust_name: String,
    fields: Vec<PbField>,
}

fn parse_prost(text: &str, dir: &str) -> Res<Vec<PbMessage>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut cur: Option<PbMessage> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        i += 1;
        if let Some(rest) = line.strip_prefix("pub struct ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let msg = PbMessage {
                rust_name: name,
                fields: Vec::new(),
            };
            if rest.trim_end().ends_with("{}") {
                out.push(msg);
            } else {
                cur = Some(msg);
            }
            continue;
        }
        if line == "}" {
            if let Some(m) = cur.take() {
                out.push(m);
            }
            continue;
        }
        let Some(attr) = line
            .strip_prefix("#[prost(")
            .and_then(|r| r.strip_suffix(")]"))
        else {
            continue;
        };
        let Some(msg) = cur.as_mut() else {
            return Err(format!("{dir}: prost attribute outside a struct: {line}"));
        };
        // The declaration may span lines: join until it ends with ',' with balanced brackets.
        let mut decl = String::new();
        while i < lines.len() {
            decl.push_str(lines[i].trim());
            i += 1;
            let opens = decl.matches('<').count();
            let closes = decl.matches('>').count();
            if decl.ends_with(',') && opens == closes {
                break;
            }
        }
        let decl = decl.trim_end_matches(',');
        let (name, ty_text) = decl
            .strip_prefix("pub ")
            .and_then(|d| d.split_once(':'))
            .ok_or_else(|| format!("{dir}: cannot parse field declaration {decl}"))?;
        let name = name.trim().trim_start_matches("r#").to_string();
        let ty_text: String = ty_text.chars().filter(|c| !c.is_whitespace()).collect();
        let parts = split_attr(attr);
        let mut tag = None;
        let mut label = "Opt";
        let mut kind: Option<String> = None;
        let mut map_value: Option<String> = None;
        for p in &parts {
            let p = p.trim();
            if let Some(t) = p.strip_prefix("tag = ") {
                tag = Some(
                    t.trim_matches('"')
                        .parse::<u32>()
                        .map_err(|e| format!("{dir}: bad tag {t}: {e}"))?,
                );
            } else if p == "repeated" {
                label = "Rep";
            } else if p == "optional" || p == "boxed" || p.starts_with("packed") {
            } else if let Some(v) = p.strip_prefix("btree_map = ") {
                label = "Map";
                let v = v.trim_matches('"');
                let (k, val) = v
                    .split_once(',')
                    .ok_or_else(|| format!("{dir}: bad map {v}"))?;
                if k.trim() != "string" {
                    return Err(format!("{dir}.{name}: map key {k} is not a string"));
                }
                map_value = Some(val.trim().to_string());
            } else if let Some(v) = p.strip_prefix("bytes = ") {
                let _ = v;
                kind = Some("bytes".into());
            } else if kind.is_none() {
                kind = Some(p.to_string());
            } else {
                return Err(format!("{dir}.{name}: unexpected attribute part {p}"));
            }
        }
        let kind = map_value
            .or(kind)
            .ok_or_else(|| format!("{dir}.{name}: no kind in {attr}"))?;
        let ty = match kind.as_str() {
            "string" => PbTy::Scalar("String"),
            "bool" => PbTy::Scalar("Bool"),
            "int32" => PbTy::Scalar("Int32"),
            "int64" => PbTy::Scalar("Int64"),
            "double" => PbTy::Scalar("Double"),
            "bytes" => PbTy::Scalar("Bytes"),
            "message" => PbTy::Message(resolve_path(dir, &ty_text)?),
            other => return Err(format!("{dir}.{name}: unsupported kind {other}")),
        };
        msg.fields.push(PbField {
            tag: tag.ok_or_else(|| format!("{dir}.{name}: no tag"))?,
            rust: name,
            ty,
            label,
        });
    }
    for m in &mut out {
        m.fields.sort_by_key(|f| f.tag);
    }
    Ok(out)
}

/// Splits a prost attribute body at commas outside quotes.
fn split_attr(attr: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in attr.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            ',' if !quoted => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        parts.push(cur);
    }
    parts
}

/// Finds the message path in a field type (`Option<super::super::x::y::Name>`, `Vec<Name>`,
/// `BTreeMap<String, Name>`) and resolves it relative to the module `dir`.
fn resolve_path(dir: &str, ty: &str) -> Res<(String, String)> {
    const WRAPPERS: &[&str] = &[
        "::core::option::Option",
        "::prost::alloc::vec::Vec",
        "::prost::alloc::boxed::Box",
        "::prost::alloc::collections::BTreeMap",
        "::prost::alloc::string::String",
    ];
    let tokens: Vec<&str> = ty
        .split(['<', '>', ','])
        .filter(|t| !t.is_empty() && !WRAPPERS.contains(t))
        .collect();
    let [path] = tokens.as_slice() else {
        return Err(format!("{dir}: cannot find the message type in {ty}"));
    };
    let mut module: Vec<&str> = dir.split('/').collect();
    let mut segs: Vec<&str> = path.split("::").collect();
    let name = segs.pop().ok_or("empty path")?;
    for s in segs {
        if s == "super" {
            module
                .pop()
                .ok_or_else(|| format!("{dir}: too many super in {path}"))?;
        } else {
            module.push(s);
        }
    }
    Ok((module.join("/"), name.to_string()))
}

// ---------------------------------------------------------------------------------------------
// Go type parsing (line based; the API packages are gofmt'ed and regular)
// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
struct GoField {
    ty: String,
    json: String,
    omitempty: bool,
    omitzero: bool,
    inline: bool,
    proto_tag: Option<u32>,
}

#[derive(Debug)]
struct GoType {
    name: String,
    fields: Vec<GoField>,
    slice_elem: Option<String>,
    /// `type List metav1.List`: the aliased meta type's name.
    alias_of: Option<String>,
    runtime_object: bool,
}

#[derive(Debug, Default)]
struct GoPkg {
    group: Option<String>,
    /// By lowercase name (prost renames `JSONSchemaProps` to `JsonSchemaProps`).
    types: HashMap<String, GoType>,
}

fn parse_go_pkg(dir: &Path) -> Res<GoPkg> {
    let mut pkg = GoPkg::default();
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.ends_with(".go")
                && !n.ends_with("_test.go")
                && !n.starts_with("zz_generated")
                && !n.ends_with(".pb.go")
        })
        .collect();
    files.sort();
    for f in files {
        let text = fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        parse_go_file(&text, &mut pkg);
    }
    Ok(pkg)
}

fn parse_go_file(text: &str, pkg: &mut GoPkg) {
    let lines: Vec<&str> = text.lines().collect();
    let mut comments: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.starts_with("//") {
            comments.push(line);
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        if let Some(pos) = line.find("GroupName = \"")
            && (line.starts_with("const") || line.starts_with('\t'))
        {
            let rest = &line[pos + "GroupName = \"".len()..];
            if let Some(end) = rest.find('"') {
                pkg.group = Some(rest[..end].to_string());
            }
        }
        let Some(rest) = line.strip_prefix("type ") else {
            if !line.starts_with(char::is_whitespace) && line != ")" && line != "}" {
                comments.clear();
            }
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest[name.len()..].trim();
        let runtime_object = comments.iter().any(|c| {
            c.contains("+k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object")
        });
        comments.clear();
        let mut t = GoType {
            name: name.clone(),
            fields: Vec::new(),
            slice_elem: None,
            alias_of: None,
            runtime_object,
        };
        if let Some(elem) = after.strip_prefix("[]") {
            t.slice_elem = Some(elem.to_string());
        } else if let Some(target) = after.strip_prefix("metav1.") {
            t.alias_of = Some(target.to_string());
        } else if after.starts_with("struct") && !after.ends_with('}') {
            let mut depth = 0usize;
            while i < lines.len() {
                let l = lines[i];
                i += 1;
                if l == "}" {
                    break;
                }
                let trimmed = l.trim();
                if depth > 0 {
                    if trimmed.starts_with('}') {
                        depth -= 1;
                    }
                    continue;
                }
                if trimmed.is_empty() || trimmed.starts_with("//") {
                    continue;
                }
                if trimmed.ends_with('{') {
                    depth += 1;
                    continue;
                }
                if let Some(f) = parse_go_field(trimmed) {
                    t.fields.push(f);
                }
            }
        }
        pkg.types.insert(name.to_lowercase(), t);
    }
}

fn parse_go_field(line: &str) -> Option<GoField> {
    let (decl, tag) = match line.find('`') {
        Some(p) => {
            let rest = &line[p + 1..];
            let end = rest.find('`')?;
            (&line[..p], &rest[..end])
        }
        None => (line.split("//").next().unwrap_or(line), ""),
    };
    let tokens: Vec<&str> = decl.split_whitespace().collect();
    let (name, ty) = match tokens.as_slice() {
        [] => return None,
        [t] => {
            let n = t.trim_start_matches('*');
            (n.rsplit('.').next().unwrap_or(n).to_string(), t.to_string())
        }
        [n, rest @ ..] => (n.trim_end_matches(',').to_string(), rest.join(" ")),
    };
    let json_tag = tag_value(tag, "json");
    let (json, opts) = match &json_tag {
        Some(v) => match v.split_once(',') {
            Some((n, o)) => (n.to_string(), o.to_string()),
            None => (v.clone(), String::new()),
        },
        None => (String::new(), String::new()),
    };
    let opts: Vec<&str> = opts.split(',').collect();
    let inline = opts.contains(&"inline");
    let json = if json.is_empty() && !inline {
        name.clone()
    } else {
        json
    };
    let proto_tag = tag_value(tag, "protobuf")
        .and_then(|p| p.split(',').nth(1).and_then(|n| n.parse::<u32>().ok()));
    Some(GoField {
        ty,
        json,
        omitempty: opts.contains(&"omitempty"),
        omitzero: opts.contains(&"omitzero"),
        inline,
        proto_tag,
    })
}

fn tag_value(tag: &str, key: &str) -> Option<String> {
    let needle = format!("{key}:\"");
    let start = tag.find(&needle)? + needle.len();
    let end = tag[start..].find('"')?;
    Some(tag[start..start + end].to_string())
}

// ---------------------------------------------------------------------------------------------
// k8s-openapi cross-check: JSON names per struct from its serde code
// ---------------------------------------------------------------------------------------------

/// k8s-pb module dir → lowercase struct name → JSON field names.
type OpenApiNames = HashMap<String, HashMap<String, BTreeSet<String>>>;

fn parse_openapi(root: &Path) -> Res<OpenApiNames> {
    let mut out = OpenApiNames::new();
    for p in PACKAGES {
        let dir = root.join(p.pb_dir);
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let per_pkg = out.entry(p.pb_dir.to_string()).or_default();
        for e in entries.flatten() {
            let Ok(text) = fs::read_to_string(e.path()) else {
                continue;
            };
            let mut current: Option<String> = None;
            for line in text.lines() {
                let t = line.trim();
                if let Some(rest) = t.strip_prefix("pub struct ") {
                    let n: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    current = Some(n.to_lowercase());
                    per_pkg.entry(n.to_lowercase()).or_default();
                } else if t.contains("=> Field::Key_")
                    && t.starts_with('"')
                    && let (Some(cur), Some(end)) = (&current, t[1..].find('"'))
                {
                    per_pkg
                        .entry(cur.clone())
                        .or_default()
                        .insert(t[1..1 + end].to_string());
                }
            }
        }
    }
    Ok(out)
}
