//! The demo's live view: what is stored in the API, as one frame of at most 80 columns.
//!
//! [`read`] lists the objects (all namespaces, so what users create with kubectl shows too)
//! into a [`Snapshot`] holding only what the frame shows — timestamps rather than ages, so
//! two snapshots compare equal exactly when the frame's content is the same apart from the
//! clock; the pipe mode prints a frame only when that changes. [`render`] lays it out, in
//! colour or not; colour only repeats what the words say.

use std::fmt::Write as _;
use std::time::Duration;

use flightticket::FlightTicket;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use memcached::Memcached;
use opkit::conditions;
use tokio::time::Instant;

use super::scenario::{self, Caption, Progress, Stage};

/// Frame width.
pub const WIDTH: usize = 80;
/// Events shown at most.
const EVENTS: usize = 8;

/// What the frame shows about the demo process itself.
#[derive(Debug, Clone)]
pub struct Header {
    /// The control plane's URL.
    pub url: String,
    /// The admin kubeconfig's path.
    pub kubeconfig: String,
    /// When the view started (uptime).
    pub started: Instant,
}

/// The state the frame shows, read from the API.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    tickets: Vec<TicketRow>,
    caches: Vec<CacheRow>,
    deployments: usize,
    replica_sets: usize,
    pods: usize,
    pods_ready: usize,
    bookings: usize,
    events: Vec<EventRow>,
    /// The last read failed (the rest is from the read before).
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
struct TicketRow {
    name: String,
    from: String,
    to: String,
    seats: i64,
    phase: Option<String>,
    deleting: bool,
    ready: Option<String>,
    /// The booking ConfigMap's name and creation time, if it exists.
    booking: Option<(String, Option<Timestamp>)>,
}

#[derive(Debug, Clone, PartialEq)]
struct CacheRow {
    name: String,
    size: i32,
    ready: i32,
    available: Option<String>,
    progressing: Option<String>,
    degraded: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
struct EventRow {
    time: Option<Timestamp>,
    warning: bool,
    object: String,
    reason: String,
    message: String,
}

/// `name`, or `namespace/name` outside the script's namespace.
fn display_name(namespace: Option<String>, name: String) -> String {
    match namespace {
        Some(ns) if ns != scenario::NAMESPACE => format!("{ns}/{name}"),
        _ => name,
    }
}

fn condition_status(conds: &[opkit::Condition], type_: &str) -> Option<String> {
    conditions::find(conds, type_).map(|c| c.status.clone())
}

/// Reads everything the frame shows (one list call per kind, concurrently).
pub async fn read(client: &Client) -> kube::Result<Snapshot> {
    let all = ListParams::default();
    let bookings = ListParams::default().labels(&format!(
        "app.kubernetes.io/managed-by={}",
        flightticket::CLUSTER_ROLE
    ));
    let tickets = Api::<FlightTicket>::all(client.clone());
    let caches = Api::<Memcached>::all(client.clone());
    let deployments = Api::<Deployment>::all(client.clone());
    let replica_sets = Api::<ReplicaSet>::all(client.clone());
    let pods = Api::<Pod>::all(client.clone());
    let configmaps = Api::<ConfigMap>::all(client.clone());
    let events = Api::<Event>::all(client.clone());
    let (tickets, caches, deployments, replica_sets, pods, configmaps, events) = tokio::try_join!(
        tickets.list(&all),
        caches.list(&all),
        deployments.list(&all),
        replica_sets.list(&all),
        pods.list(&all),
        configmaps.list(&bookings),
        events.list(&all),
    )?;

    let mut ticket_rows: Vec<TicketRow> = tickets
        .items
        .into_iter()
        .map(|t| {
            let namespace = t.namespace();
            let booking_name = flightticket::booking_name(&t.name_any());
            let booking = configmaps
                .items
                .iter()
                .find(|cm| cm.namespace() == namespace && cm.name_any() == booking_name)
                .map(|cm| {
                    (
                        booking_name.clone(),
                        cm.metadata.creation_timestamp.as_ref().map(|t| t.0),
                    )
                });
            let status = t.status.clone().unwrap_or_default();
            TicketRow {
                name: display_name(namespace, t.name_any()),
                from: t.spec.from.clone(),
                to: t.spec.to.clone(),
                seats: t.spec.number,
                phase: status.phase.clone(),
                deleting: t.metadata.deletion_timestamp.is_some(),
                ready: condition_status(&status.conditions, flightticket::READY),
                booking,
            }
        })
        .collect();
    ticket_rows.sort_by(|a, b| a.name.cmp(&b.name));

    let mut cache_rows: Vec<CacheRow> = caches
        .items
        .into_iter()
        .map(|m| {
            let namespace = m.namespace();
            let name = m.name_any();
            let ready = deployments
                .items
                .iter()
                .find(|d| d.namespace() == namespace && d.name_any() == name)
                .and_then(|d| d.status.as_ref())
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0);
            let conds = m
                .status
                .as_ref()
                .map(|s| s.conditions.as_slice())
                .unwrap_or_default();
            CacheRow {
                size: m.spec.size,
                ready,
                available: condition_status(conds, memcached::AVAILABLE),
                progressing: condition_status(conds, memcached::PROGRESSING),
                degraded: condition_status(conds, memcached::DEGRADED),
                name: display_name(namespace, name),
            }
        })
        .collect();
    cache_rows.sort_by(|a, b| a.name.cmp(&b.name));

