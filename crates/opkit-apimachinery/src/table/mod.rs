//! Server-side printing: `meta.k8s.io/v1` `Table` responses.
//!
//! `kubectl get` asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`
//! and prints whatever columns the server returns, so the server decides what
//! users see. This module produces exactly what kube-apiserver v1.35 would:
//!
//! * built-in kinds: the column definitions and cells of upstream's printers
//!   ([`builtin_columns`], [`builtin_row`]), always in wide form (the server
//!   sends priority-1 columns too; kubectl hides them without `-o wide`);
//! * kinds without a printer (roles, CRDs, ...): `Name` and `Created At`
//!   ([`default_columns`], [`default_row`]);
//! * custom resources: the CRD version's `additionalPrinterColumns`
//!   evaluated with client-go JSONPath ([`crd_columns`], [`crd_row`],
//!   [`CrdPrinter`]), or `Name` and `Age` when the CRD declares none;
//! * the envelope with `includeObject` handling ([`table`], [`build_table`]).
//!
//! Rows are computed from the stored JSON; absent fields read as their API
//! defaults. Everything takes `now` explicitly so ages are testable.

mod builtin;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::jsonpath::{JsonPath, print_value};
use crate::time::{age, format_time, parse_time, timestamp_field};

pub use builtin::{builtin_columns, builtin_row, builtin_row_conditions};

