//! cron
