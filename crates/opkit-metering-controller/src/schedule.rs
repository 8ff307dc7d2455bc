//! Which periods of a report are due: Metering's schedules (hourly, daily, weekly, monthly at a
//! given minute/hour/day, or cron), all turned into one cron expression plus a second offset
//! and read with the CronJob controller's cron parser, so there is one reading of schedules.
//!
//! A scheduled report's periods run back to back from `reportingStart` (or, without one, from
//! the schedule's first boundary after the controller first saw the report), each ending at
//! the next boundary, the last one cut at `reportingEnd` if set; a period is due once it has
//! ended. A report without a schedule has one period, `[reportingStart, reportingEnd)`, due
//! when it has ended or at once with `runImmediately`. Times are UTC.

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use opkit_controllers::cron;
use opkit_metering::Period;

use crate::api::{ReportPeriod, ReportSchedule, ReportSpec};

/// Most periods run in one reconcile (a report far behind catches up over several).
const MAX_PERIODS_PER_RUN: usize = 64;

/// A report spec that cannot be scheduled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A report without a schedule lacks a bound.
    #[error("a report without a schedule needs spec.reportingStart and spec.reportingEnd")]
    OneShotBounds,
    /// The period is empty.
    #[error("spec.reportingEnd ({end}) is not after spec.reportingStart ({start})")]
    EmptyPeriod {
        /// The start.
        start: Timestamp,
        /// The end.
        end: Timestamp,
    },
    /// The schedule is wrong.
    #[error("spec.schedule: {0}")]
    Schedule(String),
    /// `runImmediately` with a schedule.
    #[error("spec.runImmediately is for a report without a schedule")]
    RunImmediatelyScheduled,
}

/// What to do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The periods to run now, in order.
    pub due: Vec<Period>,
    /// The start of the first period not run yet (after `due`), if any remains.
    pub next_start: Option<Timestamp>,
    /// When that period ends (and falls due).
    pub next_end: Option<Timestamp>,
}

/// A schedule's boundaries.
pub struct Boundaries {
    cron: cron::Schedule,
    offset: SignedDuration,
}

impl Boundaries {
    /// Reads `schedule`.
    pub fn new(schedule: &ReportSchedule) -> Result<Boundaries, SpecError> {
        let missing = |what: &str| SpecError::Schedule(format!("period {what} needs {what}"));
        let (expression, second) = match schedule.period {
            ReportPeriod::Hourly => {
                let h = schedule.hourly.clone().unwrap_or_default();
                (format!("{} * * * *", h.minute), h.second)
            }
            ReportPeriod::Daily => {
                let d = schedule.daily.clone().unwrap_or_default();
                (format!("{} {} * * *", d.minute, d.hour), d.second)
            }
            ReportPeriod::Weekly => {
                let w = schedule.weekly.clone().unwrap_or_default();
                let day = w.day_of_week.as_deref().unwrap_or("sunday").to_lowercase();
                let short = day.get(..3).unwrap_or(&day);
                (format!("{} {} * * {short}", w.minute, w.hour), w.second)
            }
            ReportPeriod::Monthly => {
                let m = schedule.monthly.clone().unwrap_or_default();
                let day = m.day_of_month.unwrap_or(1);
                (format!("{} {} {day} * *", m.minute, m.hour), m.second)
            }
            ReportPeriod::Cron => {
                let c = schedule.cron.as_ref().ok_or_else(|| missing("cron"))?;
                (c.expression.clone(), 0)
            }
        };
        let cron =
            cron::Schedule::parse(&expression).map_err(|e| SpecError::Schedule(e.to_string()))?;
        Ok(Boundaries {
            cron,
            offset: SignedDuration::from_secs(i64::from(second)),
        })
    }

    /// The first boundary strictly after `t`.
    pub fn next(&self, t: Timestamp) -> Result<Timestamp, SpecError> {
        let none = || SpecError::Schedule(format!("no scheduled time after {t}"));
        let shifted = t.checked_sub(self.offset).map_err(|_| none())?;
        let next = self.cron.next(shifted, &TimeZone::UTC).ok_or_else(none)?;
        next.checked_add(self.offset).map_err(|_| none())
    }
}