/// Upstream's description of `metadata.name` (the `Name` column).
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// Upstream's description of `metadata.creationTimestamp` (`Age`, `Created At`).
pub const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// One column of a table (`TableColumnDefinition`), plus the JSONPath a
/// custom resource column reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Header text, e.g. `Ready`.
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean`, `date`.
    pub type_: String,
    /// OpenAPI format, e.g. `name` for the object name column.
    pub format: String,
    /// Human description.
    pub description: String,
    /// 0 for default columns, higher for `-o wide` columns.
    pub priority: i32,
    /// For custom resource columns, the JSONPath evaluated per object
    /// (`None` for the name column and built-in columns).
    pub json_path: Option<String>,
}

/// The name the server code uses for column definitions.
pub type ColumnDef = Column;

impl Column {
    /// A column without JSONPath.
    pub fn new(name: &str, type_: &str, format: &str, priority: i32, description: &str) -> Self {
        Column {
            name: name.to_owned(),
            type_: type_.to_owned(),
            format: format.to_owned(),
            description: description.to_owned(),
            priority,
            json_path: None,
        }
    }

    /// The `TableColumnDefinition` JSON (all five fields, as upstream).
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.type_,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// The `Name` column every table starts with.
pub fn name_column() -> Column {
    Column::new("Name", "string", "name", 0, NAME_DESCRIPTION)
}

/// Upstream's default convertor columns for kinds without a printer
/// (roles, cluster roles, CRDs, ...): `Name` and `Created At` (a date).
pub fn default_columns() -> Vec<Column> {
    vec![
        name_column(),
        Column::new("Created At", "date", "", 0, CREATION_TIMESTAMP_DESCRIPTION),
    ]
}

fn meta_str<'a>(object: &'a Value, key: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn creation_timestamp(object: &Value) -> Option<Timestamp> {
    timestamp_field(
        object
            .get("metadata")
            .and_then(|m| m.get("creationTimestamp")),
    )
}

/// Cells for [`default_columns`]: the name and the creation time in RFC 3339
/// (Go's zero time when unset, as upstream prints it).
pub fn default_row(object: &Value) -> Vec<Value> {
    let created = creation_timestamp(object)
        .map(format_time)
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_owned());
    vec![
        Value::String(meta_str(object, "name").to_owned()),
        Value::String(created),
    ]
}

/// The columns of a custom resource table from a CRD version's
/// `additionalPrinterColumns` (JSON objects with `name`, `type`, `format`,
/// `description`, `priority`, `jsonPath`): `Name` first; when the CRD
/// declares none, `Name` and `Age` (`date` of `.metadata.creationTimestamp`)
/// as upstream. Like upstream, columns stop at the first unparsable
/// `jsonPath` (CRD validation normally rejects those).
pub fn crd_columns(additional_printer_columns: &[Value]) -> Vec<Column> {
    CrdPrinter::new(additional_printer_columns).columns
}

/// Cells for `columns` from [`crd_columns`]: the name, then each column's
/// JSONPath value formatted by the column type. See [`CrdPrinter::row`].
pub fn crd_row(columns: &[Column], object: &Value, now: Timestamp) -> Vec<Value> {
    let paths: Vec<Option<JsonPath>> = columns
        .iter()
        .map(|c| c.json_path.as_deref().and_then(compile_column_path))
        .collect();
    row_with(columns, &paths, object, now)
}

/// Compiles a column's `jsonPath` the way upstream does (`{<jsonPath>}`,
/// missing keys allowed). A path already wrapped in braces is accepted too.
fn compile_column_path(path: &str) -> Option<JsonPath> {
    let inner = match path.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
        Some(inner) if !inner.contains(['{', '}']) => inner,
        _ => path,
    };
    JsonPath::parse_expr(inner)
        .ok()
        .map(|p| p.allow_missing_keys(true))
}

/// The table printer of one custom resource version, with its JSONPaths
/// compiled once for all rows.
#[derive(Debug, Clone)]
pub struct CrdPrinter {
    columns: Vec<Column>,
    paths: Vec<Option<JsonPath>>,
}

impl CrdPrinter {
    /// Builds the printer from `additionalPrinterColumns` (see [`crd_columns`]).
    pub fn new(additional_printer_columns: &[Value]) -> Self {
        let age_default = [json!({
            "name": "Age",
            "type": "date",
            "description": CREATION_TIMESTAMP_DESCRIPTION,
            "jsonPath": ".metadata.creationTimestamp",
        })];
        let declared = if additional_printer_columns.is_empty() {
            &age_default[..]
        } else {
            additional_printer_columns
        };
        let mut columns = vec![name_column()];
        let mut paths = vec![None];
        for col in declared {
            let get = |k: &str| col.get(k).and_then(Value::as_str).unwrap_or("");
            let json_path = get("jsonPath");
            let Some(path) = compile_column_path(json_path) else {
                break;
            };
            let description = match get("description") {
                "" => {
                    format!("Custom resource definition column (in JSONPath format): {json_path}")
                }
                d => d.to_owned(),
            };
            columns.push(Column {
                name: get("name").to_owned(),
                type_: get("type").to_owned(),
                format: get("format").to_owned(),
                description,
                priority: col
                    .get("priority")
                    .and_then(Value::as_i64)
                    .and_then(|p| i32::try_from(p).ok())
                    .unwrap_or(0),
                json_path: Some(json_path.to_owned()),
            });
            paths.push(Some(path));
        }
        CrdPrinter { columns, paths }
    }

    /// The column definitions, `Name` first.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// One row: the object's name, then per column the first JSONPath
    /// result formatted by type — `string`: printed like client-go
    /// (objects as JSON); `integer`/`number`/`boolean`: the JSON value when
    /// it has that type; `date`: the age of an RFC 3339 string (`<invalid>`
    /// if unparsable, `<unknown>` if empty). No value or a mismatched type
    /// gives `null`.
    pub fn row(&self, object: &Value, now: Timestamp) -> Vec<Value> {
        row_with(&self.columns, &self.paths, object, now)
    }
}

fn row_with(
    columns: &[Column],
    paths: &[Option<JsonPath>],
    object: &Value,
    now: Timestamp,
) -> Vec<Value> {
    columns
        .iter()
        .zip(paths)
        .map(|(column, path)| match (&column.json_path, path) {
            (None, _) => Value::String(meta_str(object, "name").to_owned()),
            (Some(_), None) => Value::Null,
            (Some(_), Some(path)) => match path.first(object) {
                Some(value) => cell_for(&column.type_, &value, now),
                None => Value::Null,
            },
        })
        .collect()
}

fn cell_for(type_: &str, value: &Value, now: Timestamp) -> Value {
    if type_ == "string" {
        return Value::String(print_value(value));
    }
    match (type_, value) {
        (_, Value::Null) => Value::Null,
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => Value::from(i),
            // Go converts float64 to int64 by truncation (saturating here).
            None => n.as_f64().map_or(Value::Null, |f| Value::from(f as i64)),
        },
        ("number", Value::Number(n)) => number_cell(n.as_f64().unwrap_or(0.0)),
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => {
            if s.is_empty() || s == "null" {
                return Value::String("<unknown>".to_owned());
            }
            match parse_time(s) {
                Ok(ts) => Value::String(age(Some(ts), now)),
                Err(_) => Value::String("<invalid>".to_owned()),
            }
        }
        _ => Value::Null,
    }
}

/// A float cell as Go's JSON encoder writes it: integral values without a
/// fraction (`3`, not `3.0`).
fn number_cell(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// What each row's `object` holds (`includeObject` of `TableOptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// `None`: `object` is `null`.
    None,
    /// `Metadata` (kubectl's default, also for an empty value): a
    /// `PartialObjectMetadata`.
    #[default]
    Metadata,
    /// `Object`: the whole object.
    Object,
}