    let pods_ready = pods
        .items
        .iter()
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .count();

    let mut event_rows: Vec<EventRow> = events.items.into_iter().map(event_row).collect();
    // Newest first; events without a time last.
    event_rows.sort_by_key(|e| std::cmp::Reverse(e.time));
    event_rows.truncate(EVENTS);

    Ok(Snapshot {
        tickets: ticket_rows,
        caches: cache_rows,
        deployments: deployments.items.len(),
        replica_sets: replica_sets.items.len(),
        pods: pods.items.len(),
        pods_ready,
        bookings: configmaps.items.len(),
        events: event_rows,
        error: None,
    })
}

fn event_row(e: Event) -> EventRow {
    let time = e
        .series
        .as_ref()
        .map(|s| s.last_observed_time.0)
        .or(e.event_time.as_ref().map(|t| t.0))
        .or(e.deprecated_last_timestamp.as_ref().map(|t| t.0))
        .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0));
    let object = e
        .regarding
        .as_ref()
        .map(|r| {
            let kind = r.kind.clone().unwrap_or_default().to_ascii_lowercase();
            let name = display_name(r.namespace.clone(), r.name.clone().unwrap_or_default());
            format!("{kind}/{name}")
        })
        .unwrap_or_default();
    let mut message = e.note.clone().unwrap_or_default();
    if let Some(count) = e.series.as_ref().map(|s| s.count).filter(|c| *c > 1) {
        message = format!("(x{count}) {message}");
    }
    EventRow {
        time,
        warning: e.type_.as_deref() == Some("Warning"),
        object,
        reason: e.reason.clone().unwrap_or_default(),
        message,
    }
}

/// How a piece of text is shown in colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    Bold,
    Dim,
    Good,
    Bad,
    Busy,
}

impl Style {
    fn code(self) -> &'static str {
        match self {
            Style::Plain => "",
            Style::Bold => "\x1b[1m",
            Style::Dim => "\x1b[2m",
            Style::Good => "\x1b[32m",
            Style::Bad => "\x1b[31m",
            Style::Busy => "\x1b[33m",
        }
    }
}

/// One line of a frame: styled pieces.
#[derive(Debug, Clone, Default)]
pub struct Line {
    pieces: Vec<(String, Style)>,
    /// Never cut (a path people copy is worth a wrapped line).
    whole: bool,
}

impl Line {
    fn new() -> Line {
        Line::default()
    }

    fn text(text: impl Into<String>) -> Line {
        Line::new().push(text, Style::Plain)
    }

    fn styled(text: impl Into<String>, style: Style) -> Line {
        Line::new().push(text, style)
    }

    fn push(mut self, text: impl Into<String>, style: Style) -> Line {
        self.pieces.push((text.into(), style));
        self
    }

    fn whole(mut self) -> Line {
        self.whole = true;
        self
    }

    /// `text` padded with spaces to `width` columns, cut to leave at least one space.
    fn cell(self, text: &str, width: usize, style: Style) -> Line {
        self.push(pad(&fit(text, width.saturating_sub(1)), width), style)
    }

