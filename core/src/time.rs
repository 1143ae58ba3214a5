//! Calendar dates and timestamps without a date-time dependency: the proleptic Gregorian calendar as day numbers
//! (days since 1970-01-01), after Howard Hinnant's `days_from_civil` / `civil_from_days`.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// A calendar date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    /// Year.
    pub y: i32,
    /// Month, 1..=12.
    pub m: u32,
    /// Day, 1..=31.
    pub d: u32,
}

impl Date {
    /// Days since 1970-01-01.
    pub fn days(self) -> i64 {
        let y = i64::from(self.y) - i64::from(self.m <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.m);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.d) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The date `days` after 1970-01-01.
    pub fn from_days(days: i64) -> Self {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let y = (yoe + era * 400 + i64::from(m <= 2)) as i32;
        Self { y, m, d }
    }

    /// Today (UTC).
    pub fn today() -> Self {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Self::from_days(secs.div_euclid(86_400))
    }

    /// Parses HUDOC's two date forms: ISO (`2024-03-15T00:00:00.0Z`, `2024-03-15`) and
    /// `15/03/2024 00:00:00`.
    pub fn parse_hudoc(s: &str) -> Option<Self> {
        let s = s.trim();
        let date_part = s.split(['T', ' ']).next()?;
        let (y, m, d) = if date_part.contains('/') {
            let mut it = date_part.split('/');
            let (d, m, y) = (it.next()?, it.next()?, it.next()?);
            if it.next().is_some() {
                return None;
            }
            (y, m, d)
        } else {
            let mut it = date_part.split('-');
            let (y, m, d) = (it.next()?, it.next()?, it.next()?);
            if it.next().is_some() {
                return None;
            }
            (y, m, d)
        };
        let date = Self {
            y: y.parse().ok()?,
            m: m.parse().ok()?,
            d: d.parse().ok()?,
        };
        // Reject 31/02 and friends: a valid date survives the round trip through day numbers.
        (date.m >= 1 && date.m <= 12 && date.d >= 1 && Self::from_days(date.days()) == date).then_some(date)
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.y, self.m, self.d)
    }
}

impl FromStr for Date {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::parse_hudoc(s).ok_or_else(|| Error::InvalidId {
            kind: "date",
            value: s.to_owned(),
            reason: "expected a calendar date YYYY-MM-DD",
        })
    }
}

fn now_parts() -> (Date, i64, u32) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as i64;
    (
        Date::from_days(secs.div_euclid(86_400)),
        secs.rem_euclid(86_400),
        now.subsec_millis(),
    )
}

/// Now as RFC 3339 UTC with seconds (`2026-11-22T12:34:56Z`).
pub fn now_rfc3339() -> String {
    let (date, s, _) = now_parts();
    format!("{date}T{:02}:{:02}:{:02}Z", s / 3600, s / 60 % 60, s % 60)
}

/// Now as RFC 3339 UTC with milliseconds (`2026-11-22T12:34:56.789Z`).
pub fn now_rfc3339_millis() -> String {
    let (date, s, ms) = now_parts();
    format!("{date}T{:02}:{:02}:{:02}.{ms:03}Z", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    //! Properties: day numbers round-trip; both HUDOC date forms parse; invalid dates are rejected.
    use super::*;

    #[test]
    fn round_trip_and_known_values() {
        assert_eq!(Date { y: 1970, m: 1, d: 1 }.days(), 0);
        assert_eq!(Date { y: 2000, m: 3, d: 1 }.days(), 11_017);
        for days in (-800_000..800_000).step_by(997) {
            assert_eq!(Date::from_days(days).days(), days);
        }
    }

    #[test]
    fn hudoc_forms() {
        let want = Date { y: 2024, m: 3, d: 15 };
        assert_eq!(Date::parse_hudoc("2024-03-15T00:00:00.0Z"), Some(want));
        assert_eq!(Date::parse_hudoc("15/03/2024 00:00:00"), Some(want));
        assert_eq!(Date::parse_hudoc("2024-03-15"), Some(want));
        for bad in [
            "",
            "2024-02-30",
            "31/02/2024 00:00:00",
            "2024-13-01",
            "yesterday",
            "1/2/3/4",
        ] {
            assert_eq!(Date::parse_hudoc(bad), None, "{bad}");
        }
    }
}