/// An `includeObject` value upstream does not know (400 BadRequest).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized includeObject value: {}", crate::gofmt::go_quote(.0))]
pub struct UnknownIncludeObject(pub String);

impl IncludeObject {
    /// Parses the query parameter: `None`, `Metadata`, `Object`, or empty.
    pub fn parse(s: &str) -> Result<Self, UnknownIncludeObject> {
        match s {
            "None" => Ok(IncludeObject::None),
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "Object" => Ok(IncludeObject::Object),
            other => Err(UnknownIncludeObject(other.to_owned())),
        }
    }
}

/// One table row: cells, optional row conditions, and the object (or its
/// metadata) it was computed from.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    /// Cells in column order.
    pub cells: Vec<Value>,
    /// `TableRowCondition`s, e.g. a completed pod's (see
    /// [`builtin_row_conditions`]); empty for none.
    pub conditions: Vec<Value>,
    /// The full object, or just its `metadata` object.
    pub object: Value,
}

const PARTIAL_METADATA_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The `PartialObjectMetadata` of an object (or of a bare metadata object).
pub fn partial_object_metadata(object: &Value, group_version: &str) -> Value {
    let meta = match object.get("metadata") {
        Some(Value::Object(m)) => Some(m),
        Some(_) => None,
        None => object.as_object(),
    };
    let mut out = Map::new();
    if let Some(meta) = meta {
        for key in PARTIAL_METADATA_FIELDS {
            if let Some(v) = meta.get(key) {
                out.insert(key.to_owned(), v.clone());
            }
        }
    }
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": group_version,
        "metadata": Value::Object(out),
    })
}

/// Builds a `meta.k8s.io/v1` `Table`. `rows` pair cells with the object (or
/// its metadata); `list_metadata` becomes `metadata` (`resourceVersion`,
/// `continue`, `remainingItemCount`); `include_object` is the
/// `includeObject` parameter (`None`, `Metadata` — the default, also for
/// unknown values; check those first with [`IncludeObject::parse`] —, or
/// `Object`).
pub fn table(
    columns: &[Column],
    rows: Vec<(Vec<Value>, Value)>,
    list_metadata: Value,
    include_object: &str,
) -> Value {
    let rows = rows
        .into_iter()
        .map(|(cells, object)| TableRow {
            cells,
            conditions: Vec::new(),
            object,
        })
        .collect();
    build_table(
        columns,
        rows,
        list_metadata,
        IncludeObject::parse(include_object).unwrap_or_default(),
        false,
        "meta.k8s.io/v1",
    )
}

