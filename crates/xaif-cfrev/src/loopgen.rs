//! The one generator of the code of marked loops, whatever their kind
//! ([`crate::checkpoint::Scheme`]): binomial and online checkpointing,
//! fixed-point loops and independent iterations, made of the same pieces:
//!
//! - the *taping sweep* (placeholder 2). A loop of known trip count counts
//!   its trips, calls `oad_revolve_begin` and runs a dispatcher on
//!   `oad_revolve_next` (store, advance, tape its last iteration). A loop
//!   that runs itself (every other kind) calls its kind's begin, then runs
//!   its own header with its body in plain form, asking
//!   `oad_revolve_iteration` before each iteration whether to store the
//!   state first, and calls `oad_revolve_end` where it ends (`0` through
//!   its header, `1` by an exit);
//! - the *adjoint sweep* (placeholder 3): `oad_revolve_resume` and a
//!   dispatcher with the arms its kind needs: store and restore the state,
//!   advance without taping, tape one iteration (its update after it,
//!   unless an exit left it), reverse the iteration taped, and for a
//!   fixed-point loop measure its state's adjoint (`oad_revolve_measure`)
//!   and report its state's values (`oad_revolve_check`, before and after
//!   the first taped iteration: whether the loop reached its fixed point).
//!
//! The body appears in plain, taping and adjoint form, each copy with
//! vertex and statement ids of its own; a marked loop inside it is
//! generated again in its taping and adjoint copies and plain in its plain
//! ones (two-level checkpointing), which is why the marked nesting is
//! limited (`checkpoint::MAX_MARKED_DEPTH`). The walks of [`crate::reverse`]
//! hand marked loops to this module through [`MarkedLoops`], so that they
//! depend on nothing here.

use rustc_hash::FxHashMap;
use xaif_linearize::temps::value_ref;
use xaif_model::{
    build::{assignment, inlinable_call},
    ArgValue, Attrs, ExprBuilder, ExprVertexKind, Program, StmtId, VarRef, VertexId, VertexKind,
};

use crate::checkpoint::{CheckpointedLoop, Scheme};
use crate::explicit::{ExplicitLoop, Step};
use crate::region::{walk, Event, Region};
use crate::reverse::{
    adjoint_seq, at_most, connect, copy_vertex, embed, increment, int_const, set_int, tape_call,
    taping_seq_exits, CfgBuilder, Ctx, MarkedLoops, Pending, Temps,
};

/// The marked loops of one routine and the plain form of its basic blocks
/// (placeholder 1's statements: what advances and forward sweeps run).
pub(crate) struct Generator<'a> {
    pub(crate) loops: FxHashMap<VertexId, CheckpointedLoop>,
    pub(crate) plain: &'a FxHashMap<VertexId, Vec<StmtId>>,
}

impl MarkedLoops for Generator<'_> {
    fn is_marked(&self, v: VertexId) -> bool {
        self.loops.contains_key(&v)
    }

    fn vertices(&self) -> Vec<VertexId> {
        let mut v: Vec<VertexId> = self.loops.keys().copied().collect();
        v.sort_unstable();
        v
    }

    fn taping(
        &self,
        c: &Ctx<'_>,
        b: &mut CfgBuilder,
        out: &mut Program,
        temps: &mut dyn Temps,
        region: &Region,
        pending: &mut Pending,
    ) {
        let Region::Loop { vertex, .. } = region else {
            return;
        };
        if let Some(cl) = self.loops.get(vertex) {
            let mut g = Gen {
                c,
                b,
                out,
                temps,
                cl,
                plain: self.plain,
            };
            if cl.scheme.runs_itself() {
                g.forward_sweep(region, pending);
            } else {
                g.binomial_taping(region, pending);
            }
        }
    }

    fn adjoint(
        &self,
        c: &Ctx<'_>,
        b: &mut CfgBuilder,
        out: &mut Program,
        temps: &mut dyn Temps,
        region: &Region,
        pending: &mut Pending,
    ) {
        let Region::Loop { vertex, .. } = region else {
            return;
        };
        if let Some(cl) = self.loops.get(vertex) {
            let mut g = Gen {
                c,
                b,
                out,
                temps,
                cl,
                plain: self.plain,
            };
            g.adjoint_sweep(region, pending);
        }
    }
}

