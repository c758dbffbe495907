//! Text from a peer, made safe for a log line: control characters (a newline that would start
//! a forged line, a carriage return, terminal escape sequences) and bidirectional overrides are
//! written as `\u{..}` escapes, so one value is always one run of visible text.

use std::fmt;

/// Displays `text` with its control characters escaped. Use it for every peer-controlled
/// string that reaches a log message or field (`tracing::warn!(tool = %LogSafe(name), ..)`).
///
/// # Examples
///
/// ```
/// use mcpl_core::log_safe::LogSafe;
///
/// let name = "x\nERROR forged line\u{1b}[2J";
/// assert_eq!(LogSafe(name).to_string(), r"x\u{a}ERROR forged line\u{1b}[2J");
/// assert_eq!(LogSafe("plain text, ünïcode").to_string(), "plain text, ünïcode");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct LogSafe<'a>(pub &'a str);

/// Whether `c` must not reach a log line as is.
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

impl fmt::Display for LogSafe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(unsafe_char) {
            f.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().unwrap_or_default();
            write!(f, "\\u{{{:x}}}", u32::from(c))?;
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_could_forge_or_hide_a_line() {
        for (raw, safe) in [
            ("a\r\nb", r"a\u{d}\u{a}b"),
            ("tab\there", r"tab\u{9}here"),
            ("\u{7f}\u{85}", r"\u{7f}\u{85}"),
            ("rtl\u{202e}txt", r"rtl\u{202e}txt"),
            ("", ""),
        ] {
            assert_eq!(LogSafe(raw).to_string(), safe);
        }
    }
}
