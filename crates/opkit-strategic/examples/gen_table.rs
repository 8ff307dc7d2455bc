//! Generator for `src/builtin/table.rs`, the static strategic-merge-patch metadata of the
//! built-in kinds.
//!
//! It reads the Kubernetes Go types (`types.go` & co.) of
//!
//! * kubernetes/api (every `<group>/<version>` package: the roots of the table),
//! * kubernetes/apimachinery (`pkg/apis/meta/v1`, for `ObjectMeta`),
//! * kubernetes/apiextensions-apiserver (`pkg/apis/apiextensions/v1`, `CustomResourceDefinition`),
//! * kubernetes/kube-aggregator (`pkg/apis/apiregistration/v1`, `APIService`),
//!
//! at the tag the table names, v0.35.7 (kube-aggregator has no v0.35.7 tag; its latest v0.35 tag,
//! v0.35.6, is used).
//!
//! What it takes from them:
//!
//! * the kinds: the types marked `+k8s:deepcopy-gen:interfaces=…runtime.Object`, except the lists
//!   (`…List`), their group from `GroupName` in `register.go` and their version
//!   from the package directory;
//! * for each struct field (embedded `,inline` structs flattened in place): the JSON name from the
//!   `json:"…"` tag, the `patchStrategy:"…"` and `patchMergeKey:"…"` struct tags (what upstream's
//!   strategic merge patch reads by reflection), and the `+listType=` / `+listMapKey=` markers in
//!   the field's comment.
//!
//! Structs are read from `types.go` only (and `GroupName` from `register.go`); a type declared in
//! another file of a package we read (`metav1.Time` in `time.go`, `JSONSchemaProps` in
//! `types_jsonschema.go`) is taken as opaque, and one declared nowhere is an error. Types of
//! other packages (`runtime`, `intstr`, `resource`, `types`) are opaque too. This is what the
//! table has always held; the one tag it leaves out is `JSONSchemaProps.x-kubernetes-validations`
//! (`patchStrategy:"merge" patchMergeKey:"rule"`, reached from a CRD's
//! `spec.versions[].schema.openAPIV3Schema`), which upstream's reflection would see. Taking it in
//! needs self-referential types (`JSONSchemaProps.properties`), which `resolve` refuses for now.
//!
//! A field is listed when it has a `patchStrategy` or `patchMergeKey` tag or when its type (its
//! items' type for a list, through pointers) is a listed struct; a struct is listed when it has a
//! listed field. Types are emitted depth first (a type after the types its fields refer to), kind
//! by kind in declaration order, package by package (kubernetes/api sorted by directory, then
//! apiregistration, then apiextensions); `KINDS` is sorted by (group, version, kind).
//!
//! Regenerate (from the workspace root) with the Go sources extracted side by side, e.g.
//!
//! ```text
//! mkdir -p /tmp/gosrc/{api,apimachinery,apiextensions-apiserver,kube-aggregator}
//! # extract kubernetes/api, kubernetes/apimachinery and kubernetes/apiextensions-apiserver at
//! # tag v0.35.7 and kubernetes/kube-aggregator at v0.35.6 into those four directories
//! # (git clone --branch v0.35.7 …, or git --git-dir=… archive v0.35.7 | tar -x -C /tmp/gosrc/api)
//! cargo run -p opkit-strategic --example gen_table -- --go-src /tmp/gosrc
//! ```
//!
//! The table is `#[rustfmt::skip]`, so the output is final as written (no `cargo fmt` needed).
//! Options: `--out FILE` (default `crates/opkit-strategic/src/builtin/table.rs`),
//! `--api-version V` (the version named in the header, default `v0.35.7`).
//! The generator uses only `std` and fails loudly when a type cannot be resolved.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The packages outside kubernetes/api whose kinds are in the table, after those of
/// kubernetes/api, in this order.
const EXTRA_ROOTS: &[&str] = &[
    "kube-aggregator/pkg/apis/apiregistration/v1",
    "apiextensions-apiserver/pkg/apis/apiextensions/v1",
];