/// The full form of [`table`]: rows with conditions, `noHeaders` (omits the
/// column definitions, as upstream), and the Table's group version
/// (`meta.k8s.io/v1` or `meta.k8s.io/v1beta1`), which the partial object
/// metadata reuses.
pub fn build_table(
    columns: &[Column],
    rows: Vec<TableRow>,
    list_metadata: Value,
    include_object: IncludeObject,
    no_headers: bool,
    group_version: &str,
) -> Value {
    let column_definitions: Vec<Value> = if no_headers {
        Vec::new()
    } else {
        columns.iter().map(Column::to_json).collect()
    };
    let rows: Vec<Value> = rows
        .into_iter()
        .map(|row| {
            let object = match include_object {
                IncludeObject::None => Value::Null,
                IncludeObject::Metadata => partial_object_metadata(&row.object, group_version),
                IncludeObject::Object => row.object,
            };
            let mut out = Map::new();
            out.insert("cells".to_owned(), Value::Array(row.cells));
            if !row.conditions.is_empty() {
                out.insert("conditions".to_owned(), Value::Array(row.conditions));
            }
            out.insert("object".to_owned(), object);
            Value::Object(out)
        })
        .collect();
    let metadata = match list_metadata {
        Value::Object(m) => Value::Object(m),
        _ => Value::Object(Map::new()),
    };
    json!({
        "kind": "Table",
        "apiVersion": group_version,
        "metadata": metadata,
        "columnDefinitions": column_definitions,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        parse_time("2026-01-02T03:04:05Z").unwrap()
    }

    fn flight_ticket_columns() -> Vec<Value> {
        vec![
            json!({"name": "From", "type": "string", "jsonPath": ".spec.from"}),
            json!({"name": "To", "type": "string", "jsonPath": ".spec.to"}),
            json!({"name": "Number", "type": "integer", "jsonPath": ".spec.number"}),
        ]
    }

    fn flight_ticket() -> Value {
        json!({
            "apiVersion": "flights.example.com/v1",
            "kind": "FlightTicket",
            "metadata": {"name": "ticket-1", "namespace": "default", "uid": "u1",
                         "resourceVersion": "7", "creationTimestamp": "2026-01-02T03:00:00Z",
                         "labels": {"app": "demo"}, "annotations": {"a": "b"}, "managedFields": []},
            "spec": {"from": "AMS", "to": "SFO", "number": 3}
        })
    }

    #[test]
    fn flight_ticket_crd_columns_and_row() {
        let cols = crd_columns(&flight_ticket_columns());
        let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Name", "From", "To", "Number"]);
        assert_eq!(cols[0].format, "name");
        assert_eq!(cols[1].json_path.as_deref(), Some(".spec.from"));
        assert_eq!(
            cols[1].description,
            "Custom resource definition column (in JSONPath format): .spec.from"
        );
        assert_eq!(cols[3].type_, "integer");
        assert_eq!(
            crd_row(&cols, &flight_ticket(), now()),
            vec![json!("ticket-1"), json!("AMS"), json!("SFO"), json!(3)]
        );
    }

    #[test]
    fn crd_without_columns_gets_name_and_age() {
        let cols = crd_columns(&[]);
        let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Name", "Age"]);
        assert_eq!(cols[1].type_, "date");
        assert_eq!(
            cols[1].json_path.as_deref(),
            Some(".metadata.creationTimestamp")
        );
        assert_eq!(cols[1].description, CREATION_TIMESTAMP_DESCRIPTION);
        assert_eq!(
            crd_row(&cols, &flight_ticket(), now()),
            vec![json!("ticket-1"), json!("4m5s")]
        );
    }

    #[test]
    fn crd_cells_are_formatted_by_type() {
        let printer = CrdPrinter::new(&[
            json!({"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}),
            json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1}),
            json!({"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"}),
            json!({"name": "Whole", "type": "number", "jsonPath": ".spec.whole"}),
            json!({"name": "On", "type": "boolean", "jsonPath": ".spec.on"}),
            json!({"name": "Started", "type": "date", "jsonPath": ".status.started"}),
            json!({"name": "Bad", "type": "date", "jsonPath": ".status.bad"}),
            json!({"name": "Obj", "type": "string", "jsonPath": "{.spec.obj}"}),
            json!({"name": "Missing", "type": "string", "jsonPath": ".spec.none"}),
            json!({"name": "Mismatch", "type": "integer", "jsonPath": ".spec.on"}),
            json!({"name": "Null", "type": "string", "jsonPath": ".spec.nil"}),
            json!({"name": "Float", "type": "integer", "jsonPath": ".spec.ratio"}),
        ]);
        assert_eq!(printer.columns()[2].priority, 1);
        let obj = json!({
            "metadata": {"name": "x"},
            "spec": {"replicas": 2, "ratio": 2.5, "whole": 4.0, "on": true, "obj": {"b": 1, "a": "<"}, "nil": null},
            "status": {"started": "2026-01-02T01:04:05Z", "bad": "yesterday",
                       "conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}
        });
        assert_eq!(
            printer.row(&obj, now()),
            vec![
                json!("x"),
                json!("True"),
                json!(2),
                json!(2.5),
                json!(4),
                json!(true),
                json!("120m"),
                json!("<invalid>"),
                json!(r#"{"a":"\u003c","b":1}"#),
                Value::Null,
                Value::Null,
                json!("<no value>"),
                json!(2),
            ]
        );
    }

    #[test]
    fn crd_columns_stop_at_an_unparsable_path() {
        let cols = crd_columns(&[
            json!({"name": "A", "type": "string", "jsonPath": ".a"}),
            json!({"name": "B", "type": "string", "jsonPath": ".b[x"}),
            json!({"name": "C", "type": "string", "jsonPath": ".c"}),
        ]);
        assert_eq!(cols.len(), 2);
    }

    #[test]
    fn table_envelope_with_partial_metadata_by_default() {
        let cols = crd_columns(&flight_ticket_columns());
        let obj = flight_ticket();
        let cells = crd_row(&cols, &obj, now());
        let t = table(
            &cols,
            vec![(cells, obj.clone())],
            json!({"resourceVersion": "9"}),
            "",
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({"resourceVersion": "9"}));
        assert_eq!(
            t["columnDefinitions"][1],
            json!({
                "name": "From", "type": "string", "format": "",
                "description": "Custom resource definition column (in JSONPath format): .spec.from", "priority": 0
            })
        );
        let row = &t["rows"][0];
        assert_eq!(row["cells"], json!(["ticket-1", "AMS", "SFO", 3]));
        assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(row["object"]["metadata"]["name"], "ticket-1");
        assert_eq!(row["object"]["metadata"]["labels"], json!({"app": "demo"}));
        assert!(row["object"].get("spec").is_none());
        assert!(row.get("conditions").is_none());

        let t = table(&cols, vec![(vec![], obj.clone())], Value::Null, "Object");
        assert_eq!(t["rows"][0]["object"], obj);
        assert_eq!(t["metadata"], json!({}));
        let t = table(&cols, vec![(vec![], obj.clone())], Value::Null, "None");
        assert_eq!(t["rows"][0]["object"], Value::Null);
        // Bare metadata works too.
        let t = table(
            &cols,
            vec![(vec![], obj["metadata"].clone())],
            Value::Null,
            "Metadata",
        );
        assert_eq!(t["rows"][0]["object"]["metadata"]["uid"], "u1");
    }

    #[test]
    fn include_object_parsing_and_no_headers() {
        assert_eq!(IncludeObject::parse("").unwrap(), IncludeObject::Metadata);
        assert_eq!(
            IncludeObject::parse("All").unwrap_err().to_string(),
            "unrecognized includeObject value: \"All\""
        );
        let t = build_table(
            &default_columns(),
            vec![TableRow {
                cells: vec![],
                conditions: vec![json!({"type": "Completed"})],
                object: json!({}),
            }],
            json!({}),
            IncludeObject::Metadata,
            true,
            "meta.k8s.io/v1beta1",
        );
        assert_eq!(t["columnDefinitions"], json!([]));
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(t["rows"][0]["conditions"][0]["type"], "Completed");
    }

    #[test]
    fn default_row_prints_created_at() {
        let obj = json!({"metadata": {"name": "r", "creationTimestamp": "2026-01-02T03:00:00Z"}});
        assert_eq!(
            default_row(&obj),
            vec![json!("r"), json!("2026-01-02T03:00:00Z")]
        );
        assert_eq!(
            default_row(&json!({})),
            vec![json!(""), json!("0001-01-01T00:00:00Z")]
        );
        let names: Vec<String> = default_columns().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Created At"]);
    }
}
