//! Attributes kept verbatim, in document order.
//!
//! XAIF carries meaning in attribute spellings that a typed field would
//! normalise away (`has_condition_value="true"` versus `"1"`, constants such as
//! `1.00000000000000000000e+00`) and front ends add attributes the schema does
//! not know (`lineNumber`, `feType`, annotations). Every element therefore
//! keeps its attributes as an ordered list of `(name, text)` pairs; typed
//! accessors on the model parse them on demand, and the validation gate checks
//! that the ones the engine interprets parse.

use compact_str::CompactString;

/// Where an element starts in its source file, as a byte offset.
///
/// Elements created by a transformation carry [`Span::NONE`]. The
/// [`SourceMap`](crate::SourceMap) turns a span into a line and column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span(pub u32);

impl Span {
    /// The span of an element that did not come from a file.
    pub const NONE: Span = Span(u32::MAX);

    /// Whether this span points into a file.
    pub fn is_known(self) -> bool {
        self != Span::NONE
    }
}

/// One attribute: its qualified name (as written, e.g. `xsi:schemaLocation`)
/// and its unescaped value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attr {
    /// The attribute name, including any namespace prefix.
    pub key: CompactString,
    /// The unescaped attribute value.
    pub value: CompactString,
}

/// The attributes of one element, in document order, plus where it started.
///
/// Equality ignores the span: two models are equal when their content is.
#[derive(Clone, Debug, Default)]
pub struct Attrs {
    list: Vec<Attr>,
    /// Where the element that owns these attributes starts.
    pub span: Span,
}

impl PartialEq for Attrs {
    fn eq(&self, other: &Self) -> bool {
        self.list == other.list
    }
}
impl Eq for Attrs {}

impl Attrs {
    /// No attributes, no source position: for elements built by a pass.
    pub fn new() -> Self {
        Attrs {
            list: Vec::new(),
            span: Span::NONE,
        }
    }

    /// No attributes yet, starting at `span`.
    pub fn at(span: Span) -> Self {
        Attrs {
            list: Vec::new(),
            span,
        }
    }

    /// Builds attributes from `(name, value)` pairs, in that order.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut attrs = Attrs::new();
        for (k, v) in pairs {
            attrs.push(k.as_ref(), v.as_ref());
        }
        attrs
    }

    /// Appends an attribute without checking for an existing one of that name
    /// (the reader uses this; XML forbids duplicates, which quick-xml reports).
    pub fn push(&mut self, key: &str, value: &str) {
        self.list.push(Attr {
            key: CompactString::from(key),
            value: CompactString::from(value),
        });
    }

    /// The value of attribute `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.list
            .iter()
            .find(|a| a.key == key)
            .map(|a| a.value.as_str())
    }

    /// Whether attribute `key` is present.
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `value`: in place when present (keeping the order),
    /// appended otherwise.
    pub fn set(&mut self, key: &str, value: impl AsRef<str>) {
        let value = value.as_ref();
        if let Some(a) = self.list.iter_mut().find(|a| a.key == key) {
            a.value = CompactString::from(value);
        } else {
            self.push(key, value);
        }
    }

    /// Builder form of [`Attrs::set`].
    pub fn with(mut self, key: &str, value: impl AsRef<str>) -> Self {
        self.set(key, value);
        self
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<CompactString> {
        let i = self.list.iter().position(|a| a.key == key)?;
        Some(self.list.remove(i).value)
    }

    /// All attributes in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Attr> + '_ {
        self.list.iter()
    }

    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are no attributes.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// An XSD boolean attribute (`true`/`false`/`1`/`0`), or `default` when
    /// absent or unparsable (the gate reports unparsable values).
    pub fn flag(&self, key: &str, default: bool) -> bool {
        self.get(key).and_then(parse_bool).unwrap_or(default)
    }

    /// An integer attribute, or `None` when absent or unparsable.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }
}

/// Parses an XSD boolean.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_keeps_position_and_appends_new_keys() {
        let mut a = Attrs::from_pairs([("a", "1"), ("b", "2")]);
        a.set("a", "3");
        a.set("c", "4");
        let keys: Vec<_> = a.iter().map(|x| x.key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(a.get("a"), Some("3"));
    }

    #[test]
    fn flags_accept_both_spellings() {
        let a = Attrs::from_pairs([("x", "true"), ("y", "0"), ("z", "maybe")]);
        assert!(a.flag("x", false));
        assert!(!a.flag("y", true));
        assert!(a.flag("z", true));
        assert!(!a.flag("missing", false));
    }

    #[test]
    fn equality_ignores_span() {
        let mut a = Attrs::from_pairs([("k", "v")]);
        let b = a.clone();
        a.span = Span(7);
        assert_eq!(a, b);
    }
}