/// The package of `ObjectMeta`, the only one read besides the roots.
const META_V1: &str = "apimachinery/pkg/apis/meta/v1";

/// Go import path prefixes and the directory under `--go-src` holding each repository.
const REPOS: &[(&str, &str)] = &[
    ("k8s.io/api/", "api/"),
    ("k8s.io/apimachinery/", "apimachinery/"),
    (
        "k8s.io/apiextensions-apiserver/",
        "apiextensions-apiserver/",
    ),
    ("k8s.io/kube-aggregator/", "kube-aggregator/"),
];

/// One field of a Go struct, as written.
#[derive(Debug, Clone)]
struct GoField {
    /// JSON name; empty for an embedded struct flattened into its parent.
    json: String,
    /// The Go type expression (`[]Container`, `*metav1.LabelSelector`, `metav1.ObjectMeta`).
    ty: String,
    patch_strategy: Option<String>,
    patch_merge_key: Option<String>,
    list_type: Option<String>,
    list_map_keys: Vec<String>,
}

/// A Go type declaration: a struct (its fields), an alias (`type Rule = v1.Rule`) or anything
/// else (opaque).
#[derive(Debug)]
enum GoType {
    Struct(Vec<GoField>),
    Alias(String),
    Other,
}

/// One parsed Go package.
#[derive(Debug, Default)]
struct Package {
    types: HashMap<String, GoType>,
    /// Types marked as `runtime.Object`, in declaration order (`types.go` first).
    objects: Vec<String>,
    /// Import alias → package dir (relative to `--go-src`), for the repositories we read.
    imports: HashMap<String, Option<String>>,
    group: Option<String>,
}

/// A listed struct: its static's name, Go name and listed fields.
struct TypeDef {
    ident: String,
    name: String,
    fields: Vec<FieldDef>,
}

struct FieldDef {
    json: String,
    strategy: &'static str,
    merge_key: Option<String>,
    list_type: &'static str,
    list_map_keys: Vec<String>,
    ty: Option<String>,
}

struct Gen {
    go_src: PathBuf,
    /// The packages whose types we read: the roots and `meta/v1`.
    read: HashSet<String>,
    packages: HashMap<String, Package>,
    /// (package dir, type name) → the listed type's static name, or `None` when not listed.
    done: HashMap<(String, String), Option<String>>,
    in_progress: HashSet<(String, String)>,
    cycles: HashSet<(String, String)>,
    out: Vec<TypeDef>,
}

fn main() {
    let mut go_src = None;
    let mut out = PathBuf::from("crates/opkit-strategic/src/builtin/table.rs");
    let mut api_version = "v0.35.7".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .unwrap_or_else(|| fail(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--go-src" => go_src = Some(PathBuf::from(val())),
            "--out" => out = PathBuf::from(val()),
            "--api-version" => api_version = val(),
            _ => fail(&format!(
                "unknown argument {a}; usage: gen_table --go-src DIR [--out FILE] [--api-version V]"
            )),
        }
    }
    let go_src = go_src.unwrap_or_else(|| fail("--go-src DIR is required"));

    let mut roots: Vec<String> = Vec::new();
    let api = go_src.join("api");
    for group in sorted_dirs(&api) {
        for version in sorted_dirs(&api.join(&group)) {
            let dir = format!("api/{group}/{version}");
            if go_src.join(&dir).join("register.go").is_file() {
                roots.push(dir);
            }
        }
    }
    if roots.is_empty() {
        fail(&format!("no packages under {}", api.display()));
    }
    roots.extend(EXTRA_ROOTS.iter().map(|s| s.to_string()));

    let mut read: HashSet<String> = roots.iter().cloned().collect();
    read.insert(META_V1.to_string());
    let mut g = Gen {
        go_src,
        read,
        packages: HashMap::new(),
        done: HashMap::new(),
        in_progress: HashSet::new(),
        cycles: HashSet::new(),
        out: Vec::new(),
    };
    let mut kinds = Vec::new();
    for dir in &roots {
        g.load(dir);
        let pkg = &g.packages[dir];
        let group = pkg
            .group
            .clone()
            .unwrap_or_else(|| fail(&format!("{dir}/register.go: no GroupName")));
        let version = dir.rsplit('/').next().unwrap().to_string();
        let objects = pkg.objects.clone();
        for name in objects {
            if name.ends_with("List") {
                continue;
            }
            if let Some(ident) = g.resolve(dir, &name) {
                kinds.push((group.clone(), version.clone(), name, ident));
            }
        }
    }
    kinds.sort();

    let text = render(&g.out, &kinds, &api_version);
    fs::write(&out, text).unwrap_or_else(|e| fail(&format!("{}: {e}", out.display())));
    eprintln!(
        "wrote {} ({} types, {} kinds)",
        out.display(),
        g.out.len(),
        kinds.len()
    );
}