/// The action codes of `oad_revolve_next` (`xaif_revolve::runtime`).
mod code {
    pub const STORE: i64 = 1;
    pub const RESTORE: i64 = 2;
    pub const ADVANCE: i64 = 3;
    pub const TAPE: i64 = 4;
    pub const ADJOINT: i64 = 5;
    pub const MEASURE: i64 = 6;
    pub const CHECK: i64 = 7;
}

/// An arm of a dispatcher.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arm {
    Store,
    Restore,
    Advance,
    Tape,
    Adjoint,
    Measure,
    Check,
}

impl Arm {
    fn code(self) -> i64 {
        match self {
            Arm::Store => code::STORE,
            Arm::Restore => code::RESTORE,
            Arm::Advance => code::ADVANCE,
            Arm::Tape => code::TAPE,
            Arm::Adjoint => code::ADJOINT,
            Arm::Measure => code::MEASURE,
            Arm::Check => code::CHECK,
        }
    }
}

/// The variables a dispatcher's `oad_revolve_next` sets.
struct Dispatch {
    action: VarRef,
    count: VarRef,
    /// An independent loop's loop variable for the iteration taped next
    /// (popped before the dispatcher).
    counter: Option<VarRef>,
}

fn integer_constant(v: i64) -> ArgValue {
    ArgValue::Constant(
        Attrs::new()
            .with("vertex_id", "1")
            .with("type", "integer")
            .with("value", v.to_string()),
    )
}

/// A real constant as Fortran writes a double precision literal.
fn real_constant(v: f64) -> ArgValue {
    let text = format!("{v:e}").replace('e', "D");
    ArgValue::Constant(
        Attrs::new()
            .with("vertex_id", "1")
            .with("type", "real")
            .with("value", text),
    )
}

fn call(out: &mut Program, temps: &mut dyn Temps, name: &str, args: Vec<ArgValue>) -> StmtId {
    let id = temps.statement(name);
    out.stmts.alloc(inlinable_call(name, &id, args))
}

/// One marked loop's code being made.
struct Gen<'g, 'a> {
    c: &'g Ctx<'a>,
    b: &'g mut CfgBuilder,
    out: &'g mut Program,
    temps: &'g mut dyn Temps,
    cl: &'g CheckpointedLoop,
    plain: &'g FxHashMap<VertexId, Vec<StmtId>>,
}

impl Gen<'_, '_> {
    fn call(&mut self, name: &str, args: Vec<ArgValue>) -> StmtId {
        call(self.out, self.temps, name, args)
    }

    fn block(&mut self, stmts: Vec<StmtId>) -> String {
        let scope = self.c.scope_id.clone();
        self.b.block(self.out, &scope, stmts)
    }

    fn next_call(&mut self, d: &Dispatch) -> StmtId {
        self.call(
            "oad_revolve_next",
            vec![
                ArgValue::Variable(d.action.clone()),
                ArgValue::Variable(d.count.clone()),
            ],
        )
    }

    fn dispatch_vars(&mut self) -> Dispatch {
        Dispatch {
            action: self.temps.integer(self.out),
            count: self.temps.integer(self.out),
            counter: None,
        }
    }

    /// The binomial taping sweep (placeholder 2): the loop's
    /// initialization, its trip count, `oad_revolve_begin`, and a
    /// dispatcher that stores snapshots, advances and tapes the last step.
    fn binomial_taping(&mut self, region: &Region, pending: &mut Pending) {
        let Region::Loop { body, .. } = region else {
            return;
        };
        let Scheme::Binomial { header, snapshots } = &self.cl.scheme else {
            return;
        };
        let d = self.dispatch_vars();
        let steps = self.temps.integer(self.out);
        let begin = self.call(
            "oad_revolve_begin",
            vec![
                ArgValue::Variable(steps.clone()),
                integer_constant(i64::try_from(*snapshots).unwrap_or(i64::MAX)),
                integer_constant(self.cl.line),
            ],
        );
        let next = self.next_call(&d);
        let head = if let (Step::Constant(c), true) = (
            header.step.clone(),
            crate::explicit::closed_form_fits(header),
        ) {
            let trip = trip_count(header, c);
            let mut lhs = steps.clone();
            lhs.attrs.discard("vertex_id");
            let count =
                self.out
                    .stmts
                    .alloc(assignment(&self.temps.statement("ckp_steps"), lhs, trip));
            self.cl
                .init
                .into_iter()
                .chain([count, begin, next])
                .collect()
        } else {
            let restart = self.count_trips(region, header, &steps, pending);
            vec![restart, begin, next]
        };
        self.dispatch(
            body,
            head,
            &[Arm::Store, Arm::Advance, Arm::Tape],
            &d,
            pending,
        );
    }

