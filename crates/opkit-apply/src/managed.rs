//! `metadata.managedFields`: decoding, the entries' identities, and encoding back in upstream's
//! order.
//!
//! An entry is identified by its manager, operation and subresource, plus its apiVersion for
//! `Update` entries (an applier keeps one entry whatever version it applies with; an updater gets
//! one per version, as upstream's `BuildManagerIdentifier`).

use serde_json::{Map, Value};

use crate::error::ApplyError;
use crate::fieldset::FieldSet;

/// `managedFields[].operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write.
    Update,
}

impl Operation {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One decoded `managedFields` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerEntry {
    /// `manager`.
    pub manager: String,
    /// `operation`.
    pub operation: Operation,
    /// `apiVersion` the fields are expressed in.
    pub api_version: String,
    /// `subresource` (empty for the main resource).
    pub subresource: String,
    /// `time` (RFC 3339), when known.
    pub time: Option<String>,
    /// `fieldsV1`.
    pub fields: FieldSet,
}

impl ManagerEntry {
    fn is(
        &self,
        manager: &str,
        operation: Operation,
        subresource: &str,
        api_version: &str,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource == subresource
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    /// The manager as conflict messages name it (upstream's `printManager`): `"kubectl"` for an
    /// applier; `"kubectl" using apps/v1` for an updater; `with subresource "status"` when the
    /// entry is for a subresource.
    pub fn display(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    fn encode(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::from(self.manager.clone()));
        m.insert("operation".into(), Value::from(self.operation.as_str()));
        m.insert("apiVersion".into(), Value::from(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::from(t.clone()));
        }
        m.insert("fieldsType".into(), Value::from("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), Value::from(self.subresource.clone()));
        }
        Value::Object(m)
    }

    fn decode(v: &Value, index: usize) -> Result<ManagerEntry, ApplyError> {
        let bad = |why: &str| ApplyError::InvalidManagedFields(format!("entry {index}: {why}"));
        let m = v.as_object().ok_or_else(|| bad("must be an object"))?;
        let text = |k: &str| -> Result<String, ApplyError> {
            match m.get(k) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(bad(&format!("{k} must be a string"))),
            }
        };
        let operation = match text("operation")?.as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err(bad("operation must be `Apply` or `Update`")),
        };
        let api_version = text("apiVersion")?;
        if api_version.is_empty() {
            return Err(bad("apiVersion must not be empty"));
        }
        match text("fieldsType")?.as_str() {
            "FieldsV1" => {}
            "" => return Err(bad("missing fieldsType")),
            other => return Err(bad(&format!("invalid fieldsType {other:?}"))),
        }
        let fields = match m.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(f) => FieldSet::from_fields_v1(f)?,
        };
        let time = Some(text("time")?).filter(|t| !t.is_empty());
        Ok(ManagerEntry {
            manager: text("manager")?,
            operation,
            api_version,
            subresource: text("subresource")?,
            time,
            fields,
        })
    }
}

/// The managed fields of one object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagedFields {
    entries: Vec<ManagerEntry>,
}

impl ManagedFields {
    /// Decodes a `managedFields` list. Entries with the same identity: the last one wins.
    pub fn decode(list: &Value) -> Result<ManagedFields, ApplyError> {
        let items = match list {
            Value::Null => return Ok(ManagedFields::default()),
            Value::Array(items) => items,
            _ => {
                return Err(ApplyError::InvalidManagedFields(
                    "managedFields must be a list".into(),
                ));
            }
        };
        let mut out = ManagedFields::default();
        for (i, item) in items.iter().enumerate() {
            let e = ManagerEntry::decode(item, i)?;
            out.entries
                .retain(|o| !o.is(&e.manager, e.operation, &e.subresource, &e.api_version));
            out.entries.push(e);
        }
        Ok(out)
    }

    /// Decodes `metadata.managedFields` of an object (empty when absent).
    pub fn of_object(obj: &Value) -> Result<ManagedFields, ApplyError> {
        match managed_fields_value(obj) {
            Some(v) => ManagedFields::decode(v),
            None => Ok(ManagedFields::default()),
        }
    }