fn fail(msg: &str) -> ! {
    eprintln!("gen_table: {msg}");
    std::process::exit(1)
}

fn sorted_dirs(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| fail(&format!("{}: {e}", dir.display())))
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

impl Gen {
    /// Parses the package in `dir` (relative to `--go-src`) once.
    fn load(&mut self, dir: &str) {
        if self.packages.contains_key(dir) {
            return;
        }
        let path = self.go_src.join(dir);
        let mut files: Vec<String> = fs::read_dir(&path)
            .unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())))
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.ends_with(".go")
                    && !n.ends_with("_test.go")
                    && !n.starts_with("zz_generated")
                    && !n.starts_with("generated")
            })
            .collect();
        // types.go first: the kinds are listed in its declaration order.
        files.sort_by_key(|n| (n != "types.go", n.clone()));
        if files.first().map(String::as_str) != Some("types.go") {
            fail(&format!("{dir}: no types.go"));
        }
        let mut pkg = Package::default();
        for file in files {
            let src = fs::read_to_string(path.join(&file))
                .unwrap_or_else(|e| fail(&format!("{dir}/{file}: {e}")));
            // Only types.go is read for structs (and register.go for GroupName); the types
            // declared in the other files (metav1.Time, JSONSchemaProps) are taken as opaque.
            let full = file == "types.go" || file == "register.go";
            parse_file(&src, &mut pkg, &format!("{dir}/{file}"), full);
        }
        self.packages.insert(dir.to_string(), pkg);
    }

    /// The static name of type `name` of package `dir` if it is listed, emitting it (after the
    /// types it refers to) the first time.
    fn resolve(&mut self, dir: &str, name: &str) -> Option<String> {
        let key = (dir.to_string(), name.to_string());
        if let Some(r) = self.done.get(&key) {
            return r.clone();
        }
        if self.in_progress.contains(&key) {
            self.cycles.insert(key);
            return None;
        }
        self.load(dir);
        let fields = match self.packages[dir].types.get(name) {
            Some(GoType::Struct(fields)) => fields.clone(),
            Some(GoType::Other) | Some(GoType::Alias(_)) => {
                self.done.insert(key, None);
                return None;
            }
            None => fail(&format!("type {name} not found in {dir}")),
        };
        self.in_progress.insert(key.clone());
        let mut defs = Vec::new();
        self.collect_fields(dir, &fields, &mut defs);
        self.in_progress.remove(&key);
        let result = if defs.is_empty() {
            None
        } else {
            if self.cycles.contains(&key) {
                fail(&format!(
                    "{dir}.{name} refers to itself and has patch metadata; not supported"
                ));
            }
            let ident = ident(dir, name);
            self.out.push(TypeDef {
                ident: ident.clone(),
                name: name.to_string(),
                fields: defs,
            });
            Some(ident)
        };
        self.done.insert(key, result.clone());
        result
    }

    /// The listed fields among `fields` (of a struct in package `dir`), inline structs flattened.
    fn collect_fields(&mut self, dir: &str, fields: &[GoField], defs: &mut Vec<FieldDef>) {
        for field in fields {
            let target = self.type_ref(dir, &field.ty);
            if field.json.is_empty() {
                // An embedded struct whose fields are flattened into this one.
                // (Embedded types of packages we do not read, like `time.Time`, add nothing.)
                let Some((pdir, pname)) = target else {
                    continue;
                };
                self.load(&pdir);
                let inner = match self.packages[&pdir].types.get(&pname) {
                    Some(GoType::Struct(f)) => f.clone(),
                    _ => fail(&format!("{pdir}.{pname}: inline, but not a struct")),
                };
                self.collect_fields(&pdir, &inner, defs);
                continue;
            }
            let ty = target.and_then(|(pdir, pname)| self.resolve(&pdir, &pname));
            if ty.is_none() && field.patch_strategy.is_none() && field.patch_merge_key.is_none() {
                continue;
            }
            let strategy = match field.patch_strategy.as_deref() {
                None | Some("") => "DEFAULT",
                Some("merge") => "MERGE",
                Some("merge,retainKeys") | Some("retainKeys,merge") => "MERGE_RETAIN",
                Some("retainKeys") => "RETAIN",
                Some("replace") => "REPLACE",
                Some(s) => fail(&format!("{dir}: field {}: patchStrategy {s:?}", field.json)),
            };
            let list_type = match field.list_type.as_deref() {
                None => "NONE",
                Some("atomic") => "ATOMIC",
                Some("set") => "SET",
                Some("map") => "MAP",
                Some(s) => fail(&format!("{dir}: field {}: listType {s:?}", field.json)),
            };
            defs.push(FieldDef {
                json: field.json.clone(),
                strategy,
                merge_key: field.patch_merge_key.clone(),
                list_type,
                list_map_keys: field.list_map_keys.clone(),
                ty,
            });
        }
    }

    /// The struct a Go type expression refers to (through `*`, `[]` and map values), as
    /// (package dir, name); `None` for builtins and packages we do not read.
    fn type_ref(&mut self, dir: &str, ty: &str) -> Option<(String, String)> {
        let mut t = ty.trim();
        loop {
            if let Some(r) = t.strip_prefix('*') {
                t = r;
            } else if let Some(r) = t.strip_prefix("[]") {
                t = r;
            } else if let Some(r) = t.strip_prefix("map[") {
                t = &r[r.find(']')? + 1..];
            } else {
                break;
            }
        }
        let (pdir, name) = if let Some((alias, name)) = t.split_once('.') {
            let pdir = self.packages[dir]
                .imports
                .get(alias)
                .cloned()
                .unwrap_or_else(|| {
                    fail(&format!("{dir}: unknown import {alias:?} in type {ty}"))
                })?;
            // Other packages (runtime, intstr, resource, types) hold no patch metadata.
            if !self.read.contains(&pdir) {
                return None;
            }
            (pdir, name.to_string())
        } else if t.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
            (dir.to_string(), t.to_string())
        } else {
            return None; // string, int32, []byte, interface{}, …
        };
        // Follow an alias to the type it names.
        self.load(&pdir);
        match self.packages[&pdir].types.get(&name) {
            Some(GoType::Alias(target)) => {
                let target = target.clone();
                self.type_ref(&pdir, &target)
            }
            _ => Some((pdir, name)),
        }
    }
}

