//! The thread that eliminates ahead of the transformation
//! (`xaif_linearize::ahead`): it builds the graphs the transformation
//! builds, so the transformation finds their results in the memo, and the
//! output is the same bytes with it and without it.

use xaif_elim::{Config, Lcg, Memo, Prefetched, PropagationMode};
use xaif_linearize::ahead::{Ahead, Builder};
use xaif_linearize::context::Ctx;
use xaif_linearize::flatten::flatten;
use xaif_linearize::{builtin, TangentOptions};
use xaif_testkit::model::program;
use xaif_testkit::scale::Shape;

const SHAPE: Shape = Shape {
    routines: 4,
    statements: 800,
    seed: 11,
};

fn input() -> xaif_model::Program {
    let text = program(&SHAPE);
    xaif_model::read_program_str(&text, Some("ahead.xaif"))
        .unwrap()
        .0
}

/// Runs `f` with the second thread's builder for `p` (tangent mode, the
/// built-in catalogue, no direct actions), eliminating into `memo`.
fn with_builder<T>(p: &xaif_model::Program, memo: &Memo, f: impl FnOnce(&Builder<'_>) -> T) -> T {
    let ctx = Ctx::new(p, &[]);
    let no_direct = |_: &str| false;
    let builder = Builder {
        ctx: &ctx,
        catalogue: builtin(),
        flatten: Default::default(),
        is_direct: &no_direct,
        memo,
        mode: PropagationMode::Tangent,
    };
    f(&builder)
}

#[test]
fn the_second_thread_builds_the_graphs_the_transformation_eliminates() {
    let p = input();
    let ahead = Ahead::new(&p, p.routines.ids()).expect("large enough for a second thread");
    let memo = Memo::new(&Config::default());
    // The transformation has not started: everything is ahead.
    with_builder(&p, &memo, |builder| ahead.run(builder));
    assert!(memo.len() > 100, "{} results kept", memo.len());
    // The graphs the transformation eliminates, in text form.
    let options = TangentOptions {
        dot: true,
        ..Default::default()
    };
    let result = xaif_linearize::tangent(&p, builtin(), None, &options).unwrap();
    let graphs: Vec<Lcg> = result
        .dots
        .iter()
        .filter_map(|d| Lcg::from_text(&d.lcg))
        .filter(|g| !g.edges().is_empty())
        .collect();
    assert!(graphs.len() > 100, "{} graphs", graphs.len());
    let found = graphs
        .iter()
        .filter(|g| {
            memo.prefetch_against(g, None, PropagationMode::Tangent)
                .unwrap()
                == Prefetched::Present
        })
        .count();
    assert_eq!(
        found,
        graphs.len(),
        "graphs the second thread did not build"
    );
}

#[test]
fn the_pieces_handed_over_are_what_flattening_gives_and_only_for_their_block() {
    let p = input();
    let ahead = Ahead::new(&p, p.routines.ids()).expect("large enough for a second thread");
    let again = Ahead::new(&p, p.routines.ids()).unwrap();
    let memo = Memo::new(&Config::default());
    let ctx = Ctx::new(&p, &[]);
    with_builder(&p, &memo, |builder| {
        ahead.run(builder);
        again.run(builder);
    });
    let flat = |stmts: &[xaif_model::StmtId]| {
        let pieces = flatten(&ctx, builtin(), stmts, Default::default(), &|_| false).unwrap();
        format!("{pieces:?}")
    };
    let blocks: Vec<Vec<&[xaif_model::StmtId]>> = p
        .routines
        .iter()
        .map(|(_, r)| match &r.body {
            xaif_model::RoutineBody::Graph(cfg) => p.cfgs[*cfg]
                .vertex_ids()
                .filter_map(|v| match &p.vertices[v].kind {
                    xaif_model::VertexKind::BasicBlock(stmts) => Some(stmts.as_slice()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    // Entering the blocks in order hands over what flattening gives.
    let mut handed = 0;
    for (k, routine) in blocks.iter().enumerate() {
        ahead.enter_routine(k);
        for stmts in routine {
            if let Some(pieces) = ahead.enter_block(stmts) {
                assert_eq!(format!("{pieces:?}"), flat(stmts));
                handed += 1;
            }
        }
    }
    assert!(handed > 10, "{handed} blocks handed over");
    // Each block once; and a block is not handed to another's statements.
    again.enter_routine(0);
    let other = blocks.iter().flatten().nth(1).unwrap();
    assert!(
        again.enter_block(other).is_none(),
        "block 0's pieces for block 1"
    );
}

#[test]
fn the_output_is_the_same_with_the_second_thread_and_without() {
    let p = input();
    for ahead in [false, true] {
        let options = TangentOptions {
            ahead,
            ..Default::default()
        };
        let once = xaif_linearize::tangent(&p, builtin(), None, &options).unwrap();
        let plain =
            xaif_linearize::tangent(&p, builtin(), None, &TangentOptions::default()).unwrap();
        assert!(
            xaif_model::write_program(&once.program) == xaif_model::write_program(&plain.program),
            "ahead: {ahead}"
        );
    }
}
