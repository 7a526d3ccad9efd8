//! The standard `process_*` metrics every Prometheus client library exports, read from
//! `/proc/self` at each scrape (Linux; elsewhere they are left out).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Reads the process's own figures when scraped.
#[derive(Debug, Default)]
pub(super) struct ProcessCollector;

/// What `/proc/self` says about this process.
#[derive(Debug, Default, PartialEq)]
struct Figures {
    cpu_seconds: f64,
    resident_bytes: f64,
    virtual_bytes: f64,
    start_time_seconds: f64,
    threads: f64,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(figures) = read() else {
            return Ok(());
        };
        let counter = ConstCounter::new(figures.cpu_seconds);
        counter.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            counter.metric_type(),
        )?)?;
        let mut gauge = |name: &str, help: &str, value: f64| {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)
        };
        gauge(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            figures.resident_bytes,
        )?;
        gauge(
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            figures.virtual_bytes,
        )?;
        gauge(
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds",
            figures.start_time_seconds,
        )?;
        gauge(
            "process_threads",
            "Number of OS threads in the process",
            figures.threads,
        )?;
        if let Some(open) = figures.open_fds {
            gauge("process_open_fds", "Number of open file descriptors", open)?;
        }
        if let Some(max) = figures.max_fds {
            gauge(
                "process_max_fds",
                "Maximum number of open file descriptors",
                max,
            )?;
        }
        Ok(())
    }
}

fn read() -> Option<Figures> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let boot_time = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("btime ")?.trim().parse::<f64>().ok())?;
    let mut figures = parse_stat(&stat, boot_time, clock_ticks_per_second(), page_size())?;
    figures.open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|entries| entries.count() as f64);
    figures.max_fds = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| max_open_files(&limits));
    Some(figures)
}

fn clock_ticks_per_second() -> f64 {
    rustix::param::clock_ticks_per_second() as f64
}

fn page_size() -> f64 {
    rustix::param::page_size() as f64
}

/// Reads `/proc/self/stat` (proc(5)). The command name, in parentheses, may hold spaces and
/// parentheses itself: fields are counted from the last `)`.
fn parse_stat(stat: &str, boot_time: f64, ticks: f64, page: f64) -> Option<Figures> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the name.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |number: usize| -> Option<f64> { fields.get(number - 3)?.parse().ok() };
    Some(Figures {
        cpu_seconds: (field(14)? + field(15)?) / ticks,
        threads: field(20)?,
        start_time_seconds: boot_time + field(22)? / ticks,
        virtual_bytes: field(23)?,
        resident_bytes: field(24)? * page,
        open_fds: None,
        max_fds: None,
    })
}

/// The soft limit on open files from `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<f64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "a test stops at the first thing that is not as expected"
    )]

    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let stat = "4242 (odd) name) S 1 4242 4242 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 7 0 \
                    1000 8192000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let figures = parse_stat(stat, 1_700_000_000.0, 100.0, 4096.0).unwrap();
        assert_eq!(figures.cpu_seconds, 3.0);
        assert_eq!(figures.threads, 7.0);
        assert_eq!(figures.start_time_seconds, 1_700_000_010.0);
        assert_eq!(figures.virtual_bytes, 8_192_000.0);
        assert_eq!(figures.resident_bytes, 300.0 * 4096.0);
    }

    #[test]
    fn the_soft_limit_on_open_files_is_read() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(max_open_files(limits), Some(1024.0));
    }

    #[test]
    fn this_process_reads_as_alive() {
        let figures = read().unwrap();
        assert!(figures.resident_bytes > 0.0);
        assert!(figures.threads >= 1.0);
        assert!(figures.open_fds.unwrap() >= 3.0);
    }
}
