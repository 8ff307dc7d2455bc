//! A report as Operator Metering's `/api/v1/reports/get?format=` served it (its
//! `pkg/operator/http.go`), byte for byte, so scripts written against Metering keep working:
//!
//! - every format leaves out the `tableHidden` columns;
//! - `csv`: Go's `encoding/csv` (`,`, `\n` line ends, quotes only where needed); a header row of
//!   column names only when there is at least one row; doubles as `%f` (six decimals), integers
//!   as `%d`, timestamps as Go's `time.Time.String()` (`2019-03-18 16:00:00 +0000 UTC`), NULL
//!   as an empty field;
//! - `tab` (also `tabular`): the same records with a tab delimiter, through Go's `text/tabwriter`
//!   (minimum width 0, tab width 8, padding 2, padded with tabs);
//! - `json`: a compact array of row objects, keys in sorted order (Metering built each row from
//!   a Go map), numbers as Go's `encoding/json` prints them, timestamps in RFC 3339.
//!
//! One liberty: a visible `map` column, which Metering's csv writer refused ("unknown type"),
//! prints as its JSON object.

use std::fmt::Write as _;

use jiff::Timestamp;

use crate::report::{Table, Value};

/// A report format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated values.
    Csv,
    /// A JSON array of row objects.
    Json,
    /// Tab-aligned columns.
    Tab,
}

/// A format name that is not `csv`, `json`, `tab` or `tabular`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("format must be one of: csv, json or tabular (got {0:?})")]
pub struct FormatError(pub String);

impl std::str::FromStr for Format {
    type Err = FormatError;
    fn from_str(s: &str) -> Result<Self, FormatError> {
        match s {
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "tab" | "tabular" => Ok(Format::Tab),
            other => Err(FormatError(other.to_owned())),
        }
    }
}

/// Renders `table` in `format`.
pub fn render(table: &Table, format: Format) -> String {
    let visible: Vec<usize> = (0..table.columns.len())
        .filter(|&i| !table.columns[i].table_hidden)
        .collect();
    match format {
        Format::Csv => records(table, &visible, ','),
        Format::Tab => tabwriter(&records(table, &visible, '\t'), 8, 2),
        Format::Json => json(table, &visible),
    }
}

/// Go's `csv.Writer` over the header and the rows.
fn records(table: &Table, visible: &[usize], comma: char) -> String {
    let mut out = String::new();
    if table.rows.is_empty() {
        return out;
    }
    let header: Vec<String> = visible
        .iter()
        .map(|&i| table.columns[i].name.clone())
        .collect();
    write_record(&mut out, &header, comma);
    for row in &table.rows {
        let fields: Vec<String> = visible.iter().map(|&i| csv_field(&row[i])).collect();
        write_record(&mut out, &fields, comma);
    }
    out
}

fn csv_field(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Text(s) => s.clone(),
        Value::Double(f) => go_percent_f(*f),
        Value::Bigint(i) => i.to_string(),
        Value::Timestamp(ts) => go_time_string(*ts),
        Value::Map(m) => opkit_apimachinery::go_json(&map_json(m)),
    }
}

fn write_record(out: &mut String, fields: &[String], comma: char) {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(comma);
        }
        if needs_quotes(field, comma) {
            out.push('"');
            out.push_str(&field.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(field);
        }
    }
    out.push('\n');
}

/// Go's `csv.Writer.fieldNeedsQuotes`.
fn needs_quotes(field: &str, comma: char) -> bool {
    if field.is_empty() {
        return false;
    }
    if field == r"\." {
        return true;
    }
    if field.contains(['\n', '\r', '"', comma]) {
        return true;
    }
    field.chars().next().is_some_and(char::is_whitespace)
}

/// Go's `fmt.Sprintf("%f", f)`.
fn go_percent_f(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{f:.6}")
    }
}

/// Go's `time.Time.String()` of a UTC time: `2006-01-02 15:04:05.999999999 +0000 UTC`.
fn go_time_string(ts: Timestamp) -> String {
    let mut out = ts.strftime("%Y-%m-%d %H:%M:%S").to_string();
    push_fraction(&mut out, ts);
    out.push_str(" +0000 UTC");
    out
}

/// Go's RFC 3339 with nanoseconds, trailing zeros trimmed (`time.Time`'s JSON form).
fn go_rfc3339_nano(ts: Timestamp) -> String {
    let mut out = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    push_fraction(&mut out, ts);
    out.push('Z');
    out
}

fn push_fraction(out: &mut String, ts: Timestamp) {
    let nanos = ts.subsec_nanosecond().rem_euclid(1_000_000_000);
    if nanos != 0 {
        let digits = format!("{nanos:09}");
        let _ = write!(out, ".{}", digits.trim_end_matches('0'));
    }
}

fn map_json(m: &std::collections::BTreeMap<String, String>) -> serde_json::Value {
    serde_json::Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
    )
}

fn json(table: &Table, visible: &[usize]) -> String {
    use serde_json::Value as J;
    let rows: Vec<J> = table
        .rows
        .iter()
        .map(|row| {
            J::Object(
                visible
                    .iter()
                    .map(|&i| {
                        let value = match &row[i] {
                            Value::Null => J::Null,
                            Value::Text(s) => J::String(s.clone()),
                            Value::Double(f) => {
                                serde_json::Number::from_f64(*f).map_or(J::Null, J::Number)
                            }
                            Value::Bigint(n) => J::Number((*n).into()),
                            Value::Timestamp(ts) => J::String(go_rfc3339_nano(*ts)),
                            Value::Map(m) => map_json(m),
                        };
                        (table.columns[i].name.clone(), value)
                    })
                    .collect(),
            )
        })
        .collect();
    opkit_apimachinery::go_json(&J::Array(rows))
}

