//! Small inline SVG pictures for the status page, and the text formatting they share.

use std::fmt::Write;
use std::time::Duration;

/// One LSM level of a table: its files and bytes, all families together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelBar {
    pub files: usize,
    pub bytes: u64,
}

const BAR_AREA: f64 = 260.0;
const LABEL_WIDTH: f64 = 34.0;
const ROW_HEIGHT: f64 = 22.0;

/// Horizontal bars, one per level, lengths proportional to the level's bytes (so the
/// usual LSM shape shows: small L0, each level larger than the one above).
pub fn level_bars(levels: &[LevelBar]) -> String {
    let max = levels.iter().map(|l| l.bytes).max().unwrap_or(0).max(1) as f64;
    let height = ROW_HEIGHT * levels.len().max(1) as f64 + 4.0;
    let width = LABEL_WIDTH + BAR_AREA + 150.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="levels" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="LSM levels">"#
    );
    for (i, level) in levels.iter().enumerate() {
        let y = 2.0 + ROW_HEIGHT * i as f64;
        let w = if level.files == 0 {
            0.0
        } else {
            (BAR_AREA * level.bytes as f64 / max).max(3.0)
        };
        let _ = write!(
            s,
            r##"<text x="0" y="{ty}" class="lvl">L{i}</text><rect x="{LABEL_WIDTH}" y="{y}" width="{BAR_AREA}" height="16" rx="3" fill="#eef1f5"/><rect x="{LABEL_WIDTH}" y="{y}" width="{w:.1}" height="16" rx="3" fill="{color}"><title>L{i}: {files} files, {bytes}</title></rect><text x="{tx}" y="{ty}" class="lvlinfo">{files} {noun} · {bytes}</text>"##,
            ty = y + 12.5,
            color = level_color(i),
            files = level.files,
            noun = if level.files == 1 { "file" } else { "files" },
            bytes = human_bytes(level.bytes),
            tx = LABEL_WIDTH + BAR_AREA + 8.0,
        );
    }
    s.push_str("</svg>");
    s
}

fn level_color(level: usize) -> &'static str {
    const COLORS: [&str; 7] = [
        "#e4572e", "#f3a712", "#a8c686", "#3fa7d6", "#2e86ab", "#5b5f97", "#7d5ba6",
    ];
    COLORS[level.min(COLORS.len() - 1)]
}

/// A horizontal bar for a table cell, `fraction` of its width filled.
pub fn meter(fraction: f64) -> String {
    let w = (fraction.clamp(0.0, 1.0) * 80.0).max(if fraction > 0.0 { 1.0 } else { 0.0 });
    format!(
        r##"<svg class="meter" width="80" height="8" viewBox="0 0 80 8"><rect width="80" height="8" rx="2" fill="#eef1f5"/><rect width="{w:.1}" height="8" rx="2" fill="#3fa7d6"/></svg>"##
    )
}

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// `1234567` as `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn human_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

pub fn human_uptime(d: Duration) -> String {
    let s = d.as_secs();
    let (days, h, m, sec) = (s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
    if days > 0 {
        format!("{days}d {h}h {m}m")
    } else if h > 0 {
        format!("{h}h {m}m {sec}s")
    } else if m > 0 {
        format!("{m}m {sec}s")
    } else {
        format!("{sec}s")
    }
}

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(grouped(12), "12");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
        assert_eq!(human_uptime(Duration::from_secs(3725)), "1h 2m 5s");
    }

    #[test]
    fn level_bars_scale_to_the_largest_level() {
        let svg = level_bars(&[
            LevelBar {
                files: 2,
                bytes: 100,
            },
            LevelBar { files: 0, bytes: 0 },
            LevelBar {
                files: 1,
                bytes: 400,
            },
        ]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains(r##"width="260.0" height="16" rx="3" fill="#a8c686""##));
        assert!(svg.contains(r#"width="65.0""#));
        assert!(svg.contains("2 files · 100 B"));
    }
}
