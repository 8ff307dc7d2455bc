//! Server-side printing: objects and lists as `meta.k8s.io/v1 Table` for `kubectl get`.
//!
//! Built-in kinds get upstream's columns; custom resources get their CRD version's
//! `additionalPrinterColumns`.

use serde_json::{Value, json};

use crate::registry::Resource;
use opkit_apimachinery::table;

/// A Table for one object (`list = false`) or a list (`{"items": [...], "metadata": ...}`).
/// `with_columns = false` leaves the column definitions out (later watch events).
pub fn table_for(
    res: &Resource,
    value: &Value,
    list: bool,
    include_object: &str,
    with_columns: bool,
) -> Value {
    let now = jiff::Timestamp::now();
    let printer = res
        .custom()
        .map(|c| table::CrdPrinter::new(&c.printer_columns));
    let builtin = if printer.is_none() {
        table::builtin_columns(&res.group, &res.plural)
    } else {
        None
    };
    let columns = match (&printer, &builtin) {
        (Some(p), _) => p.columns().to_vec(),
        (None, Some(cols)) => cols.clone(),
        (None, None) => table::default_columns(),
    };
    let items: Vec<&Value> = if list {
        value
            .get("items")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    } else {
        vec![value]
    };
    let rows = items
        .into_iter()
        .map(|obj| {
            let cells = match (&printer, &builtin) {
                (Some(p), _) => p.row(obj, now),
                (None, Some(_)) => table::builtin_row(&res.group, &res.plural, obj, now),
                (None, None) => table::default_row(obj),
            };
            table::TableRow {
                conditions: if printer.is_none() {
                    table::builtin_row_conditions(&res.group, &res.plural, obj)
                } else {
                    Vec::new()
                },
                cells,
                object: obj.clone(),
            }
        })
        .collect();
    let meta = if list {
        value.get("metadata").cloned().unwrap_or(json!({}))
    } else {
        json!({"resourceVersion": value.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))})
    };
    let include = table::IncludeObject::parse(include_object).unwrap_or_default();
    table::build_table(
        &columns,
        rows,
        meta,
        include,
        !with_columns,
        "meta.k8s.io/v1",
    )
}
