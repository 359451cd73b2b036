//! `-r`: transformed routines get the program's prefix, so hand-written
//! drivers can call the differentiated routine by a different name than the
//! original (`head` becomes `OpenAD_head`).

use xaif_model::{Program, ScopeItem, StmtKind, SymbolIndex};

/// Renames every top-level routine with code (its scope's parent is the
/// global scope) to `<prefix><symbol_id>`: a new scope-1 symbol with
/// `temp="1"`, the routine's `symbol_id`, and every call.
pub fn rename_routines(out: &mut Program, prefix: &str) {
    let symbols = SymbolIndex::new(out);
    let Some(global) = symbols.scope("1") else {
        return;
    };
    let parent_of = |scope_id: &str| -> Option<String> {
        out.scope_hierarchy.items.iter().find_map(|i| match i {
            ScopeItem::Edge(a) if a.get("source") == Some(scope_id) => {
                a.get("target").map(str::to_string)
            }
            _ => None,
        })
    };
    let mut renames: Vec<(String, String)> = Vec::new();
    for (_, r) in out.routines.iter() {
        if !r.has_body(out) {
            continue;
        }
        let Some(scope_id) = r.attrs.get("controlflowgraph_scope_id") else {
            continue;
        };
        if parent_of(scope_id).as_deref() != Some("1") {
            continue;
        }
        let old = r.symbol_name().to_string();
        if !old.starts_with(prefix) {
            renames.push((old.clone(), format!("{prefix}{old}")));
        }
    }
    for (old, new) in &renames {
        if let Some(sym) = symbols.symbol("1", old) {
            let mut attrs = out.symbols[sym].attrs.clone();
            attrs.set("symbol_id", new);
            attrs.set("temp", "1");
            out.add_symbol(global, attrs, Vec::new());
        }
        let ids: Vec<_> = out.routines.ids().collect();
        for rid in ids {
            if out.routines[rid].symbol_name() == old {
                out.routines[rid].attrs.set("symbol_id", new);
            }
        }
        let sids: Vec<_> = out.stmts.ids().collect();
        for s in sids {
            if matches!(out.stmts[s].kind, StmtKind::SubroutineCall(_))
                && out.stmts[s].attrs.get("symbol_id") == Some(old.as_str())
                && out.stmts[s].attrs.get("scope_id") == Some("1")
            {
                out.stmts[s].attrs.set("symbol_id", new);
            }
        }
    }
}

/// The passes over the whole output every transformation ends with (when
/// it did not finish routine by routine): call argument counts, every
/// intent `inout` with `-I` (`all_inout`), and with `-r` (`rename`) the
/// routines renamed with `source`'s prefix.
pub fn finish_program(out: &mut Program, source: &Program, all_inout: bool, rename: bool) {
    complete_call_counts(out);
    if all_inout {
        all_intents_inout(out);
    }
    if rename {
        rename_routines(out, source.attrs.get("prefix").unwrap_or("OpenAD_"));
    }
}

/// Gives every `SubroutineCall` without a `formalArgCount` one: the output
/// schema requires it although some front ends omit it. The count is the
/// callee's formal argument count when the program declares the callee's
/// arguments, and otherwise the highest argument position of the call.
pub fn complete_call_counts(out: &mut Program) {
    let routines = xaif_model::RoutineIndex::new(out);
    let ids: Vec<_> = out.stmts.ids().collect();
    complete_call_counts_of(out, &routines, &ids);
}

/// [`complete_call_counts`] for the statements `ids` only (one routine's,
/// when a transformation finishes one routine at a time); `routines`
/// indexes `out`'s routines.
pub fn complete_call_counts_of(
    out: &mut Program,
    routines: &xaif_model::RoutineIndex,
    ids: &[xaif_model::StmtId],
) {
    for &s in ids {
        let StmtKind::SubroutineCall(args) = &out.stmts[s].kind else {
            continue;
        };
        if out.stmts[s].attrs.get("formalArgCount").is_some() {
            continue;
        }
        let highest = args
            .iter()
            .enumerate()
            .map(|(i, a)| a.attrs.int("position").unwrap_or(i as i64 + 1))
            .max()
            .unwrap_or(0);
        let formals = out.stmts[s]
            .attrs
            .get("symbol_id")
            .and_then(|callee| routines.get(callee))
            .and_then(|r| out.routines[r].arguments.as_ref())
            .map_or(0, |list| list.args.len() as i64);
        let count = formals.max(highest).max(0);
        out.stmts[s].attrs.set("formalArgCount", count.to_string());
    }
}

/// `-I`: every formal argument of every routine gets intent `inout`, so
/// that hand-written drivers and checkpointing code may pass and change
/// any argument.
pub fn all_intents_inout(out: &mut Program) {
    for r in out.routines.values_mut() {
        intents_inout(r);
    }
}

/// [`all_intents_inout`] for one routine.
pub fn intents_inout(r: &mut xaif_model::Routine) {
    if let Some(list) = &mut r.arguments {
        for a in &mut list.args {
            a.set("intent", "inout");
        }
    }
}

/// `-w`: a call to routine `callee` (without a body) that has a
/// hand-written wrapper calls `<prefix><callee>` instead; the wrapper's
/// symbol is added to the global scope once (`temp="1"`). Returns the new
/// name.
pub fn wrapper_symbol(out: &mut Program, callee: &str, prefix: &str) -> String {
    let new = format!("{prefix}{callee}");
    let symbols = SymbolIndex::new(out);
    if symbols.symbol("1", &new).is_none() {
        if let (Some(global), Some(old)) = (symbols.scope("1"), symbols.symbol("1", callee)) {
            let mut attrs = out.symbols[old].attrs.clone();
            attrs.set("symbol_id", &new);
            attrs.set("temp", "1");
            out.add_symbol(global, attrs, Vec::new());
        }
    }
    new
}