    /// The trip count of a loop whose bounds the closed form of
    /// [`trip_count`] cannot take ([`crate::explicit::closed_form_fits`]),
    /// counted into `steps` by the loop's own header: the initialization,
    /// `start = i`, `steps = 0`, then the header (from `i = start`) around
    /// `steps = steps + 1`; `pending` ends holding its exit. Returns
    /// `i = start`, which sets the variable back to its first value. Every
    /// value computed is one the loop itself computes, or a count of its
    /// trips, so nothing overflows where the loop does not.
    fn count_trips(
        &mut self,
        region: &Region,
        header: &ExplicitLoop,
        steps: &VarRef,
        pending: &mut Pending,
    ) -> StmtId {
        let Region::Loop {
            vertex,
            body_edge,
            exit_edge,
            ..
        } = region
        else {
            unreachable!("a loop region")
        };
        let c = self.c;
        let start = self.temps.integer(self.out);
        let assign = |this: &mut Self, to: &VarRef, from: &VarRef| -> StmtId {
            let mut lhs = to.clone();
            lhs.attrs.discard("vertex_id");
            let mut e = ExprBuilder::new();
            e.reference(&value_ref(from));
            let id = this.temps.statement("ckp_steps");
            this.out.stmts.alloc(assignment(&id, lhs, e.finish()))
        };
        let save = assign(self, &start, &header.var);
        let zero = set_int(self.out, self.temps, steps, 0);
        let first: Vec<StmtId> = self.cl.init.into_iter().chain([save, zero]).collect();
        let first = self.block(first);
        connect(self.b, self.out, pending, &first);
        let VertexKind::ForLoop {
            condition, update, ..
        } = &c.original.vertices[*vertex].kind
        else {
            unreachable!("a binomial loop is a ForLoop")
        };
        let init = assign(self, &header.var, &start);
        let update = update.map(|u| {
            let mut stmt = self.out.stmts[u].clone();
            stmt.attrs
                .set("statement_id", self.temps.statement("ckp_steps"));
            self.out.stmts.alloc(stmt)
        });
        let count = self.b.vertex(
            self.out,
            Attrs::new().with("reversal", "anonymous"),
            VertexKind::ForLoop {
                init: Some(init),
                condition: condition.clone(),
                update,
            },
        );
        self.b.edge(self.out, &first, &count, None);
        let inc = increment(self.out, self.temps, steps);
        let inc = self.block(vec![inc]);
        let body_value = c.original.edges[*body_edge].condition_value();
        self.b.edge(self.out, &count, &inc, body_value);
        let end = self.b.vertex(self.out, Attrs::new(), VertexKind::EndLoop);
        self.b.edge(self.out, &inc, &end, None);
        self.b.edge(self.out, &end, &count, None);
        let exit_value = c.original.edges[*exit_edge].condition_value();
        pending.push((count, exit_value));
        assign(self, &header.var, &start)
    }