/// The periods of `spec` due at `now`, given that everything before `reported` (the status'
/// `lastReportTime`) has run.
pub fn plan(
    spec: &ReportSpec,
    reported: Option<Timestamp>,
    now: Timestamp,
) -> Result<Plan, SpecError> {
    let start = spec.reporting_start.as_ref().map(|t| t.0);
    let end = spec.reporting_end.as_ref().map(|t| t.0);
    if let (Some(start), Some(end)) = (start, end)
        && end <= start
    {
        return Err(SpecError::EmptyPeriod { start, end });
    }
    let Some(schedule) = &spec.schedule else {
        let (Some(start), Some(end)) = (start, end) else {
            return Err(SpecError::OneShotBounds);
        };
        if reported.is_some_and(|r| r >= end) {
            return Ok(Plan {
                due: Vec::new(),
                next_start: None,
                next_end: None,
            });
        }
        let ready = spec.run_immediately || now >= end;
        return Ok(Plan {
            due: if ready {
                vec![Period { start, end }]
            } else {
                Vec::new()
            },
            next_start: (!ready).then_some(start),
            next_end: (!ready).then_some(end),
        });
    };
    if spec.run_immediately {
        return Err(SpecError::RunImmediatelyScheduled);
    }
    let boundaries = Boundaries::new(schedule)?;
    let mut cursor = match (reported, start) {
        (Some(r), _) => r,
        (None, Some(s)) => s,
        (None, None) => boundaries.next(now)?,
    };
    let mut due = Vec::new();
    loop {
        if end.is_some_and(|e| cursor >= e) {
            return Ok(Plan {
                due,
                next_start: None,
                next_end: None,
            });
        }
        let mut period_end = boundaries.next(cursor)?;
        if let Some(e) = end {
            period_end = period_end.min(e);
        }
        if period_end > now || due.len() == MAX_PERIODS_PER_RUN {
            return Ok(Plan {
                due,
                next_start: Some(cursor),
                next_end: Some(period_end),
            });
        }
        due.push(Period {
            start: cursor,
            end: period_end,
        });
        cursor = period_end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Cron, Daily, ReportSchedule};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn hourly_from(start: &str) -> ReportSpec {
        ReportSpec {
            query: "q".into(),
            reporting_start: Some(Time(at(start))),
            schedule: Some(ReportSchedule::default()),
            ..ReportSpec::default()
        }
    }

    #[test]
    fn an_hourly_report_runs_each_ended_hour_once_and_cuts_an_unaligned_start() {
        let spec = hourly_from("2030-01-01T00:30:00Z");
        let plan = plan(&spec, None, at("2030-01-01T03:10:00Z")).unwrap();
        let starts: Vec<String> = plan.due.iter().map(|p| p.start.to_string()).collect();
        assert_eq!(
            starts,
            [
                "2030-01-01T00:30:00Z",
                "2030-01-01T01:00:00Z",
                "2030-01-01T02:00:00Z"
            ]
        );
        assert_eq!(plan.due[2].end, at("2030-01-01T03:00:00Z"));
        assert_eq!(plan.next_end, Some(at("2030-01-01T04:00:00Z")));
        let again = super::plan(
            &spec,
            Some(at("2030-01-01T03:00:00Z")),
            at("2030-01-01T03:10:00Z"),
        )
        .unwrap();
        assert!(again.due.is_empty());
    }

    #[test]
    fn daily_and_cron_schedules_and_bad_specs() {
        let mut spec = hourly_from("2030-01-01T00:00:00Z");
        spec.schedule = Some(ReportSchedule {
            period: ReportPeriod::Daily,
            daily: Some(Daily {
                hour: 6,
                minute: 0,
                second: 30,
            }),
            ..ReportSchedule::default()
        });
        spec.reporting_end = Some(Time(at("2030-01-02T12:00:00Z")));
        let p = plan(&spec, None, at("2030-01-03T00:00:00Z")).unwrap();
        let ends: Vec<String> = p.due.iter().map(|p| p.end.to_string()).collect();
        assert_eq!(
            ends,
            [
                "2030-01-01T06:00:30Z",
                "2030-01-02T06:00:30Z",
                "2030-01-02T12:00:00Z"
            ]
        );
        assert_eq!(p.next_end, None);
        spec.schedule = Some(ReportSchedule {
            period: ReportPeriod::Cron,
            cron: Some(Cron {
                expression: "not cron".into(),
            }),
            ..ReportSchedule::default()
        });
        let err = plan(&spec, None, at("2030-01-03T00:00:00Z")).unwrap_err();
        assert!(err.to_string().starts_with("spec.schedule: "), "{err}");
        let one_shot = ReportSpec {
            query: "q".into(),
            reporting_start: Some(Time(at("2030-01-01T00:00:00Z"))),
            ..ReportSpec::default()
        };
        assert_eq!(
            plan(&one_shot, None, at("2030-01-01T00:00:00Z")),
            Err(SpecError::OneShotBounds)
        );
    }

    #[test]
    fn a_one_shot_report_waits_for_its_end_unless_run_immediately() {
        let mut spec = ReportSpec {
            query: "q".into(),
            reporting_start: Some(Time(at("2030-01-01T00:00:00Z"))),
            reporting_end: Some(Time(at("2030-01-01T01:00:00Z"))),
            ..ReportSpec::default()
        };
        let early = at("2030-01-01T00:10:00Z");
        assert!(plan(&spec, None, early).unwrap().due.is_empty());
        spec.run_immediately = true;
        assert_eq!(plan(&spec, None, early).unwrap().due.len(), 1);
        let done = plan(&spec, Some(at("2030-01-01T01:00:00Z")), early).unwrap();
        assert!(done.due.is_empty() && done.next_end.is_none());
    }
}