/// Parses one Go file's imports, `GroupName`, type declarations and `runtime.Object` markers.
/// With `full == false`, only the names of the declared types are recorded (as opaque).
fn parse_file(src: &str, pkg: &mut Package, file: &str, full: bool) {
    let mut comments: Vec<String> = Vec::new();
    // Drop `/* … */` blocks that start a line (there are a few inside structs).
    let mut in_block = false;
    let kept: Vec<&str> = src
        .lines()
        .filter(|l| {
            let t = l.trim();
            if !in_block && !t.starts_with("/*") {
                return true;
            }
            in_block = !t.contains("*/");
            false
        })
        .collect();
    let mut lines = kept.into_iter();
    let mut in_imports = false;
    let mut in_type_group = false;
    while let Some(raw) = lines.next() {
        let line = raw.trim();
        if let Some(c) = line.strip_prefix("//") {
            comments.push(c.trim().to_string());
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let block = std::mem::take(&mut comments);
        if in_imports {
            if line == ")" {
                in_imports = false;
            } else {
                add_import(pkg, line);
            }
            continue;
        }
        if line == "import (" {
            in_imports = true;
            continue;
        }
        if let Some(imp) = line.strip_prefix("import ") {
            add_import(pkg, imp);
            continue;
        }
        if let Some(rest) = line.strip_prefix("const GroupName = ") {
            pkg.group = Some(rest.trim().trim_matches('"').to_string());
            continue;
        }
        if line == "type (" {
            in_type_group = true;
            continue;
        }
        let decl = if in_type_group {
            if line == ")" {
                in_type_group = false;
                continue;
            }
            Some(line)
        } else {
            line.strip_prefix("type ")
        };
        let Some(decl) = decl else { continue };
        let (name, rest) = decl
            .split_once(char::is_whitespace)
            .unwrap_or_else(|| fail(&format!("{file}: cannot parse {raw:?}")));
        let rest = rest.trim();
        if !full {
            pkg.types.entry(name.to_string()).or_insert(GoType::Other);
            continue;
        }
        let ty = if rest == "struct {" {
            GoType::Struct(parse_struct(&mut lines, file))
        } else if rest.starts_with("struct{}") || rest.starts_with("struct {}") {
            GoType::Struct(Vec::new())
        } else if let Some(target) = rest.strip_prefix("= ") {
            GoType::Alias(target.split("//").next().unwrap().trim().to_string())
        } else {
            GoType::Other
        };
        if block
            .iter()
            .any(|c| c == "+k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object")
        {
            pkg.objects.push(name.to_string());
        }
        pkg.types.insert(name.to_string(), ty);
    }
}

fn add_import(pkg: &mut Package, line: &str) {
    let line = line.split("//").next().unwrap().trim();
    let (alias, path) = match line.rsplit_once(' ') {
        Some((alias, path)) => (Some(alias.trim()), path),
        None => (None, line),
    };
    let path = path.trim_matches('"');
    let alias = alias
        .map(str::to_string)
        .unwrap_or_else(|| path.rsplit('/').next().unwrap().to_string());
    let dir = REPOS
        .iter()
        .find_map(|(prefix, dir)| path.strip_prefix(prefix).map(|rest| format!("{dir}{rest}")));
    pkg.imports.insert(alias, dir);
}

/// Parses the fields of a struct, after its `type X struct {` line, up to its closing `}`.
fn parse_struct<'a>(lines: &mut impl Iterator<Item = &'a str>, file: &str) -> Vec<GoField> {
    let mut fields = Vec::new();
    let mut comments: Vec<String> = Vec::new();
    for raw in lines.by_ref() {
        let line = raw.trim();
        if line == "}" {
            return fields;
        }
        if let Some(c) = line.strip_prefix("//") {
            comments.push(c.trim().to_string());
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let block = std::mem::take(&mut comments);
        let (decl, tag) = match line.find('`') {
            Some(i) => {
                let end = line[i + 1..]
                    .find('`')
                    .unwrap_or_else(|| fail(&format!("{file}: unterminated tag in {raw:?}")));
                (line[..i].trim(), &line[i + 1..i + 1 + end])
            }
            None => (line.split("//").next().unwrap().trim(), ""),
        };
        if decl.ends_with('{') {
            fail(&format!("{file}: nested struct not supported: {raw:?}"));
        }
        let parts: Vec<&str> = decl.split_whitespace().collect();
        let json_tag = tag_value(tag, "json");
        let (go_name, ty, embedded) = match parts.as_slice() {
            [ty] => (
                ty.rsplit('.').next().unwrap().trim_start_matches('*'),
                *ty,
                true,
            ),
            [name, ty] => (*name, *ty, false),
            _ => fail(&format!("{file}: cannot parse field {raw:?}")),
        };
        if go_name.ends_with(',') {
            fail(&format!("{file}: multi-name field not supported: {raw:?}"));
        }
        let json = match json_tag.as_deref().map(|j| j.split(',').next().unwrap()) {
            Some("-") => continue,
            Some("") | None if embedded => String::new(),
            Some("") | None => go_name.to_string(),
            Some(n) => n.to_string(),
        };
        let marker = |key: &str| {
            block
                .iter()
                .filter_map(|c| c.strip_prefix(key))
                .map(|v| v.trim().to_string())
                .collect::<Vec<_>>()
        };
        fields.push(GoField {
            json,
            ty: ty.to_string(),
            patch_strategy: tag_value(tag, "patchStrategy"),
            patch_merge_key: tag_value(tag, "patchMergeKey"),
            list_type: marker("+listType=").into_iter().next(),
            list_map_keys: marker("+listMapKey="),
        });
    }
    fail(&format!("{file}: unterminated struct"))
}

/// The value of `key:"…"` in a Go struct tag.
fn tag_value(tag: &str, key: &str) -> Option<String> {
    let mut rest = tag;
    while let Some(i) = rest.find(':') {
        let k = rest[..i].trim();
        let after = rest[i + 1..].strip_prefix('"')?;
        let end = after.find('"')?;
        if k == key {
            return Some(after[..end].to_string());
        }
        rest = &after[end + 1..];
    }
    None
}

/// `api/core/v1` + `PodSpec` → `CORE_V1_POD_SPEC`.
fn ident(dir: &str, name: &str) -> String {
    let mut parts = dir.rsplit('/');
    let version = parts.next().unwrap();
    let group = parts.next().unwrap();
    let mut s = format!("{}_{}_", group, version)
        .to_uppercase()
        .replace('-', "_");
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                s.push('_');
            }
        }
        s.push(c.to_ascii_uppercase());
    }
    s
}

