//! Recipes: the random choices a program is built from, as proptest
//! strategies.
//!
//! A recipe is a tree of small records of numbers. The builder
//! ([`super::build`]) reads each number as a choice among whatever is valid
//! at that point, so every recipe gives a valid program, and the number 0
//! always picks the simplest option (an assignment, a constant, no jump).
//! Shrinking a recipe (fewer routines, fewer statements, smaller numbers,
//! compound statements replaced by their parts) is therefore shrinking the
//! program, which is what makes proptest's shrinking useful here.

use proptest::collection::vec;
use proptest::prelude::*;

/// Choices of one statement: its kind, the numbers its parts are chosen
/// with, and the bodies of a compound statement.
#[derive(Clone, Debug, PartialEq)]
pub struct StmtRecipe {
    /// Statement kind (read modulo the kinds the builder knows).
    pub kind: u32,
    /// Further choices, read in order; missing ones count as 0.
    pub params: Vec<u32>,
    /// Bodies (then/else, loop body, cases).
    pub bodies: Vec<Vec<StmtRecipe>>,
}

/// Choices of one variable: role, shape and extents.
#[derive(Clone, Debug, PartialEq)]
pub struct VarRecipe(pub [u32; 3]);

/// Choices of one routine.
#[derive(Clone, Debug, PartialEq)]
pub struct RoutineRecipe {
    /// Formals (not for `head`, whose formals are `x` and `y`).
    pub formals: Vec<VarRecipe>,
    /// Locals declared up front (the builder adds more when it needs them).
    pub locals: Vec<VarRecipe>,
    /// Statements of the body.
    pub body: Vec<StmtRecipe>,
    /// Routine-wide choices.
    pub knobs: Vec<u32>,
    /// How the front end wrote the routine (0: with its side-effect
    /// lists).
    pub style: u32,
}

/// Choices of a whole program.
#[derive(Clone, Debug, PartialEq)]
pub struct Recipe {
    /// Program-wide choices (`n`, `m`, …).
    pub knobs: Vec<u32>,
    /// Globals.
    pub globals: Vec<VarRecipe>,
    /// Routines; the first is `head`.
    pub routines: Vec<RoutineRecipe>,
    /// Whether the builder also makes the loops the loop marks are for
    /// (counted loops left by an exit, fixed-point iterations): the
    /// programs of `cargo xtask stress --checkpoint-loops`.
    pub loop_kinds: bool,
}

fn var_recipe() -> impl Strategy<Value = VarRecipe> {
    (any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(a, b, c)| VarRecipe([a, b, c]))
}

fn params(n: usize) -> impl Strategy<Value = Vec<u32>> {
    vec(any::<u32>(), 0..n)
}

/// Statements, nested up to `depth` compound levels.
pub fn stmt_recipe(depth: u32, per_body: usize) -> BoxedStrategy<StmtRecipe> {
    let leaf = (any::<u32>(), params(40)).prop_map(|(kind, params)| StmtRecipe {
        kind,
        params,
        bodies: Vec::new(),
    });
    leaf.prop_recursive(depth, 64, per_body as u32, move |inner| {
        (
            any::<u32>(),
            params(40),
            vec(vec(inner, 0..per_body.max(1)), 0..4),
        )
            .prop_map(|(kind, params, bodies)| StmtRecipe {
                kind,
                params,
                bodies,
            })
    })
    .boxed()
}

/// Routines of about `size` statements each.
fn routine_recipe(size: usize) -> impl Strategy<Value = RoutineRecipe> {
    let per_body = 2 + size / 3;
    (
        vec(var_recipe(), 0..5),
        vec(var_recipe(), 0..6),
        vec(stmt_recipe(3, per_body), 0..(2 + size)),
        params(8),
        any::<u32>(),
    )
        .prop_map(|(formals, locals, body, knobs, style)| RoutineRecipe {
            formals,
            locals,
            body,
            knobs,
            style,
        })
}

/// Programs: `size` scales the number of routines and statements (about 1
/// to 20; 6 gives programs of a few hundred lines of XAIF).
pub fn recipe(size: usize) -> BoxedStrategy<Recipe> {
    let size = size.max(1);
    let routines = 1 + (size / 2).clamp(1, 6);
    (
        params(8),
        vec(var_recipe(), 0..(2 + size / 2).min(8)),
        vec(routine_recipe(size), 1..=routines),
    )
        .prop_map(|(knobs, globals, routines)| Recipe {
            knobs,
            globals,
            routines,
            loop_kinds: false,
        })
        .boxed()
}

/// [`recipe`] with [`Recipe::loop_kinds`] set (kept while shrinking).
pub fn recipe_with_loop_kinds(size: usize) -> BoxedStrategy<Recipe> {
    recipe(size)
        .prop_map(|r| Recipe {
            loop_kinds: true,
            ..r
        })
        .boxed()
}