    /// The taping sweep of a loop that runs itself: its kind's begin, then
    /// the loop with its own header, its body plain, each iteration asking
    /// `oad_revolve_iteration` whether to store the state first; then
    /// `oad_revolve_end` (`0` through the header, `1` by an exit). An
    /// independent loop pushes its variable's last value, from which its
    /// adjoint counts back.
    fn forward_sweep(&mut self, region: &Region, pending: &mut Pending) {
        let Region::Loop {
            vertex,
            body_edge,
            body,
            end,
            exit_edge,
        } = region
        else {
            return;
        };
        let line = integer_constant(self.cl.line);
        let begin = match &self.cl.scheme {
            Scheme::Online { snapshots } => self.call(
                "oad_revolve_begin_online",
                vec![
                    integer_constant(i64::try_from(*snapshots).unwrap_or(i64::MAX)),
                    line,
                ],
            ),
            Scheme::FixedPoint {
                tolerance,
                max_iterations,
                ..
            } => self.call(
                "oad_revolve_begin_fixed_point",
                vec![
                    real_constant(*tolerance),
                    integer_constant(i64::try_from(*max_iterations).unwrap_or(i64::MAX)),
                    line,
                ],
            ),
            _ => self.call("oad_revolve_begin_independent", vec![line]),
        };
        let begin = self.block(vec![begin]);
        connect(self.b, self.out, pending, &begin);
        // The loop, with its own header.
        let c = self.c;
        let kind = c.original.vertices[*vertex].kind.clone();
        let loop_id = copy_vertex(c, self.b, self.out, *vertex, kind);
        self.b.edge(self.out, &begin, &loop_id, None);
        let value = c.original.edges[*body_edge].condition_value();
        let mut p: Pending = vec![(loop_id.clone(), value)];
        // Store first, or not.
        let action = self.temps.integer(self.out);
        let ask = self.call(
            "oad_revolve_iteration",
            vec![ArgValue::Variable(action.clone())],
        );
        let ask = self.block(vec![ask]);
        connect(self.b, self.out, &mut p, &ask);
        let mut sel = ExprBuilder::new();
        sel.reference(&action);
        let branch = self.b.vertex(
            self.out,
            Attrs::new(),
            VertexKind::Branch(Some(sel.finish())),
        );
        self.b.edge(self.out, &ask, &branch, None);
        let mut stored: Pending = vec![(branch.clone(), Some(code::STORE))];
        self.snapshot_arm(true, &mut stored);
        let join = self.b.vertex(self.out, Attrs::new(), VertexKind::EndBranch);
        connect(self.b, self.out, &mut stored, &join);
        self.b.edge(self.out, &branch, &join, None);
        let mut p: Pending = vec![(join, None)];
        let mut exits = Pending::new();
        plain_seq(c, self.plain, self.b, self.out, body, &mut p, &mut exits);
        let end_id = copy_vertex(c, self.b, self.out, *end, VertexKind::EndLoop);
        connect(self.b, self.out, &mut p, &end_id);
        self.b.edge(self.out, &end_id, &loop_id, None);
        // Its ends.
        let value = c.original.edges[*exit_edge].condition_value();
        let normal = self.call("oad_revolve_end", vec![integer_constant(0)]);
        let normal = self.block(vec![normal]);
        self.b.edge(self.out, &loop_id, &normal, value);
        pending.push((normal, None));
        if !exits.is_empty() {
            let by_exit = self.call("oad_revolve_end", vec![integer_constant(1)]);
            let by_exit = self.block(vec![by_exit]);
            connect(self.b, self.out, &mut exits, &by_exit);
            pending.push((by_exit, None));
        }
        if let Scheme::Independent { header } = &self.cl.scheme {
            let push = tape_call(
                self.out,
                self.temps,
                "push_i_s0",
                ArgValue::Variable(value_ref(&header.var)),
            );
            let push = self.block(vec![push]);
            connect(self.b, self.out, pending, &push);
            pending.push((push, None));
        }
    }

    /// The adjoint sweep (placeholder 3): `oad_revolve_resume` and a
    /// dispatcher with the arms of the loop's kind.
    fn adjoint_sweep(&mut self, region: &Region, pending: &mut Pending) {
        let Region::Loop { body, .. } = region else {
            return;
        };
        let mut d = self.dispatch_vars();
        let resume = self.call("oad_revolve_resume", vec![integer_constant(self.cl.line)]);
        let mut head = vec![resume];
        if let Scheme::Independent { .. } = &self.cl.scheme {
            // The loop variable's last value, pushed by the taping sweep.
            let counter = self.temps.integer(self.out);
            head.push(tape_call(
                self.out,
                self.temps,
                "pop_i_s0",
                ArgValue::Variable(counter.clone()),
            ));
            d.counter = Some(counter);
        }
        let next = self.next_call(&d);
        head.push(next);
        let arms: &[Arm] = match &self.cl.scheme {
            Scheme::Binomial { .. } | Scheme::Online { .. } => &[
                Arm::Store,
                Arm::Restore,
                Arm::Advance,
                Arm::Tape,
                Arm::Adjoint,
            ],
            Scheme::FixedPoint { .. } => &[
                Arm::Restore,
                Arm::Tape,
                Arm::Adjoint,
                Arm::Measure,
                Arm::Check,
            ],
            Scheme::Independent { .. } => &[Arm::Restore, Arm::Tape, Arm::Adjoint],
        };
        self.dispatch(body, head, arms, &d, pending);
    }

