//! Enums whose set of values is open: known values get a variant, anything else is kept.

/// Defines a string enum that decodes unknown values into `Other(String)` instead of failing
/// (the spec's open-ended enums: `effect`, `mode`, `finishReason`, ...).
macro_rules! open_enum {
    (
        $(#[$doc:meta])* $name:ident {
            $($(#[$vdoc:meta])* $variant:ident = $value:literal,)+
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
            /// A value this SDK does not know, kept as received.
            Other(String),
        }

        impl $name {
            /// The value on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $value,)+
                    $name::Other(s) => s,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $($value => $name::$variant,)+
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::types::serde_util::read_str(d, |s| {
                    Ok::<_, std::convert::Infallible>($name::from(s))
                })
            }
        }
    };
}

pub(crate) use open_enum;