    /// The line, at most `width` columns (unless it must stay whole), with colour escapes or
    /// without; without, trailing spaces are dropped.
    pub fn render(&self, width: usize, colour: bool) -> String {
        let mut out = String::new();
        let mut left = if self.whole { usize::MAX } else { width };
        for (text, style) in &self.pieces {
            if left == 0 {
                break;
            }
            let piece: String = text.chars().take(left).collect();
            left -= piece.chars().count();
            if colour && *style != Style::Plain {
                let _ = write!(out, "{}{piece}\x1b[0m", style.code());
            } else {
                out.push_str(&piece);
            }
        }
        if colour {
            out
        } else {
            out.trim_end().to_string()
        }
    }
}

/// `text` cut to `width` columns (with `…` when cut) and padded to it.
fn pad(text: &str, width: usize) -> String {
    let fitted = fit(text, width);
    let n = fitted.chars().count();
    format!("{fitted}{}", " ".repeat(width.saturating_sub(n)))
}

/// `text` cut to `width` columns, ending in `…` when cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Word-wraps `text` to `width` columns.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        if !current.is_empty() && current.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// `5s`, `3m12s`, `2h5m`, `4d`.
pub fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..600 => format!("{}m{}s", s / 60, s % 60),
        600..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d", s / 86400),
    }
}

/// `m:ss` or `h:mm:ss`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

fn since(t: Option<Timestamp>, now: Timestamp) -> String {
    match t {
        Some(t) => {
            let secs = now.as_second().saturating_sub(t.as_second()).max(0);
            age(Duration::from_secs(secs.unsigned_abs()))
        }
        None => "?".to_string(),
    }
}

/// What a condition's `True` means: good, bad or work under way.
#[derive(Clone, Copy)]
enum WhenTrue {
    /// Ready, Available.
    Good,
    /// Degraded.
    Bad,
    /// Progressing.
    Busy,
}

fn condition_cell(line: Line, status: Option<&str>, width: usize, when_true: WhenTrue) -> Line {
    let style = match (status, when_true) {
        (Some("True"), WhenTrue::Good) | (Some("False"), WhenTrue::Bad) => Style::Good,
        (Some("False"), WhenTrue::Good) | (Some("True"), WhenTrue::Bad) => Style::Bad,
        (Some("True"), WhenTrue::Busy) => Style::Busy,
        (Some(_), WhenTrue::Busy) => Style::Plain,
        _ => Style::Busy,
    };
    line.cell(status.unwrap_or("-"), width, style)
}

fn rule() -> Line {
    Line::styled("─".repeat(WIDTH), Style::Dim)
}

/// Column width: the widest of `header` and `values`, within `min..=max`.
fn column<'a>(
    header: &str,
    values: impl Iterator<Item = &'a str>,
    min: usize,
    max: usize,
) -> usize {
    values
        .map(|v| v.chars().count())
        .chain([header.chars().count()])
        .max()
        .unwrap_or(0)
        .clamp(min, max)
}

/// The kubectl commands the footer suggests (all work against the embedded control plane).
pub const TRY: [&str; 4] = [
    "kubectl get flighttickets",
    "kubectl get memcached,deploy,pods",
    "kubectl describe ft ams-sfo",
    "kubectl get events",
];

/// What gives way, in this order, when the frame is taller than the terminal.
const KEEP: u8 = 0;
const OLDER_EVENT: u8 = 1;
const COMMAND: u8 = 2;
const BLANK: u8 = 3;
const REPEATED: u8 = 4;

