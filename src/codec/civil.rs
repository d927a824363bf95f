//! UTC date and time of a count of seconds since 1970-01-01, for the tools that print times
//! (record timestamps, capture times, the proxy's logs).

use core::fmt;

/// A UTC date and time to the second; `Display` writes RFC 3339's `2026-12-03T04:05:06`
/// (callers add fractions and the `Z`).
pub(crate) struct Utc {
    year: i64,
    month: i64,
    day: i64,
    second_of_day: i64,
}

impl Utc {
    /// The date and time `secs` seconds after 1970-01-01T00:00:00 (before it if negative).
    pub(crate) fn from_unix(secs: i64) -> Utc {
        let days = secs.div_euclid(86_400);
        // The proleptic Gregorian calendar, in 400-year eras of 146,097 days counted from
        // 0000-03-01, so that the leap day ends a year.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        Utc { year, month, day, second_of_day: secs.rem_euclid(86_400) }
    }
}

impl fmt::Display for Utc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.second_of_day;
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year,
            self.month,
            self.day,
            s / 3600,
            s / 60 % 60,
            s % 60
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Utc;
    use alloc::string::ToString;

    #[test]
    fn dates() {
        assert_eq!(Utc::from_unix(0).to_string(), "1970-01-01T00:00:00");
        assert_eq!(Utc::from_unix(951_782_400).to_string(), "2000-02-29T00:00:00");
        assert_eq!(Utc::from_unix(1_796_270_706).to_string(), "2026-12-03T04:05:06");
        assert_eq!(Utc::from_unix(-1).to_string(), "1969-12-31T23:59:59");
    }
}
