//! Metering: usage reports per operator and per custom resource, in the shape Operator Metering
//! gave them (ReportDataSource, ReportQuery, Report; results as csv, json or tab).
//!
//! The engine is SQLite, embedded (`rusqlite`, `bundled`): Metering's ReportQueries are plain
//! aggregate SQL, which SQLite runs as it is, in memory, with no server and a short build (the private
//! `engine` module and `docs/DESIGN-metering.md` say why). Nothing here does
//! network I/O: the controller and the CLI feed it samples and object histories.
//!
//! The pieces, one job each:
//! - [`sample`]: Metering's data-source rows (`{amount, timestamp, stepSize, labels, dt}`);
//! - [`query`]: the ReportQuery and data-source model and the `{{Input}}` placeholders;
//! - [`builtin`]: the queries Metering shipped, in SQLite's dialect;
//! - [`report`]: evaluating a query over samples (and, for a roll-up, earlier reports' results)
//!   for a period → a typed [`Table`];
//! - [`render`]: a table as Metering's report API printed it (csv, json, tab);
//! - [`cost`]: a rate card (per core-hour, GiB-hour, GiB-month) adding cost columns;
//! - [`lifetime`]: exact requested core-seconds and byte-seconds integrated from object
//!   lifetimes, per pod, namespace and custom resource (no sampling);
//! - [`tables`]: the data-source tables an object history fills for one period (exact rows the
//!   built-in and per-custom-resource queries read as they read samples).

#![warn(missing_docs)]

pub mod builtin;
pub mod cost;
mod engine;
pub mod lifetime;
pub mod query;
pub mod render;
pub mod report;
pub mod sample;
pub mod tables;

pub use cost::{CostError, RateCard, price};
pub use engine::EngineError;
pub use query::{
    Catalog, Column, ColumnType, DataSource, DataSourceKind, Input, InputType, QueryError,
    ReportQuery,
};
pub use render::{Format, FormatError, render};
pub use report::{Period, ReportError, Table, Value, run, run_with};
pub use sample::{Sample, SampleError, parse_samples, read_samples};