/// The frame for `snapshot` and `caption` at `elapsed` since start, at most `height` lines:
/// on a short terminal, events beyond the newest three give way first, then the suggested
/// commands, blank lines, and what is said twice (the kubeconfig path, the Ctrl-C hint).
pub fn render(
    header: &Header,
    snapshot: &Snapshot,
    caption: &Caption,
    elapsed: Duration,
    now: Timestamp,
    height: usize,
) -> Vec<Line> {
    let mut lines: Vec<(Line, u8)> = Vec::new();
    let mut add = |more: Vec<Line>, priority: u8| {
        lines.extend(more.into_iter().map(|l| (l, priority)));
    };
    let title = "opkit demo · two operators on an embedded control plane";
    let up = format!("up {}", clock(elapsed));
    let gap = WIDTH.saturating_sub(title.chars().count() + up.chars().count());
    add(
        vec![
            Line::styled(title, Style::Bold)
                .push(" ".repeat(gap), Style::Plain)
                .push(up, Style::Plain),
            Line::text(format!("API {}", header.url)),
        ],
        KEEP,
    );
    add(
        vec![Line::text(format!("kubeconfig {}", header.kubeconfig))],
        REPEATED,
    );
    add(vec![rule()], KEEP);
    add(caption_lines(caption), KEEP);
    add(vec![rule()], KEEP);

    add(
        vec![
            Line::styled("FlightTickets", Style::Bold)
                .push("  flights.com/v1, operator flightticket", Style::Dim),
        ],
        KEEP,
    );
    add(ticket_lines(&snapshot.tickets, now), KEEP);
    add(vec![Line::new()], BLANK);
    add(
        vec![Line::styled("Memcacheds", Style::Bold).push(
            "  cache.example.com/v1alpha1, operator memcached",
            Style::Dim,
        )],
        KEEP,
    );
    add(cache_lines(&snapshot.caches), KEEP);
    add(vec![Line::new()], BLANK);
    add(
        vec![Line::text(format!(
            "Deployments {} · ReplicaSets {} · Pods {} ({} ready) · Booking ConfigMaps {}",
            snapshot.deployments,
            snapshot.replica_sets,
            snapshot.pods,
            snapshot.pods_ready,
            snapshot.bookings
        ))],
        KEEP,
    );
    if let Some(error) = &snapshot.error {
        add(vec![Line::styled(fit(error, WIDTH), Style::Bad)], KEEP);
    }
    add(vec![Line::new()], BLANK);

    let mut events = event_lines(&snapshot.events, now).into_iter();
    add(events.by_ref().take(2 + 3).collect(), KEEP);
    add(events.collect(), OLDER_EVENT);

    add(vec![rule()], REPEATED);
    add(
        vec![
            Line::styled("Try it:", Style::Bold)
                .push(
                    format!(" export KUBECONFIG={}", header.kubeconfig),
                    Style::Plain,
                )
                .whole(),
        ],
        KEEP,
    );
    let commands = TRY
        .chunks(2)
        .map(|pair| {
            let mut line = Line::new();
            for (i, command) in pair.iter().enumerate() {
                let text = if i == 0 {
                    pad(&format!("  {command}"), 37)
                } else {
                    format!(" {command}")
                };
                line = line.push(text, Style::Plain);
            }
            line
        })
        .collect();
    add(commands, COMMAND);
    add(
        vec![Line::styled(
            "Ctrl-C stops the demo and the control plane.",
            Style::Dim,
        )],
        REPEATED,
    );

    for priority in [OLDER_EVENT, COMMAND, BLANK, REPEATED] {
        while lines.len() > height {
            match lines.iter().rposition(|(_, p)| *p == priority) {
                Some(i) => {
                    lines.remove(i);
                }
                None => break,
            }
        }
    }
    lines.truncate(height.max(1));
    lines.into_iter().map(|(line, _)| line).collect()
}

fn caption_lines(caption: &Caption) -> Vec<Line> {
    let mut out = Vec::new();
    let head = match caption.stage {
        Stage::Starting => "Starting".to_string(),
        Stage::Step(n) => format!("Step {n}/{}", scenario::STEPS),
        Stage::Done => "Script done".to_string(),
    };
    out.push(Line::styled(format!("{head} · "), Style::Bold).push(
        fit(&caption.title, WIDTH - head.chars().count() - 3),
        Style::Bold,
    ));
    if let Some(command) = &caption.command {
        out.push(Line::styled(
            fit(&format!("  $ {command}"), WIDTH),
            Style::Dim,
        ));
    }
    for (i, text) in wrap(&caption.watch, WIDTH - 9)
        .into_iter()
        .take(4)
        .enumerate()
    {
        let lead = if i == 0 { "  Watch: " } else { "         " };
        out.push(Line::text(lead).push(text, Style::Plain));
    }
    let status = match &caption.progress {
        Progress::Announced => Some(Line::styled("  … about to happen", Style::Busy)),
        Progress::Waiting => Some(Line::styled(
            "  … done; watching for the outcome",
            Style::Busy,
        )),
        Progress::Seen(seen) => Some(Line::styled(
            fit(&format!("  ✓ {seen}"), WIDTH),
            Style::Good,
        )),
        Progress::NotSeen(after) => Some(Line::styled(
            format!("  ✗ not seen within {}s", after.as_secs()),
            Style::Bad,
        )),
        Progress::Failed(error) => Some(Line::styled(
            fit(&format!("  ✗ the change failed: {error}"), WIDTH),
            Style::Bad,
        )),
        Progress::Idle => None,
    };
    out.extend(status);
    out
}

