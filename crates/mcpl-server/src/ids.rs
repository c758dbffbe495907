//! Unguessable ids and wall-clock timestamps, shared by tasks and MCPL.

use std::time::{SystemTime, UNIX_EPOCH};

/// 128 random bits from the OS CSPRNG, hex. There is no fallback: an id someone could guess
/// (a task id is a capability to read the task's result) is worse than no id, so when the OS
/// source fails the caller fails too, as session ids do.
pub(crate) fn random_hex() -> Result<String, getrandom::Error> {
    random_hex_from(getrandom::fill)
}

fn random_hex_from(
    fill: impl FnOnce(&mut [u8]) -> Result<(), getrandom::Error>,
) -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `time` as an ISO 8601 UTC timestamp with milliseconds (`2026-07-28T12:34:56.789Z`).
pub(crate) fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// The time an ISO 8601 UTC timestamp as [`iso8601`] writes it names (`2026-07-28T12:34:56Z`,
/// milliseconds optional); `None` for anything else.
pub(crate) fn parse_iso8601(text: &str) -> Option<SystemTime> {
    let number = |s: &str| -> Option<u64> {
        s.bytes().all(|b| b.is_ascii_digit()).then(|| s.parse().ok()).flatten()
    };
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let (time, millis) = match time.split_once('.') {
        Some((time, millis)) if millis.len() == 3 => (time, number(millis)?),
        Some(_) => return None,
        None => (time, 0),
    };
    let mut date = date.split('-');
    let (year, month, day) = (date.next()?, date.next()?, date.next()?);
    let mut time = time.split(':');
    let (hour, minute, second) = (time.next()?, time.next()?, time.next()?);
    if date.next().is_some() || time.next().is_some() || year.len() != 4 {
        return None;
    }
    let (year, month, day) = (number(year)?, number(month)?, number(day)?);
    let (hour, minute, second) = (number(hour)?, number(minute)?, number(second)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    // A civil date to days since 1970-01-01 (H. Hinnant's algorithm, the inverse of the one
    // above).
    let (year, month, day) =
        (i64::try_from(year).ok()?, i64::try_from(month).ok()?, i64::try_from(day).ok()?);
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = u64::try_from(era * 146_097 + doe - 719_468).ok()?;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second;
    UNIX_EPOCH
        .checked_add(std::time::Duration::from_millis(secs.checked_mul(1000)?.checked_add(millis)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_785_242_096_789);
        assert_eq!(iso8601(t), "2026-07-28T12:34:56.789Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn timestamps_read_back() {
        for ms in [0, 1_785_242_096_789, 951_782_400_000, 4_102_444_799_999] {
            let t = UNIX_EPOCH + Duration::from_millis(ms);
            assert_eq!(parse_iso8601(&iso8601(t)), Some(t), "{ms}");
        }
        assert_eq!(
            parse_iso8601("2026-07-28T12:34:56Z"),
            Some(UNIX_EPOCH + Duration::from_secs(1_785_242_096))
        );
        for bad in [
            "",
            "2026-07-28",
            "2026-07-28T12:34:56",
            "2026-13-01T00:00:00Z",
            "2026-07-28T12:34:56.7Z",
            "+026-07-28T12:34:56Z",
            "2026-07-28T12:34:56.789+01:00",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn random_hex_is_128_bits_and_differs() {
        let (a, b) = (random_hex().unwrap(), random_hex().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    #[test]
    fn a_failing_random_source_is_an_error_not_a_guessable_id() {
        let failed = random_hex_from(|_| Err(getrandom::Error::UNSUPPORTED));
        assert_eq!(failed, Err(getrandom::Error::UNSUPPORTED));
    }
}