fn render(
    types: &[TypeDef],
    kinds: &[(String, String, String, String)],
    api_version: &str,
) -> String {
    let mut s = String::new();
    write!(
        s,
        "\
//! Patch metadata of the built-in kinds: the `patchStrategy` / `patchMergeKey` struct tags
//! (and the `+listType` / `+listMapKey` markers next to them) of `k8s.io/api` {api_version},
//! `k8s.io/apimachinery` `meta/v1` (ObjectMeta), `apiextensions.k8s.io/v1` and
//! `apiregistration.k8s.io/v1`. Only the types on a path to a field with patch metadata are
//! listed; every other field has none (maps merge, lists are replaced).
//!
//! Generated from the upstream Go types by `crates/opkit-strategic/examples/gen_table.rs` (its
//! doc comment says how to regenerate); do not edit by hand.

use super::{{ATOMIC, DEFAULT, MAP, MERGE, MERGE_RETAIN, NONE, REPLACE, RETAIN, SET, TypeDef, f}};
"
    )
    .unwrap();
    for t in types {
        writeln!(s).unwrap();
        writeln!(s, "pub(super) static {}: TypeDef = TypeDef {{", t.ident).unwrap();
        writeln!(s, "    name: {:?},", t.name).unwrap();
        writeln!(s, "    fields: &[").unwrap();
        for f in &t.fields {
            let merge_key = match &f.merge_key {
                Some(k) => format!("Some({k:?})"),
                None => "None".to_string(),
            };
            let keys: Vec<String> = f.list_map_keys.iter().map(|k| format!("{k:?}")).collect();
            let ty = match &f.ty {
                Some(t) => format!("Some(&{t})"),
                None => "None".to_string(),
            };
            writeln!(
                s,
                "        f({:?}, {}, {merge_key}, {}, &[{}], {ty}),",
                f.json,
                f.strategy,
                f.list_type,
                keys.join(", ")
            )
            .unwrap();
        }
        writeln!(s, "    ],").unwrap();
        writeln!(s, "}};").unwrap();
    }
    writeln!(s).unwrap();
    writeln!(
        s,
        "/// Every built-in kind: (group, version, kind, root type)."
    )
    .unwrap();
    writeln!(
        s,
        "pub(super) static KINDS: &[(&str, &str, &str, &TypeDef)] = &["
    )
    .unwrap();
    for (g, v, k, ident) in kinds {
        writeln!(s, "    ({g:?}, {v:?}, {k:?}, &{ident}),").unwrap();
    }
    writeln!(s, "];").unwrap();
    s
}