    /// `head` (a block), then `while (action /= 0)`: a branch on the action
    /// to `arms`, and the next action. `pending` ends holding the loop's
    /// exit.
    fn dispatch(
        &mut self,
        body: &[Region],
        head: Vec<StmtId>,
        arms: &[Arm],
        d: &Dispatch,
        pending: &mut Pending,
    ) {
        let c = self.c;
        let head = self.block(head);
        connect(self.b, self.out, pending, &head);
        let mut cond = ExprBuilder::new();
        let a = cond.reference(&d.action);
        let zero = int_const(&mut cond, 0);
        let ne = cond.vertex(
            Attrs::new().with("name", "not_equal"),
            ExprVertexKind::BooleanOperation,
        );
        cond.edge(a, ne, 1);
        cond.edge(zero, ne, 2);
        let w = self.b.vertex(
            self.out,
            Attrs::new(),
            VertexKind::PreLoop(Some(cond.finish())),
        );
        self.b.edge(self.out, &head, &w, None);
        let mut sel = ExprBuilder::new();
        sel.reference(&d.action);
        let branch = self.b.vertex(
            self.out,
            Attrs::new(),
            VertexKind::Branch(Some(sel.finish())),
        );
        self.b.edge(self.out, &w, &branch, Some(1));
        let mut ends: Pending = Vec::new();
        for &arm in arms {
            let mut p: Pending = vec![(branch.clone(), Some(arm.code()))];
            match arm {
                Arm::Store | Arm::Restore => self.snapshot_arm(arm == Arm::Store, &mut p),
                Arm::Advance => self.advance(body, d, &mut p),
                Arm::Tape => {
                    if let (Some(counter), Scheme::Independent { header }) =
                        (&d.counter, &self.cl.scheme)
                    {
                        self.count_back(header, counter, &mut p);
                    }
                    let copy = c.fresh_copy();
                    let mut exits = Pending::new();
                    taping_seq_exits(
                        &copy, self.b, self.out, self.temps, body, &mut p, &mut exits,
                    );
                    update_block(&copy, self.b, self.out, self.cl, &mut p);
                    p.append(&mut exits);
                }
                Arm::Adjoint => adjoint_seq(c, self.b, self.out, self.temps, body, &mut p),
                Arm::Measure => self.state_calls(false, &mut p),
                Arm::Check => self.state_calls(true, &mut p),
            }
            ends.extend(p);
        }
        let end = self.b.vertex(self.out, Attrs::new(), VertexKind::EndBranch);
        connect(self.b, self.out, &mut ends, &end);
        let next = self.next_call(d);
        let next_block = self.block(vec![next]);
        self.b.edge(self.out, &end, &next_block, None);
        let end_loop = self.b.vertex(self.out, Attrs::new(), VertexKind::EndLoop);
        self.b.edge(self.out, &next_block, &end_loop, None);
        self.b.edge(self.out, &end_loop, &w, None);
        pending.push((w, None));
    }

    /// The store (or restore, in reverse order) calls of the loop's state,
    /// those of optional formals under `if (present(f))`.
    fn snapshot_arm(&mut self, store: bool, p: &mut Pending) {
        let name = if store {
            crate::runtime::STORE_CALL
        } else {
            crate::runtime::RESTORE_CALL
        };
        let cl = self.cl;
        let mut refs: Vec<&(VarRef, bool)> = cl.state.iter().collect();
        if !store {
            refs.reverse();
        }
        let mut plain: Vec<StmtId> = Vec::new();
        for (r, optional) in refs {
            let stmt = self.call(name, vec![ArgValue::Variable(value_ref(r))]);
            if !optional {
                plain.push(stmt);
                continue;
            }
            self.flush(&mut plain, p);
            let mut cond = ExprBuilder::new();
            let arg = cond.reference(&value_ref(r));
            cond.intrinsic("present", &[arg]);
            let branch = self.b.vertex(
                self.out,
                Attrs::new(),
                VertexKind::Branch(Some(cond.finish())),
            );
            connect(self.b, self.out, p, &branch);
            let blk = self.block(vec![stmt]);
            self.b.edge(self.out, &branch, &blk, Some(1));
            let end = self.b.vertex(self.out, Attrs::new(), VertexKind::EndBranch);
            self.b.edge(self.out, &blk, &end, None);
            self.b.edge(self.out, &branch, &end, None);
            p.push((end, None));
        }
        self.flush(&mut plain, p);
    }

