//! Write amplification of a load: bytes written to the device over the bytes of the keys and
//! values the user wrote, from the start of the timed part to the end of the settle.
//!
//! The device's own counters are the figure, because they count what reached the device:
//! on a 1 M-key fillrandom `/proc/self/io` gave Cellar 0.57 where the device saw 0.49 (the
//! bytes of its three SSTs; the excess is most likely pages of the mapped WAL, the only other
//! file the fill writes), while at 10 M keys the two agree. The device counts every process:
//! the figure is only as clean as the machine is quiet, which a benchmark run needs anyway.
//! The process's count is kept beside it.

use std::path::{Path, PathBuf};

use crate::procfs;

/// Counters taken as a load starts.
pub struct WriteCounters {
    dir: PathBuf,
    process: Option<procfs::IoCounters>,
    device: Option<u64>,
}

/// The load's write amplification, by both counts.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteAmp {
    /// The device's figure where it could be read, else the process's.
    pub write_amp: Option<f64>,
    /// "device" or "process": where `write_amp` came from ("" when neither could be read).
    pub source: &'static str,
    /// `/proc/self/io`: bytes dirtied by this process, minus those cancelled by a truncate.
    pub process_write_amp: Option<f64>,
}

impl WriteCounters {
    /// Syncs first, so that writes of what ran before (an earlier phase, a deleted database)
    /// are on the device before its count starts.
    pub fn start(dir: &Path) -> Self {
        procfs::sync_all();
        WriteCounters {
            dir: dir.to_path_buf(),
            process: procfs::io_counters(),
            device: procfs::device_bytes_written(dir),
        }
    }

    /// Syncs, so that what the load left in the page cache is on the device and counted,
    /// then divides both counts by `user_bytes`.
    pub fn finish(&self, user_bytes: u64) -> WriteAmp {
        procfs::sync_all();
        let device = self
            .device
            .zip(procfs::device_bytes_written(&self.dir))
            .map(|(a, b)| b.saturating_sub(a));
        let process = self
            .process
            .zip(procfs::io_counters())
            .map(|(a, b)| a.device_bytes_written_until(&b));
        amplification(device, process, user_bytes)
    }
}

fn amplification(device: Option<u64>, process: Option<u64>, user_bytes: u64) -> WriteAmp {
    let ratio = |bytes: u64| bytes as f64 / user_bytes.max(1) as f64;
    let (write_amp, source) = match (device, process) {
        (Some(d), _) => (Some(ratio(d)), "device"),
        (None, Some(p)) => (Some(ratio(p)), "process"),
        (None, None) => (None, ""),
    };
    WriteAmp {
        write_amp,
        source,
        process_write_amp: process.map(ratio),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_count_wins_and_the_process_count_stays_beside_it() {
        let both = amplification(Some(50), Some(70), 100);
        assert_eq!(both.write_amp, Some(0.5));
        assert_eq!(both.source, "device");
        assert_eq!(both.process_write_amp, Some(0.7));
        let process_only = amplification(None, Some(70), 100);
        assert_eq!(process_only.write_amp, Some(0.7));
        assert_eq!(process_only.source, "process");
        assert_eq!(amplification(None, None, 100).write_amp, None);
    }

    #[test]
    fn a_synced_file_counts_on_the_device_holding_it() {
        // Whatever else writes to this device meanwhile only adds to the count.
        let d = tempfile::tempdir().expect("tempdir");
        let counters = WriteCounters::start(d.path());
        if counters.device.is_none() {
            eprintln!("skipped: the temporary directory is not on a block device");
            return;
        }
        std::fs::write(d.path().join("f"), vec![7u8; 4 << 20]).expect("write");
        let amp = counters.finish(1 << 20);
        assert_eq!(amp.source, "device");
        assert!(amp.write_amp.expect("device count") >= 4.0, "{amp:?}");
    }
}
