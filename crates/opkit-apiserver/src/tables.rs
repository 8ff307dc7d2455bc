//! Server-side printing: objects and lists as `meta.k8s.io/v1 Table` for `kubectl get`.
//!
//! Built-in kinds get upstream's columns; custom resources get their CRD version's
//! `additionalPrinterColumns`.

use serde_json::{Value, json};

use crate::registry::Resource;
use opkit_apimachinery::table;

/// A Table for one object (`list = false`) or a list (`{"items": [...], "metadata": ...}`).
/// `with_columns = false` leaves the column definitions out (later watch events).
pub fn table_for(res: &Resource, value: &Value, list: bool, include_object: &str, with_columns: bool) -> Value {
    let now = jiff::Timestamp::now();
    let columns = match res.custom() {
        Some(c) => table::crd_columns(&c.printer_columns),
        None => table::builtin_columns(&res.group, &res.plural),
    };
    let items: Vec<&Value> = if list {
        value.get("items").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default()
    } else {
        vec![value]
    };
    let rows = items
        .into_iter()
        .map(|obj| {
            let cells = match res.custom() {
                Some(_) => table::crd_row(&columns, obj, now),
                None => table::builtin_row(&res.group, &res.plural, obj, now),
            };
            (cells, obj.clone())
        })
        .collect();
    let meta = if list {
        value.get("metadata").cloned().unwrap_or(json!({}))
    } else {
        json!({"resourceVersion": value.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))})
    };
    let columns = if with_columns { columns } else { Vec::new() };
    table::table(&columns, rows, meta, include_object)
}