    /// A block of the statements `plain`, if any, after `p`.
    fn flush(&mut self, plain: &mut Vec<StmtId>, p: &mut Pending) {
        if !plain.is_empty() {
            let blk = self.block(std::mem::take(plain));
            connect(self.b, self.out, p, &blk);
            p.push((blk, None));
        }
    }

    /// A fixed-point loop's `oad_revolve_measure` of each loop-carried
    /// active variable (its adjoint), or `oad_revolve_check` (`check`) of
    /// each the iteration's statements read (its values: whether an
    /// iteration left them unchanged).
    fn state_calls(&mut self, check: bool, p: &mut Pending) {
        let Scheme::FixedPoint {
            measured, checked, ..
        } = &self.cl.scheme
        else {
            return;
        };
        let (name, vars) = if check {
            ("oad_revolve_check", checked)
        } else {
            ("oad_revolve_measure", measured)
        };
        let mut calls: Vec<StmtId> = vars
            .iter()
            .map(|r| self.call(name, vec![ArgValue::Variable(value_ref(r))]))
            .collect();
        self.flush(&mut calls, p);
    }

    /// An independent loop's variable for the iteration taped next: one
    /// step back from the last (`counter = counter − c; i = counter`), as
    /// Fortran stepped it forward (no product that could overflow).
    fn count_back(&mut self, header: &ExplicitLoop, counter: &VarRef, p: &mut Pending) {
        let back = crate::reverse::step_back_of(
            self.out,
            self.temps,
            counter,
            &header.step,
            "ckp_counter",
        );
        let mut e = ExprBuilder::new();
        e.reference(counter);
        let mut var = header.var.clone();
        var.attrs.discard("vertex_id");
        let set = self.out.stmts.alloc(assignment(
            &self.temps.statement("ckp_counter"),
            var,
            e.finish(),
        ));
        let blk = self.block(vec![back, set]);
        connect(self.b, self.out, p, &blk);
        p.push((blk, None));
    }

    /// `do k = 1, count`: the plain body and the loop's update.
    fn advance(&mut self, body: &[Region], d: &Dispatch, p: &mut Pending) {
        let c = self.c;
        let k = self.temps.integer(self.out);
        let init = set_int(self.out, self.temps, &k, 1);
        let update = increment(self.out, self.temps, &k);
        let for_loop = self.b.vertex(
            self.out,
            Attrs::new().with("reversal", "anonymous"),
            VertexKind::ForLoop {
                init: Some(init),
                condition: Some(at_most(&k, &d.count)),
                update: Some(update),
            },
        );
        connect(self.b, self.out, p, &for_loop);
        let mut inner: Pending = vec![(for_loop.clone(), Some(1))];
        let copy = c.fresh_copy();
        let mut exits = Pending::new();
        plain_seq(
            &copy, self.plain, self.b, self.out, body, &mut inner, &mut exits,
        );
        update_block(&copy, self.b, self.out, self.cl, &mut inner);
        // (An exit cannot happen in an iteration advanced over: the loop
        // went on after it.)
        inner.append(&mut exits);
        let end = self.b.vertex(self.out, Attrs::new(), VertexKind::EndLoop);
        connect(self.b, self.out, &mut inner, &end);
        self.b.edge(self.out, &end, &for_loop, None);
        p.push((for_loop, None));
    }
}

/// A block with the loop's update (in copy `c`'s own statement), after the
/// dangling edges `p`, which end holding its exit; nothing for a loop
/// without one.
fn update_block(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    cl: &CheckpointedLoop,
    p: &mut Pending,
) {
    let Some(update) = cl.update else {
        return;
    };
    let VertexKind::BasicBlock(stmts) = c.own_statements(out, VertexKind::BasicBlock(vec![update]))
    else {
        unreachable!("a block stays a block")
    };
    let upd = b.block(out, &c.scope_id, stmts);
    connect(b, out, p, &upd);
    p.push((upd, None));
}

/// `(e1 − i + s) / s` after the initialization `i = e0`: the trip count of
/// `DO i = e0, e1, s` as the interpreter and Fortran fix it on entry
/// (negative for none; the run-time takes it as 0), for constant bounds
/// whose arithmetic stays within the 64-bit integers
/// ([`crate::explicit::closed_form_fits`]; other loops count their trips,
/// `Gen::count_trips`).
fn trip_count(h: &ExplicitLoop, c: i64) -> xaif_model::Expr {
    let mut b = ExprBuilder::new();
    let e1 = embed(&mut b, &h.bound);
    let i = b.reference(&value_ref(&h.var));
    let span = b.intrinsic("sub_scal_scal", &[e1, i]);
    let s = int_const(&mut b, c);
    let widened = b.intrinsic("add_scal_scal", &[span, s]);
    let s = int_const(&mut b, c);
    b.intrinsic("div_scal_scal", &[widened, s]);
    b.finish()
}