fn ticket_lines(rows: &[TicketRow], now: Timestamp) -> Vec<Line> {
    let name_w = column("NAME", rows.iter().map(|r| r.name.as_str()), 8, 20);
    let routes: Vec<String> = rows
        .iter()
        .map(|r| format!("{} → {}", r.from, r.to))
        .collect();
    let route_w = column("ROUTE", routes.iter().map(String::as_str), 10, 20);
    let mut out = vec![Line::styled(
        format!(
            "{}{}SEATS  {}{}BOOKING (ConfigMap, age)",
            pad("NAME", name_w + 2),
            pad("ROUTE", route_w + 1),
            pad("PHASE", 10),
            pad("READY", 7),
        ),
        Style::Dim,
    )];
    if rows.is_empty() {
        out.push(Line::styled("(none)", Style::Dim));
    }
    for (row, route) in rows.iter().zip(&routes) {
        let (phase, phase_style) = match (&row.phase, row.deleting) {
            (_, true) => ("Deleting", Style::Busy),
            (Some(p), false) if p == flightticket::PHASE_BOOKED => (p.as_str(), Style::Good),
            (Some(p), false) => (p.as_str(), Style::Plain),
            (None, false) => ("-", Style::Busy),
        };
        let line = Line::new()
            .cell(&row.name, name_w + 2, Style::Plain)
            .cell(route, route_w + 1, Style::Plain)
            .cell(&format!("{:>5}", row.seats), 7, Style::Plain)
            .cell(phase, 10, phase_style);
        let line = condition_cell(line, row.ready.as_deref(), 7, WhenTrue::Good);
        let line = match &row.booking {
            Some((name, created)) => {
                line.push(format!("{name}, {}", since(*created, now)), Style::Plain)
            }
            None => line.push("missing", Style::Busy),
        };
        out.push(line);
    }
    out
}

fn cache_lines(rows: &[CacheRow]) -> Vec<Line> {
    let name_w = column("NAME", rows.iter().map(|r| r.name.as_str()), 8, 24);
    let mut out = vec![Line::styled(
        format!(
            "{}SIZE  PODS   AVAILABLE  PROGRESSING  DEGRADED",
            pad("NAME", name_w + 2)
        ),
        Style::Dim,
    )];
    if rows.is_empty() {
        out.push(Line::styled("(none)", Style::Dim));
    }
    for row in rows {
        let pods_style = if row.ready >= row.size {
            Style::Good
        } else {
            Style::Busy
        };
        let line = Line::new()
            .cell(&row.name, name_w + 2, Style::Plain)
            .cell(&format!("{:>4}", row.size), 6, Style::Plain)
            .cell(&format!("{}/{}", row.ready, row.size), 7, pods_style);
        let line = condition_cell(line, row.available.as_deref(), 11, WhenTrue::Good);
        let line = condition_cell(line, row.progressing.as_deref(), 13, WhenTrue::Busy);
        let line = condition_cell(line, row.degraded.as_deref(), 8, WhenTrue::Bad);
        out.push(line);
    }
    out
}

