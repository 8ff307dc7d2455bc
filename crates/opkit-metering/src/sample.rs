//! Operator Metering's data-source rows: `{amount, timestamp, stepSize, labels, dt}`.
//!
//! Metering's Prometheus importer stored one row per series and step: the value (`amount`), the
//! step's instant (`timestamp`, RFC 3339), the step length (`stepSize`, a Go `time.Duration` in
//! nanoseconds in the JSON files), the series' labels and the day partition (`dt`,
//! `YYYY-MM-DD`). Files of such rows (a JSON array) are the offline input of a report; a bad row
//! is named by file, row index and field, so a broken input is found at once.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::Value;

/// One row of a data source: a value held for one step at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The value over the step (cores, bytes, …).
    pub amount: f64,
    /// The step's instant.
    pub timestamp: Timestamp,
    /// The step length in nanoseconds (Metering's `stepSize`).
    pub step_nanos: i64,
    /// The series' labels (`namespace`, `pod`, `node`, …).
    pub labels: BTreeMap<String, String>,
    /// The day partition (`YYYY-MM-DD`, UTC); derived from the timestamp when the row has none.
    pub dt: String,
}

impl Sample {
    /// A row of `amount` held for `step_nanos` from `timestamp`, its day partition derived.
    pub fn at(
        amount: f64,
        timestamp: Timestamp,
        step_nanos: i64,
        labels: BTreeMap<String, String>,
    ) -> Sample {
        Sample {
            amount,
            timestamp,
            step_nanos,
            labels,
            dt: day_of(timestamp),
        }
    }

    /// The step length in seconds: Metering's `timeprecision` column.
    pub fn step_seconds(&self) -> f64 {
        self.step_nanos as f64 / 1e9
    }
}

/// A data-source file or row that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    /// The file cannot be read.
    #[error("{file}: cannot read: {source}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a JSON array of rows.
    #[error("{file}: not a JSON array of data-source rows: {message}")]
    Document {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// One field of one row is missing or malformed.
    #[error("{file}: row {row}: field {field:?}: {message}")]
    Field {
        /// The file.
        file: String,
        /// The row's index in the array (from 0).
        row: usize,
        /// The field's JSON name.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// Reads a data-source file (a JSON array of rows); `file` names it in errors.
pub fn read_samples(path: &std::path::Path) -> Result<Vec<Sample>, SampleError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| SampleError::Io {
        file: file.clone(),
        source,
    })?;
    parse_samples(&file, &text)
}

/// Parses data-source rows from JSON text; `file` names the source in errors. Rows are read
/// one at a time (a file of millions of rows never exists as one JSON tree in memory).
pub fn parse_samples(file: &str, text: &str) -> Result<Vec<Sample>, SampleError> {
    let document = |e: serde_json::Error| SampleError::Document {
        file: file.to_owned(),
        message: e.to_string(),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let rows = serde::Deserializer::deserialize_seq(&mut de, Rows { file }).map_err(document)?;
    de.end().map_err(document)?;
    rows
}

/// Reads the array's rows one by one; the first bad row is the answer (the rest are skipped so
/// that the array still parses to its end).
struct Rows<'a> {
    file: &'a str,
}

impl<'de> serde::de::Visitor<'de> for Rows<'_> {
    type Value = Result<Vec<Sample>, SampleError>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of data-source rows")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut rows = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let mut row = 0;
        while let Some(value) = seq.next_element::<Value>()? {
            match parse_row(&value) {
                Ok(sample) => rows.push(sample),
                Err((field, message)) => {
                    while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                    return Ok(Err(SampleError::Field {
                        file: self.file.to_owned(),
                        row,
                        field,
                        message,
                    }));
                }
            }
            row += 1;
        }
        Ok(Ok(rows))
    }
}

type FieldError = (&'static str, String);

fn parse_row(value: &Value) -> Result<Sample, FieldError> {
    let Value::Object(obj) = value else {
        return Err(("", format!("the row is {}, not an object", kind_of(value))));
    };
    let field = |name: &'static str| {
        obj.get(name)
            .filter(|v| !v.is_null())
            .ok_or((name, "missing".to_owned()))
    };
    let amount = field("amount")?
        .as_f64()
        .ok_or(("amount", "not a number".to_owned()))?;
    let ts_text = field("timestamp")?
        .as_str()
        .ok_or(("timestamp", "not a string".to_owned()))?;
    let timestamp =
        opkit_apimachinery::time::parse_time(ts_text).map_err(|e| ("timestamp", e.to_string()))?;
    let step = field("stepSize")?;
    let step_nanos = step.as_i64().filter(|n| *n > 0).ok_or((
        "stepSize",
        format!("{step} is not a positive whole number of nanoseconds"),
    ))?;
    let labels = match field("labels")? {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err((
                    "labels",
                    format!("label {k:?} is {}, not a string", kind_of(other)),
                )),
            })
            .collect::<Result<BTreeMap<_, _>, _>>()?,
        other => return Err(("labels", format!("{}, not an object", kind_of(other)))),
    };
    let dt = match obj.get("dt") {
        None | Some(Value::Null) => day_of(timestamp),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(("dt", format!("{}, not a string", kind_of(other)))),
    };
    Ok(Sample {
        amount,
        timestamp,
        step_nanos,
        labels,
        dt,
    })
}

/// The `YYYY-MM-DD` day partition (UTC) of an instant.
pub(crate) fn day_of(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%d").to_string()
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: &str = r#"[{"amount": 0.25, "timestamp": "2019-03-18T16:00:00Z",
        "stepSize": 60000000000, "labels": {"namespace": "a", "pod": "p"}}]"#;

    #[test]
    fn reads_a_row_and_derives_the_day_partition() {
        let rows = parse_samples("f.json", ROW).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].amount, 0.25);
        assert_eq!(rows[0].step_seconds(), 60.0);
        assert_eq!(rows[0].dt, "2019-03-18");
        assert_eq!(rows[0].labels["pod"], "p");
    }

    #[test]
    fn names_file_row_and_field_of_a_bad_row() {
        let text = r#"[{"amount": 1, "timestamp": "2019-03-18T16:00:00Z", "stepSize": 1, "labels": {}},
                       {"amount": "x", "timestamp": "2019-03-18T16:00:00Z", "stepSize": 1, "labels": {}}]"#;
        let err = parse_samples("in.json", text).unwrap_err().to_string();
        assert_eq!(err, r#"in.json: row 1: field "amount": not a number"#);
        let text = r#"[{"amount": 1, "timestamp": "yesterday", "stepSize": 1, "labels": {}}]"#;
        let err = parse_samples("in.json", text).unwrap_err().to_string();
        assert!(
            err.starts_with(r#"in.json: row 0: field "timestamp": "#),
            "{err}"
        );
        let text = r#"[{"amount": 1, "timestamp": "2019-03-18T16:00:00Z", "labels": {}}]"#;
        let err = parse_samples("in.json", text).unwrap_err().to_string();
        assert_eq!(err, r#"in.json: row 0: field "stepSize": missing"#);
    }

    #[test]
    fn refuses_a_document_that_is_not_an_array() {
        let err = parse_samples("in.json", "{}").unwrap_err().to_string();
        assert_eq!(
            err,
            "in.json: not a JSON array of data-source rows: \
             invalid type: map, expected an array of data-source rows at line 1 column 0"
        );
        let err = parse_samples("in.json", "[] x").unwrap_err().to_string();
        assert_eq!(
            err,
            "in.json: not a JSON array of data-source rows: trailing characters at line 1 column 4"
        );
    }
}