/// A copy of `regions` as plain code (placeholder 1's statements: the
/// blocks with their argument conversions), vertex ids under `c`'s
/// prefix; the dangling edges of arms that leave the loop by an exit go to
/// `exits`.
fn plain_seq(
    c: &Ctx<'_>,
    plain: &FxHashMap<VertexId, Vec<StmtId>>,
    b: &mut CfgBuilder,
    out: &mut Program,
    regions: &[Region],
    pending: &mut Pending,
    exits: &mut Pending,
) {
    let mut pendings: Vec<Pending> = vec![std::mem::take(pending)];
    // Open branches (the copy and its arms' ends) and loops (the copy).
    let mut branches: Vec<(String, Pending)> = Vec::new();
    // Open loops: the copy, and the dangling edges of the exits that leave
    // it (a loop nested in the body is left by its own exits, which go on
    // after it, not out of the loop being copied).
    let mut loops: Vec<(String, Pending)> = Vec::new();
    walk(regions, false, |event| {
        let top = pendings.len() - 1;
        match event {
            Event::Block(v) | Event::Pass(v) => {
                let kind = match plain.get(&v) {
                    Some(stmts) => VertexKind::BasicBlock(stmts.clone()),
                    None => c.original.vertices[v].kind.clone(),
                };
                let id = copy_vertex(c, b, out, v, kind);
                connect(b, out, &mut pendings[top], &id);
                pendings[top].push((id, None));
            }
            Event::Exit => match loops.last_mut() {
                Some((_, nested)) => nested.append(&mut pendings[top]),
                None => exits.append(&mut pendings[top]),
            },
            Event::BranchStart(Region::Branch { vertex, .. }) => {
                let kind = c.original.vertices[*vertex].kind.clone();
                let id = copy_vertex(c, b, out, *vertex, kind);
                connect(b, out, &mut pendings[top], &id);
                branches.push((id, Vec::new()));
            }
            Event::ArmStart { edge, .. } => {
                if let Some((id, _)) = branches.last() {
                    let value = c.original.edges[edge].condition_value();
                    pendings.push(vec![(id.clone(), value)]);
                }
            }
            Event::ArmEnd { .. } => {
                let arm = pendings.pop().unwrap_or_default();
                if let Some((_, ends)) = branches.last_mut() {
                    ends.extend(arm);
                }
            }
            Event::BranchEnd(Region::Branch { end, .. }) => {
                let (_, mut ends) = branches.pop().unwrap_or_default();
                match end {
                    Some(end) => {
                        let id = copy_vertex(c, b, out, *end, VertexKind::EndBranch);
                        connect(b, out, &mut ends, &id);
                        pendings[top].push((id, None));
                    }
                    None => pendings[top].append(&mut ends),
                }
            }
            Event::LoopStart(Region::Loop {
                vertex, body_edge, ..
            }) => {
                let kind = c.original.vertices[*vertex].kind.clone();
                let id = copy_vertex(c, b, out, *vertex, kind);
                connect(b, out, &mut pendings[top], &id);
                let value = c.original.edges[*body_edge].condition_value();
                pendings.push(vec![(id.clone(), value)]);
                loops.push((id, Pending::new()));
            }
            Event::LoopEnd(Region::Loop { end, exit_edge, .. }) => {
                let mut body = pendings.pop().unwrap_or_default();
                let top = pendings.len() - 1;
                let (loop_id, mut left) = loops.pop().unwrap_or_default();
                let id = copy_vertex(c, b, out, *end, VertexKind::EndLoop);
                connect(b, out, &mut body, &id);
                b.edge(out, &id, &loop_id, None);
                let value = c.original.edges[*exit_edge].condition_value();
                pendings[top].push((loop_id, value));
                pendings[top].append(&mut left);
            }
            Event::BranchStart(_)
            | Event::BranchEnd(_)
            | Event::LoopStart(_)
            | Event::LoopEnd(_) => {}
        }
    });
    *pending = pendings.pop().unwrap_or_default();
}