/// The events section: a title, column names, then one line per event, newest first.
fn event_lines(rows: &[EventRow], now: Timestamp) -> Vec<Line> {
    let shown = rows;
    let mut out = vec![Line::styled("Events", Style::Bold).push("  newest first", Style::Dim)];
    let ages: Vec<String> = shown.iter().map(|e| since(e.time, now)).collect();
    let age_w = column("AGE", ages.iter().map(String::as_str), 3, 6);
    let object_w = column("OBJECT", shown.iter().map(|e| e.object.as_str()), 15, 24);
    let reason_w = column("REASON", shown.iter().map(|e| e.reason.as_str()), 9, 24);
    out.push(Line::styled(
        format!(
            "{}{}{}MESSAGE",
            pad("AGE", age_w + 1),
            pad("OBJECT", object_w + 1),
            pad("REASON", reason_w + 1)
        ),
        Style::Dim,
    ));
    if shown.is_empty() {
        out.push(Line::styled("(none yet)", Style::Dim));
    }
    let message_w = WIDTH.saturating_sub(age_w + object_w + reason_w + 3);
    for (event, age) in shown.iter().zip(&ages) {
        let reason_style = if event.warning {
            Style::Bad
        } else {
            Style::Plain
        };
        out.push(
            Line::new()
                .cell(age, age_w + 1, Style::Plain)
                .cell(&event.object, object_w + 1, Style::Plain)
                .cell(&event.reason, reason_w + 1, reason_style)
                .push(fit(&event.message, message_w), Style::Plain),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(age(Duration::from_secs(7)), "7s");
        assert_eq!(age(Duration::from_secs(125)), "2m5s");
        assert_eq!(age(Duration::from_secs(1800)), "30m");
        assert_eq!(age(Duration::from_secs(7300)), "2h1m");
        assert_eq!(clock(Duration::from_secs(65)), "1:05");
        assert_eq!(clock(Duration::from_secs(3725)), "1:02:05");
    }

    #[test]
    fn wrap_and_fit_keep_within_the_width() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(pad("ab", 4), "ab  ");
        let line = Line::text("x".repeat(100)).push("y", Style::Good);
        assert_eq!(line.render(WIDTH, false).chars().count(), WIDTH);
    }

    fn header() -> Header {
        Header {
            url: "https://127.0.0.1:65535".into(),
            kubeconfig: "/tmp/opkit-demo-4194304/kubeconfig".into(),
            started: Instant::now(),
        }
    }

    fn ticket(name: &str, from: &str, to: &str) -> TicketRow {
        TicketRow {
            name: name.into(),
            from: from.into(),
            to: to.into(),
            seats: 10,
            phase: Some("Booked".into()),
            deleting: false,
            ready: Some("True".into()),
            booking: Some((format!("{name}-booking"), Some(Timestamp::UNIX_EPOCH))),
        }
    }

    fn event(object: &str, reason: &str, message: &str) -> EventRow {
        EventRow {
            time: Some(Timestamp::UNIX_EPOCH),
            warning: false,
            object: object.into(),
            reason: reason.into(),
            message: message.into(),
        }
    }

    fn lines(snapshot: &Snapshot, caption: &Caption, height: usize) -> Vec<Line> {
        // A day and a bit after the epoch: the widest ages.
        let now = Timestamp::from_second(90_000).unwrap_or(Timestamp::UNIX_EPOCH);
        render(&header(), snapshot, caption, Duration::ZERO, now, height)
    }

    #[test]
    fn the_scripts_frames_fit_80_columns_without_cutting() {
        let snapshot = Snapshot {
            tickets: vec![
                ticket("ams-sfo", "AMS", "SFO"),
                ticket("lis-nrt", "LIS", "NRT"),
            ],
            caches: vec![CacheRow {
                name: "cache".into(),
                size: 100,
                ready: 100,
                available: Some("True".into()),
                progressing: Some("False".into()),
                degraded: Some("False".into()),
            }],
            events: vec![
                event("memcached/cache", "ProgressDeadlineExceeded", "long text"),
                event("flightticket/ams-sfo", "Rebooked", "booking updated"),
            ],
            ..Snapshot::default()
        };
        let captions = [
            Caption::starting(),
            Caption {
                stage: Stage::Step(scenario::STEPS),
                title: "x".repeat(200),
                command: Some("y".repeat(200)),
                watch: "word ".repeat(100),
                progress: Progress::Seen("z".repeat(200)),
            },
        ];
        for caption in &captions {
            for line in lines(&snapshot, caption, 200) {
                let text = line.render(WIDTH, false);
                assert_eq!(text, line.render(usize::MAX, false), "cut: {text:?}");
            }
        }
    }

    #[test]
    fn overlong_values_are_cut_to_80_columns_and_frames_to_the_height() {
        let snapshot = Snapshot {
            tickets: vec![ticket(
                "a-rather-long-ticket-name-indeed",
                "Amsterdam Schiphol",
                "San Francisco International",
            )],
            events: (0..20)
                .map(|_| {
                    event(
                        "memcached/some-namespace/cache",
                        "R".repeat(40).as_str(),
                        "m",
                    )
                })
                .collect(),
            ..Snapshot::default()
        };
        for height in [10, 24, 40, 200] {
            let lines = lines(&snapshot, &Caption::starting(), height);
            assert!(lines.len() <= height, "{} lines for {height}", lines.len());
            for line in &lines {
                let text = line.render(WIDTH, false);
                assert!(text.chars().count() <= WIDTH || line.whole, "{text:?}");
            }
        }
        let full = lines(&snapshot, &Caption::starting(), 200);
        let export = full.iter().map(|l| l.render(WIDTH, false));
        assert_eq!(
            export
                .filter(|l| l.contains("export KUBECONFIG=/tmp/opkit-demo-4194304/kubeconfig"))
                .count(),
            1,
            "the whole export line is shown"
        );
    }
}
