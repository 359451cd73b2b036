//! The reference engine's forms of xaifb's outputs, for tests and
//! campaigns that must run the kinds of XAIF the reference engine writes
//! without the reference engine itself.
//!
//! xaifb marks what its output cannot otherwise tell: a type-change
//! output's `Entry` says `type_change`, a `-f` adjoint's placeholder 6
//! says `cp_entry_store_order`. The reference engine writes neither: its
//! type-change output is a plain output without derivative code, and its
//! `-f` output differs from its output without `-f` only in the order of
//! each routine's argument restores (placeholder 6), which follow the
//! stores (placeholder 4) instead of their reverse. [`unmarked`] takes the
//! marks out; [`restores_reordered`] reorders the restores, as `-f` does
//! ([`store_order_form`]) or as no engine does (an edited file).

/// xaifb's mark of type-change output (`xaif_model::TYPE_CHANGE_ENTRY`).
pub const TYPE_CHANGE_MARK: &str = "type_change";

/// xaifb's mark of restores in store order
/// (`xaif_model::STORE_ORDER_ENTRY`).
pub const STORE_ORDER_MARK: &str = "cp_entry_store_order";

/// `text` without xaifb's marks: the `Entry` of a store-order restore is a
/// plain `cp_entry`, and `type_change` leaves every annotation.
pub fn unmarked(text: &str) -> String {
    let text = text.replace(
        &format!("annotation=\"{STORE_ORDER_MARK}\""),
        "annotation=\"cp_entry\"",
    );
    text.replace(
        &format!("annotation=\"{TYPE_CHANGE_MARK}\""),
        "annotation=\"\"",
    )
    .replace(&format!(" {TYPE_CHANGE_MARK}\""), "\"")
    .replace(&format!("\"{TYPE_CHANGE_MARK} "), "\"")
}

/// `text` with the argument restores of every routine's placeholder 6
/// (the `cp_arg_restore_*` calls, in document order) put in the order
/// `reorder` gives them; everything else stays as it is. `None` when no
/// placeholder 6 holds a restore.
pub fn restores_reordered(text: &str, reorder: &dyn Fn(&mut Vec<String>)) -> Option<String> {
    const OPEN: &str = "<xaif:Replacement placeholder=\"6\"";
    const CLOSE: &str = "</xaif:Replacement>";
    const CALL: &str = "<xaif:InlinableSubroutineCall ";
    const CALL_END: &str = "</xaif:InlinableSubroutineCall>";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut any = false;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let block_len = rest[at..]
            .find(CLOSE)
            .map_or(rest.len() - at, |e| e + CLOSE.len());
        let block = &rest[at..at + block_len];
        // The restore calls (spans in the block) and the text between.
        let mut spans = Vec::new();
        let mut from = 0;
        while let Some(c) = block[from..].find(CALL) {
            let start = from + c;
            let Some(e) = block[start..].find(CALL_END) else {
                break;
            };
            let end = start + e + CALL_END.len();
            if block[start..end].contains("subroutine_name=\"cp_arg_restore_") {
                spans.push((start, end));
            }
            from = end;
        }
        if spans.is_empty() {
            out.push_str(block);
        } else {
            any = true;
            let mut calls: Vec<String> = spans
                .iter()
                .map(|&(s, e)| block[s..e].to_string())
                .collect();
            reorder(&mut calls);
            let mut last = 0;
            for (&(s, e), call) in spans.iter().zip(&calls) {
                out.push_str(&block[last..s]);
                out.push_str(call);
                last = e;
            }
            out.push_str(&block[last..]);
        }
        rest = &rest[at + block_len..];
    }
    out.push_str(rest);
    any.then_some(out)
}

/// The reference engine's `-f` form of an unmarked adjoint output written
/// without `-f`: every routine's restores in the order of its stores (the
/// reverse of theirs).
pub fn store_order_form(text: &str) -> Option<String> {
    restores_reordered(text, &|calls| calls.reverse())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restores_are_reordered_within_each_placeholder_6() {
        let call = |n: &str| {
            format!("<xaif:InlinableSubroutineCall subroutine_name=\"cp_arg_restore_{n}\" statement_id=\"{n}\"></xaif:InlinableSubroutineCall>")
        };
        let store = "<xaif:InlinableSubroutineCall subroutine_name=\"cp_arg_store_a\" statement_id=\"s\"></xaif:InlinableSubroutineCall>";
        let text = format!(
            "<xaif:Replacement placeholder=\"4\">{store}</xaif:Replacement><xaif:Replacement placeholder=\"6\">{}\n{}\n{}</xaif:Replacement><xaif:Replacement placeholder=\"6\">{}</xaif:Replacement>",
            call("a"),
            call("b"),
            call("c"),
            call("d")
        );
        let reversed = store_order_form(&text).unwrap();
        assert_eq!(
            reversed,
            format!(
                "<xaif:Replacement placeholder=\"4\">{store}</xaif:Replacement><xaif:Replacement placeholder=\"6\">{}\n{}\n{}</xaif:Replacement><xaif:Replacement placeholder=\"6\">{}</xaif:Replacement>",
                call("c"),
                call("b"),
                call("a"),
                call("d")
            )
        );
        assert_eq!(store_order_form(&reversed).unwrap(), text);
        assert!(store_order_form(store).is_none());
    }

    #[test]
    fn marks_are_taken_out() {
        let text = format!(
            "<xaif:Entry annotation=\"{STORE_ORDER_MARK}\"/><xaif:Entry annotation=\"{TYPE_CHANGE_MARK}\"/><xaif:Entry annotation=\"x {TYPE_CHANGE_MARK}\"/>"
        );
        assert_eq!(
            unmarked(&text),
            "<xaif:Entry annotation=\"cp_entry\"/><xaif:Entry annotation=\"\"/><xaif:Entry annotation=\"x\"/>"
        );
    }
}
