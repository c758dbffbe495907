//! Unguessable ids and wall-clock timestamps, shared by tasks and MCPL.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// The last millisecond `humantime` writes (of the year 9999).
const LAST: Duration = Duration::from_millis(253_402_300_799_999);

/// `time` as an ISO 8601 UTC timestamp with milliseconds (`2026-07-28T12:34:56.789Z`); a time
/// before 1970 is written as 1970's first millisecond, one past 9999 as 9999's last.
pub(crate) fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default().min(LAST);
    humantime::format_rfc3339_millis(UNIX_EPOCH + since).to_string()
}

/// The time an RFC 3339 UTC timestamp names (`2026-07-28T12:34:56.789Z`, the fraction optional,
/// `Z` or `+00:00`), as [`iso8601`] writes it; `None` for anything else, a day its month does
/// not have included.
pub(crate) fn parse_iso8601(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_785_242_096_789);
        assert_eq!(iso8601(t), "2026-07-28T12:34:56.789Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
        let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 2);
        assert_eq!(iso8601(far), "9999-12-31T23:59:59.999Z");
        let before = UNIX_EPOCH - Duration::from_secs(86_400);
        assert_eq!(iso8601(before), "1970-01-01T00:00:00.000Z");
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
            "2026-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-00-10T00:00:00Z",
            "2026-07-28T12:34:56.7",
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
