//! Timestamps: nanoseconds since 1970-01-01 00:00:00 UTC in a `u64`, written in HQL as
//! `'YYYY-MM-DD HH:MM:SS[.fraction]'` (UTC, 1 to 9 fraction digits). The range is therefore
//! 1970-01-01 00:00:00 to 2554-07-21 23:34:33.709551615.

const NANOS_PER_SECOND: u64 = 1_000_000_000;
const SECONDS_PER_DAY: u64 = 86_400;

/// Parses `'YYYY-MM-DD HH:MM:SS[.fraction]'` (without the quotes) into nanoseconds since
/// the epoch. The error says what is wrong, to be used after "expected".
pub fn parse_timestamp(text: &str) -> Result<u64, String> {
    let b = text.as_bytes();
    let shape_ok = b.len() >= 19
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b' '
        && b[13] == b':'
        && b[16] == b':'
        && [0..4, 5..7, 8..10, 11..13, 14..16, 17..19]
            .into_iter()
            .all(|r| b[r].iter().all(u8::is_ascii_digit))
        && (b.len() == 19
            || (b[19] == b'.'
                && (21..=29).contains(&b.len())
                && b[20..].iter().all(u8::is_ascii_digit)));
    if !shape_ok {
        return Err(
            "a timestamp 'YYYY-MM-DD HH:MM:SS[.fraction]' (UTC, up to 9 fraction \
                    digits) or an integer of nanoseconds since 1970"
                .to_string(),
        );
    }
    let num = |from: usize, to: usize| -> u64 {
        b[from..to]
            .iter()
            .fold(0, |n, &d| n * 10 + u64::from(d - b'0'))
    };
    let (year, month, day) = (num(0, 4), num(5, 7), num(8, 10));
    let (hour, minute, second) = (num(11, 13), num(14, 16), num(17, 19));
    if year < 1970 {
        return Err("a timestamp from 1970-01-01 00:00:00 on".to_string());
    }
    if !(1..=12).contains(&month) {
        return Err("a month from 01 to 12 in the timestamp".to_string());
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(format!(
            "a day from 01 to {} in the timestamp's month",
            days_in_month(year, month)
        ));
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err("a time from 00:00:00 to 23:59:59 in the timestamp".to_string());
    }
    let fraction_nanos = if b.len() > 19 {
        let digits = b.len() - 20;
        num(20, b.len()) * 10u64.pow(9 - digits as u32)
    } else {
        0
    };
    let days = days_from_civil(year, month, day);
    days.checked_mul(SECONDS_PER_DAY)
        .and_then(|s| s.checked_add(hour * 3600 + minute * 60 + second))
        .and_then(|s| s.checked_mul(NANOS_PER_SECOND))
        .and_then(|n| n.checked_add(fraction_nanos))
        .ok_or_else(|| "a timestamp up to 2554-07-21 23:34:33.709551615".to_string())
}

/// `YYYY-MM-DD HH:MM:SS.nnnnnnnnn` (always 9 fraction digits: the output format).
pub fn format_timestamp(nanos: u64) -> String {
    let (date_time, fraction) = split(nanos);
    format!("{date_time}.{fraction:09}")
}

/// `YYYY-MM-DD HH:MM:SS[.fraction]` with no trailing zeros in the fraction (canonical HQL).
pub fn format_timestamp_short(nanos: u64) -> String {
    let (date_time, fraction) = split(nanos);
    if fraction == 0 {
        return date_time;
    }
    let digits = format!("{fraction:09}");
    format!("{date_time}.{}", digits.trim_end_matches('0'))
}

fn split(nanos: u64) -> (String, u64) {
    let seconds = nanos / NANOS_PER_SECOND;
    let (days, in_day) = (seconds / SECONDS_PER_DAY, seconds % SECONDS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let text = format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        in_day / 3600,
        in_day / 60 % 60,
        in_day % 60
    );
    (text, nanos % NANOS_PER_SECOND)
}

fn is_leap(year: u64) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a date from 1970 on (H. Hinnant's `days_from_civil`, with March
/// as the first month so that the leap day ends the year).
/// REQUIRES: year >= 1970, 1 <= month <= 12, 1 <= day <= 31.
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let y = if month <= 2 { year - 1 } else { year };
    let (era, year_of_era) = (y / 400, y % 400);
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    // 719_468 days from 0000-03-01 to 1970-01-01.
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let (era, day_of_era) = (z / 146_097, z % 146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_known_values() {
        assert_eq!(parse_timestamp("1970-01-01 00:00:00"), Ok(0));
        assert_eq!(
            parse_timestamp("2006-03-01 07:17:12"),
            Ok(1_141_197_432 * NANOS_PER_SECOND)
        );
        assert_eq!(
            parse_timestamp("2024-02-29 23:59:59.5"),
            Ok(1_709_251_199 * NANOS_PER_SECOND + 500_000_000)
        );
        assert_eq!(
            parse_timestamp("2554-07-21 23:34:33.709551615"),
            Ok(u64::MAX)
        );
        assert_eq!(format_timestamp(u64::MAX), "2554-07-21 23:34:33.709551615");
        assert_eq!(format_timestamp(0), "1970-01-01 00:00:00.000000000");
        assert_eq!(
            format_timestamp_short(1_500_000),
            "1970-01-01 00:00:00.0015"
        );
    }

    #[test]
    fn timestamp_rejects_bad_dates_and_ranges() {
        for bad in [
            "2554-07-21 23:34:33.709551616",
            "2554-07-22 00:00:00",
            "1969-12-31 23:59:59",
            "2023-02-29 00:00:00",
            "2024-13-01 00:00:00",
            "2024-01-01 24:00:00",
            "2024-01-01 00:00:00.",
            "2024-01-01 00:00:00.1234567890",
            "2024-01-01T00:00:00",
            "2024-1-01 00:00:00",
            "",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn timestamp_round_trips_across_days() {
        let mut nanos = 0u64;
        while let Some(next) = nanos.checked_add(86_399_999_999_937) {
            assert_eq!(parse_timestamp(&format_timestamp(nanos)), Ok(nanos));
            assert_eq!(parse_timestamp(&format_timestamp_short(nanos)), Ok(nanos));
            nanos = next;
        }
    }
}