    /// The managed fields a non-apply write starts from, as upstream decides: a subresource
    /// write, a request without (valid, non-empty) managed fields, keeps the live object's; a
    /// request setting them to `[]` or `[{}]` resets them; otherwise the request's own are
    /// taken (clients may edit them). Undecodable live managed fields count as none.
    pub fn for_write(live: Option<&Value>, new: &Value, subresource: bool) -> ManagedFields {
        let live_managed = || {
            live.and_then(|l| ManagedFields::of_object(l).ok())
                .unwrap_or_default()
        };
        if subresource {
            return live_managed();
        }
        let requested = managed_fields_value(new);
        if let Some(Value::Array(items)) = requested {
            let reset = match items.as_slice() {
                [] => true,
                [one] => one.as_object().is_some_and(Map::is_empty),
                _ => false,
            };
            if reset {
                return ManagedFields::default();
            }
        }
        match requested.map(ManagedFields::decode) {
            Some(Ok(m)) if !m.is_empty() => m,
            _ => live_managed(),
        }
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, in no particular order.
    pub fn entries(&self) -> &[ManagerEntry] {
        &self.entries
    }

    pub(crate) fn entries_mut(&mut self) -> &mut Vec<ManagerEntry> {
        &mut self.entries
    }

    /// The index of the entry with this identity.
    pub(crate) fn position(
        &self,
        manager: &str,
        operation: Operation,
        subresource: &str,
        api_version: &str,
    ) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.is(manager, operation, subresource, api_version))
    }

    /// The index of the entry with this identity, created (empty, without time) when missing.
    pub(crate) fn entry(
        &mut self,
        manager: &str,
        operation: Operation,
        subresource: &str,
        api_version: &str,
    ) -> usize {
        match self.position(manager, operation, subresource, api_version) {
            Some(i) => i,
            None => {
                self.entries.push(ManagerEntry {
                    manager: manager.to_string(),
                    operation,
                    api_version: api_version.to_string(),
                    subresource: subresource.to_string(),
                    time: None,
                    fields: FieldSet::new(),
                });
                self.entries.len() - 1
            }
        }
    }

    /// The `managedFields` list, sorted as upstream: by operation (`Apply` first), time,
    /// manager, apiVersion, subresource.
    pub fn encode(&self) -> Value {
        let mut sorted: Vec<&ManagerEntry> = self.entries.iter().collect();
        sorted.sort_by(|a, b| {
            (
                a.operation,
                &a.time,
                &a.manager,
                &a.api_version,
                &a.subresource,
            )
                .cmp(&(
                    b.operation,
                    &b.time,
                    &b.manager,
                    &b.api_version,
                    &b.subresource,
                ))
        });
        Value::Array(sorted.into_iter().map(ManagerEntry::encode).collect())
    }

    /// Writes them into `metadata.managedFields` of `obj` (removing the field when empty).
    pub fn store(&self, obj: &mut Value) {
        let Value::Object(root) = obj else {
            return;
        };
        let meta = root
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            if self.entries.is_empty() {
                meta.remove("managedFields");
            } else {
                meta.insert("managedFields".into(), self.encode());
            }
        }
    }
}

fn managed_fields_value(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, op: &str) -> Value {
        json!({"manager": manager, "operation": op, "apiVersion": "v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}}, "time": "2024-01-01T00:00:00Z"})
    }

    #[test]
    fn entries_round_trip_and_sort_apply_first() {
        let list = json!([entry("b", "Update"), entry("a", "Apply")]);
        let m = ManagedFields::decode(&list).unwrap();
        let out = m.encode();
        assert_eq!(out[0]["manager"], "a");
        assert_eq!(out[1], entry("b", "Update"));
    }

    #[test]
    fn invalid_entries_are_errors() {
        let mut e = entry("a", "Apply");
        e["operation"] = json!("Patch");
        assert!(ManagedFields::decode(&json!([e])).is_err());
        let mut e = entry("a", "Apply");
        e["fieldsType"] = json!("FieldsV2");
        assert!(ManagedFields::decode(&json!([e])).is_err());
        assert!(ManagedFields::decode(&json!({"a": 1})).is_err());
    }

    #[test]
    fn a_write_resets_with_an_empty_list_or_one_empty_entry_and_falls_back_to_live_otherwise() {
        let live = json!({"metadata": {"managedFields": [entry("a", "Apply")]}});
        let keep = ManagedFields::for_write(Some(&live), &json!({"metadata": {}}), false);
        assert_eq!(keep.entries().len(), 1);
        for reset in [json!([]), json!([{}])] {
            let new = json!({"metadata": {"managedFields": reset}});
            assert!(ManagedFields::for_write(Some(&live), &new, false).is_empty());
        }
        let invalid = json!({"metadata": {"managedFields": [{"manager": "x"}]}});
        assert_eq!(
            ManagedFields::for_write(Some(&live), &invalid, false).entries()[0].manager,
            "a"
        );
        let edited = json!({"metadata": {"managedFields": [entry("b", "Update")]}});
        assert_eq!(
            ManagedFields::for_write(Some(&live), &edited, false).entries()[0].manager,
            "b"
        );
        assert_eq!(
            ManagedFields::for_write(Some(&live), &edited, true).entries()[0].manager,
            "a"
        );
    }

    #[test]
    fn managers_are_displayed_as_upstream_prints_them() {
        let m = ManagedFields::decode(&json!([entry("kubectl", "Update")])).unwrap();
        assert_eq!(m.entries()[0].display(), "\"kubectl\" using v1");
        let mut e = entry("ctl", "Apply");
        e["subresource"] = json!("status");
        let m = ManagedFields::decode(&json!([e])).unwrap();
        assert_eq!(
            m.entries()[0].display(),
            "\"ctl\" with subresource \"status\""
        );
    }
}
