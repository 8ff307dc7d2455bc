//! A rate card: prices per core-hour, GiB-hour (memory) and GiB-month (storage) turn a report's
//! usage columns into cost columns, as OpenCost's allocation does.
//!
//! A column is priced by its unit, as Metering declared it: `cpu_core_seconds` at the core-hour
//! rate; `byte_seconds` / `memory_byte_seconds` at the GiB-hour rate, or at the GiB-month rate
//! when the column is storage (its name says `storage`, as Metering's volume columns do). A
//! month is 730 hours, OpenCost's convention. Each priced column `x` gains a column `x_cost`
//! (unit `cost`) at the end of the table; a NULL usage costs NULL.

use crate::query::{Column, ColumnType};
use crate::report::{Table, Value};

/// Hours in the month of a GiB-month price (OpenCost's 730).
pub const HOURS_PER_MONTH: f64 = 730.0;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Prices; a rate left out prices nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateCard {
    /// Cost of one CPU core for one hour.
    pub per_core_hour: Option<f64>,
    /// Cost of one GiB of memory for one hour.
    pub per_gib_hour: Option<f64>,
    /// Cost of one GiB of storage for one month (730 hours).
    pub per_gib_month: Option<f64>,
}

/// A rate card that cannot price a report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CostError {
    /// A rate that is negative or not a number.
    #[error("rate card: {rate} must be a finite number, at least 0 (got {value})")]
    BadRate {
        /// Which rate.
        rate: &'static str,
        /// Its value.
        value: f64,
    },
    /// No column of the report has a unit the card prices.
    #[error("rate card: no column of the report is priced by the rates given (columns: {})", columns.join(", "))]
    NothingToPrice {
        /// The report's columns with their units.
        columns: Vec<String>,
    },
}

/// What a column's values cost per unit, if the card prices it.
fn price_per_unit(column: &Column, card: &RateCard) -> Option<f64> {
    if column.ty != ColumnType::Double && column.ty != ColumnType::Bigint {
        return None;
    }
    match column.unit.as_deref()? {
        "cpu_core_seconds" => card.per_core_hour.map(|r| r / 3600.0),
        "byte_seconds" | "memory_byte_seconds" if column.name.contains("storage") => card
            .per_gib_month
            .map(|r| r / GIB / (HOURS_PER_MONTH * 3600.0)),
        "byte_seconds" | "memory_byte_seconds" => card.per_gib_hour.map(|r| r / GIB / 3600.0),
        _ => None,
    }
}

/// `table` with a cost column for each column `card` prices.
pub fn price(table: &Table, card: &RateCard) -> Result<Table, CostError> {
    for (rate, value) in [
        ("per core-hour", card.per_core_hour),
        ("per GiB-hour", card.per_gib_hour),
        ("per GiB-month", card.per_gib_month),
    ] {
        if let Some(v) = value
            && !(v.is_finite() && v >= 0.0)
        {
            return Err(CostError::BadRate { rate, value: v });
        }
    }
    let priced: Vec<(usize, f64)> = table
        .columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| price_per_unit(c, card).map(|p| (i, p)))
        .collect();
    if priced.is_empty() {
        return Err(CostError::NothingToPrice {
            columns: table
                .columns
                .iter()
                .map(|c| match &c.unit {
                    Some(u) => format!("{} ({u})", c.name),
                    None => c.name.clone(),
                })
                .collect(),
        });
    }
    let mut out = table.clone();
    for &(i, _) in &priced {
        out.columns.push(Column {
            name: format!("{}_cost", table.columns[i].name),
            ty: ColumnType::Double,
            unit: Some("cost".into()),
            table_hidden: false,
        });
    }
    for row in &mut out.rows {
        let costs: Vec<Value> = priced
            .iter()
            .map(|&(i, per_unit)| match row[i] {
                Value::Double(v) => Value::Double(v * per_unit),
                Value::Bigint(v) => Value::Double(v as f64 * per_unit),
                _ => Value::Null,
            })
            .collect();
        row.extend(costs);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, unit: &str) -> Column {
        Column {
            name: name.into(),
            ty: ColumnType::Double,
            unit: Some(unit.into()),
            table_hidden: false,
        }
    }

    #[test]
    fn prices_core_seconds_memory_and_storage_at_their_rates() {
        let table = Table {
            columns: vec![
                col("namespace", "kubernetes_namespace"),
                col("pod_request_cpu_core_seconds", "cpu_core_seconds"),
                col("pod_request_memory_byte_seconds", "byte_seconds"),
                col("volume_request_storage_byte_seconds", "byte_seconds"),
            ],
            rows: vec![vec![
                Value::Text("a".into()),
                // 2 cores for 3 hours; 4 GiB for 2 hours; 10 GiB for half a month.
                Value::Double(2.0 * 3.0 * 3600.0),
                Value::Double(4.0 * GIB * 2.0 * 3600.0),
                Value::Double(10.0 * GIB * 365.0 * 3600.0),
            ]],
        };
        let card = RateCard {
            per_core_hour: Some(0.03),
            per_gib_hour: Some(0.004),
            per_gib_month: Some(0.1),
        };
        let priced = price(&table, &card).unwrap();
        let names: Vec<&str> = priced.columns[4..]
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "pod_request_cpu_core_seconds_cost",
                "pod_request_memory_byte_seconds_cost",
                "volume_request_storage_byte_seconds_cost"
            ]
        );
        let cost = |i: usize| match priced.rows[0][i] {
            Value::Double(v) => v,
            ref other => panic!("{other:?}"),
        };
        // 6 core-hours × 0.03 = 0.18; 8 GiB-hours × 0.004 = 0.032; 5 GiB-months × 0.1 = 0.5.
        assert!((cost(4) - 0.18).abs() < 1e-12, "{}", cost(4));
        assert!((cost(5) - 0.032).abs() < 1e-12, "{}", cost(5));
        assert!((cost(6) - 0.5).abs() < 1e-12, "{}", cost(6));
    }

    #[test]
    fn refuses_a_card_that_prices_nothing_or_a_negative_rate() {
        let table = Table {
            columns: vec![col("pod_request_cpu_core_seconds", "cpu_core_seconds")],
            rows: vec![],
        };
        let memory_only = RateCard {
            per_gib_hour: Some(1.0),
            ..RateCard::default()
        };
        assert_eq!(
            price(&table, &memory_only).unwrap_err().to_string(),
            "rate card: no column of the report is priced by the rates given \
             (columns: pod_request_cpu_core_seconds (cpu_core_seconds))"
        );
        let negative = RateCard {
            per_core_hour: Some(-1.0),
            ..RateCard::default()
        };
        assert!(matches!(
            price(&table, &negative),
            Err(CostError::BadRate { .. })
        ));
    }
}
