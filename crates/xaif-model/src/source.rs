//! Source positions.
//!
//! The IR stores only a byte offset per element ([`Span`]); the source map
//! keeps what is needed to turn it into a file name, line and column for
//! error messages, so the IR stays small and transformation results, which
//! have no source, need no positions.

use std::sync::Arc;

use crate::attrs::Span;
use crate::error::{ErrorKind, ModelError};

/// Maps spans of one input file to lines and columns.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    file: Option<Arc<str>>,
    line_starts: Vec<u32>,
}

impl SourceMap {
    /// A source map for `text`, read from `file` when given.
    pub fn new(file: Option<&str>, text: &[u8]) -> Self {
        let mut line_starts = vec![0u32];
        line_starts.extend(
            memchr::memchr_iter(b'\n', text).map(|i| u32::try_from(i + 1).unwrap_or(u32::MAX)),
        );
        SourceMap {
            file: file.map(Arc::from),
            line_starts,
        }
    }

    /// A source map for a model that was not read from text.
    pub fn none() -> Self {
        SourceMap::default()
    }

    /// The file name, if any.
    pub fn file(&self) -> Option<&Arc<str>> {
        self.file.as_ref()
    }

    /// 1-based line and column of `span`, or `(0, 0)` when unknown.
    pub fn locate(&self, span: Span) -> (u32, u32) {
        if !span.is_known() || self.line_starts.is_empty() {
            return (0, 0);
        }
        let line = match self.line_starts.binary_search(&span.0) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let column = span.0 - self.line_starts[line] + 1;
        (line as u32 + 1, column)
    }

    /// An error at `span` on `element`.
    pub fn error(&self, span: Span, element: &str, kind: ErrorKind) -> ModelError {
        let (line, column) = self.locate(span);
        ModelError {
            file: self.file.clone(),
            line,
            column,
            element: element.into(),
            kind,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_lines_and_columns() {
        let map = SourceMap::new(Some("f.xaif"), b"ab\ncd\n\nx");
        assert_eq!(map.locate(Span(0)), (1, 1));
        assert_eq!(map.locate(Span(1)), (1, 2));
        assert_eq!(map.locate(Span(3)), (2, 1));
        assert_eq!(map.locate(Span(7)), (4, 1));
        assert_eq!(map.locate(Span::NONE), (0, 0));
    }
}