/// Go's `text/tabwriter` with a tab as padding character and no flags: cells end at `\t`, the
/// text after a line's last tab is not part of a column, and each column block (consecutive
/// lines having that column) is as wide as its widest cell plus `padding`, rounded up to a
/// multiple of `tab_width` and filled with tabs.
fn tabwriter(text: &str, tab_width: usize, padding: usize) -> String {
    let lines: Vec<Vec<&str>> = text.split('\n').map(|l| l.split('\t').collect()).collect();
    let mut out = String::new();
    let mut widths = Vec::new();
    format_block(
        &lines,
        0,
        lines.len(),
        &mut widths,
        tab_width,
        padding,
        &mut out,
    );
    out
}

fn cell_width(cell: &str) -> usize {
    cell.chars().count()
}

#[allow(clippy::too_many_arguments)]
fn format_block(
    lines: &[Vec<&str>],
    mut line0: usize,
    line1: usize,
    widths: &mut Vec<usize>,
    tab_width: usize,
    padding: usize,
    out: &mut String,
) {
    let column = widths.len();
    let mut this = line0;
    while this < line1 {
        if column + 1 >= lines[this].len() {
            this += 1;
            continue;
        }
        write_lines(lines, line0, this, widths, tab_width, out);
        line0 = this;
        let mut width = 0;
        while this < line1 && column + 1 < lines[this].len() {
            width = width.max(cell_width(lines[this][column]) + padding);
            this += 1;
        }
        widths.push(width);
        format_block(lines, line0, this, widths, tab_width, padding, out);
        widths.pop();
        line0 = this;
    }
    write_lines(lines, line0, line1, widths, tab_width, out);
}

fn write_lines(
    lines: &[Vec<&str>],
    line0: usize,
    line1: usize,
    widths: &[usize],
    tab_width: usize,
    out: &mut String,
) {
    for (i, line) in lines.iter().enumerate().take(line1).skip(line0) {
        for (j, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if let Some(&w) = widths.get(j) {
                let cell_w = w.div_ceil(tab_width) * tab_width;
                let n = cell_w - cell_width(cell);
                out.extend(std::iter::repeat_n('\t', n.div_ceil(tab_width)));
            }
        }
        if i + 1 < lines.len() {
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{Column, ColumnType};

    fn col(name: &str, ty: ColumnType) -> Column {
        Column {
            name: name.into(),
            ty,
            unit: None,
            table_hidden: false,
        }
    }

    fn table() -> Table {
        let ts = |s: &str| Value::Timestamp(s.parse().unwrap());
        Table {
            columns: vec![
                col("period_start", ColumnType::Timestamp),
                col("pod", ColumnType::Varchar),
                Column {
                    table_hidden: true,
                    ..col("labels", ColumnType::Map)
                },
                col("n", ColumnType::Bigint),
                col("cores", ColumnType::Double),
            ],
            rows: vec![
                vec![
                    ts("2019-03-18T16:00:00Z"),
                    Value::Text("a-very-long-pod-name".into()),
                    Value::Map(Default::default()),
                    Value::Bigint(3),
                    Value::Double(1.5),
                ],
                vec![
                    ts("2019-03-18T16:00:00.25Z"),
                    Value::Text("x,\"y\"".into()),
                    Value::Map(Default::default()),
                    Value::Null,
                    Value::Double(60.0),
                ],
            ],
        }
    }

    #[test]
    fn csv_is_gos_csv_writer_with_metering_value_formats() {
        assert_eq!(
            render(&table(), Format::Csv),
            "period_start,pod,n,cores\n\
             2019-03-18 16:00:00 +0000 UTC,a-very-long-pod-name,3,1.500000\n\
             2019-03-18 16:00:00.25 +0000 UTC,\"x,\"\"y\"\"\",,60.000000\n"
        );
    }

    #[test]
    fn json_is_an_array_of_row_objects_with_sorted_keys_and_go_numbers() {
        assert_eq!(
            render(&table(), Format::Json),
            r#"[{"cores":1.5,"n":3,"period_start":"2019-03-18T16:00:00Z","pod":"a-very-long-pod-name"},{"cores":60,"n":null,"period_start":"2019-03-18T16:00:00.25Z","pod":"x,\"y\""}]"#
        );
    }

    #[test]
    fn tab_aligns_columns_with_tabs_like_gos_tabwriter() {
        // Column widths: period_start max(12, 29, 32) + 2 = 34 → 40; pod max(3, 20, 9 for the
        // quoted `"x,""y"""`) + 2 = 22 → 24; n 1 + 2 = 3 → 8; cores is the last cell (no column).
        // Tabs after a cell: ceil((width - text) / 8).
        assert_eq!(
            render(&table(), Format::Tab),
            "period_start\t\t\t\tpod\t\t\tn\tcores\n\
             2019-03-18 16:00:00 +0000 UTC\t\ta-very-long-pod-name\t3\t1.500000\n\
             2019-03-18 16:00:00.25 +0000 UTC\t\"x,\"\"y\"\"\"\t\t\t60.000000\n"
        );
    }

    #[test]
    fn an_empty_report_has_no_header_in_csv_and_is_an_empty_array_in_json() {
        let mut t = table();
        t.rows.clear();
        assert_eq!(render(&t, Format::Csv), "");
        assert_eq!(render(&t, Format::Tab), "");
        assert_eq!(render(&t, Format::Json), "[]");
    }

    #[test]
    fn format_names_are_metering_s() {
        assert_eq!("tabular".parse::<Format>(), Ok(Format::Tab));
        assert_eq!(
            "xml".parse::<Format>().unwrap_err().to_string(),
            r#"format must be one of: csv, json or tabular (got "xml")"#
        );
    }
}
